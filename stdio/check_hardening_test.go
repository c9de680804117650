package stdio

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// padTo returns a JSON-RPC message of exactly n bytes: head, a padding
// string, tail.
func padTo(t *testing.T, head, tail string, n int) string {
	t.Helper()
	if n < len(head)+len(tail) {
		t.Fatalf("padTo: %d bytes is too short", n)
	}
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// TestLineLimitIgnoresPreviousLineTail: the go-sdk's frame limit counts
// every byte its decoder reads after the previous value, so the blanks and
// '\r' after a value would count against the next line. The transport
// passes the value alone and a newline, so a next line of up to the 16 MiB
// it admits still fits, even when the first value ends exactly at the
// decoder's first 512-byte read.
func TestLineLimitIgnoresPreviousLineTail(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 16 MiB lines")
	}
	// initialize, its value exactly 512 bytes.
	init := padTo(t,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`,
		`","version":"1"}}}`, 512)
	tests := []struct {
		name string
		tail string // after the initialize value, before its newline
		size int    // of the ping line after it
	}{
		// A CRLF line, then an LF line of the longest length passed.
		{"crlf_then_lf_at_limit", "\r", maxLine},
		// "\r" and blanks, then a line 32 bytes under the limit.
		{"cr_and_blanks", "\r" + strings.Repeat(" ", 64), maxLine - 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ping := padTo(t, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"`, `"}}`, tt.size)
			in := init + tt.tail + "\n" + ping + "\n" + `{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n"
			out, _, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
			if err != nil {
				t.Errorf("Run: %v, want nil at end of input (a line the check passed ended the session)", err)
			}
			want := []answer{{"1", 0}, {"5", 0}, {"6", 0}}
			if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRefusalOfIDInFlightAnswersNull: a refused request whose id is that
// of a request still in flight is answered with a null id; with its own id
// the client would take the error for the answer to its pending call.
func TestRefusalOfIDInFlightAnswersNull(t *testing.T) {
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"1.0","id":2,"method":"ping"}`, // refused while 2 is in flight
	}, "\n") + "\n"
	out, _, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
	if err != nil {
		t.Errorf("Run: %v", err)
	}
	got := answers(t, out.String())
	want := []answer{{"1", 0}, {"null", codeInvalidRequest}, {"2", 0}}
	if diff := cmp.Diff(want, got, anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
}

// duplicateMembers are lines with a member repeated, its first occurrence
// of a type the go-sdk cannot decode. The SDK decodes
// (jsonrpc2.DecodeMessage, into wireDecode and WireError) every occurrence
// in turn and fails on the first, which would end its session.
var duplicateMembers = []string{
	`{"jsonrpc":5,"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"error":5,"error":null}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x"},"error":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x","code":1}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"message":5,"message":"x"}}`,
}

// TestDuplicateMembersAgreeWithSDK holds these lines against the go-sdk's
// own reading, as TestCheckLineAgreesWithSDK does for its table.
func TestDuplicateMembersAgreeWithSDK(t *testing.T) {
	for i, line := range duplicateMembers {
		t.Run(strconv.Itoa(i), func(t *testing.T) { agreeWithSDK(t, []byte(line)) })
	}
}

// TestDuplicateMemberKeepsSession: end to end, a request with "jsonrpc"
// given twice, first as a number, is answered by the transport and the
// request after it is served.
func TestDuplicateMemberKeepsSession(t *testing.T) {
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":5,"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
	out, _, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
	if err != nil {
		t.Errorf("Run: %v, want nil at end of input", err)
	}
	want := []answer{{"1", 0}, {"2", codeInvalidRequest}, {"3", 0}}
	if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
}

// TestWriterReleasesLongAnswers: an answer longer than 16 MiB, written
// whole or in parts, single or in a batch, releases its requests, so the
// end of input does not wait for them.
func TestWriterReleasesLongAnswers(t *testing.T) {
	const size = 17 << 20
	one := padTo(t, `{"jsonrpc":"2.0","id":1,"result":{"pad":"`, `"}}`, size)
	batch := "[" + padTo(t, `{"jsonrpc":"2.0","id":1,"result":{"pad":"`, `"}}`, size) + `,{"jsonrpc":"2.0","id":"b","result":{}}]`
	tests := []struct {
		name   string
		writes []string
	}{
		{"one_write", []string{one + "\n"}},
		{"in_parts", []string{one[:1<<20], one[1<<20 : size-10], one[size-10:] + "\n"}},
		{"batch", []string{batch + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession()
			ids := []idKey{{set: true, n: 1}, {set: true, isStr: true, s: "b"}}
			if tt.name != "batch" {
				ids = ids[:1]
			}
			var msgs []info
			for _, id := range ids {
				msgs = append(msgs, info{request: true, id: id})
			}
			if e := s.admit(msgs, false); e != nil {
				t.Fatal(e.reason)
			}
			w := newWriter(discard{}, s)
			for _, p := range tt.writes {
				if _, err := w.Write([]byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range ids {
				if s.inFlight(id) {
					t.Errorf("request %+v still in flight after its %d-byte answer", id, size)
				}
			}
		})
	}
}

// TestSessionBatchRules: a batch the go-sdk would read but never answer is
// refused: one that mixes requests and notifications, or reuses the id of
// a request in flight outside any batch.
func TestSessionBatchRules(t *testing.T) {
	req := func(id int64) info { return info{request: true, id: idKey{set: true, n: id}} }
	notification := info{request: true}
	response := info{id: idKey{set: true, n: 9}}
	tests := []struct {
		name     string
		inFlight []info // single requests passed before
		batch    []info
		ok       bool
	}{
		{"requests", nil, []info{req(1), req(2)}, true},
		{"notification", nil, []info{notification}, true},
		{"request_and_response", nil, []info{req(1), response}, true},
		{"request_and_notification", nil, []info{req(1), notification}, false},
		{"notification_and_request", nil, []info{notification, req(1)}, false},
		{"id_in_flight", []info{req(1)}, []info{req(2), req(1)}, false},
		{"other_id_in_flight", []info{req(3)}, []info{req(1)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession()
			for _, m := range tt.inFlight {
				if e := s.admit([]info{m}, false); e != nil {
					t.Fatal(e.reason)
				}
			}
			e := s.admit(tt.batch, true)
			if (e == nil) != tt.ok {
				t.Errorf("admit(batch %+v) = %v, want admitted %t", tt.batch, e, tt.ok)
			}
			if e != nil && (e.code != codeInvalidRequest || e.id != nil) {
				t.Errorf("admit(batch %+v) = code %d id %s, want %d and a null id", tt.batch, e.code, e.id, codeInvalidRequest)
			}
		})
	}
}

// batchLines initialize a session with batches (2025-03-26), then send
// batch, then a request alone.
func batchLines(batch string) string {
	return strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		batch,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
}

const mixedBatchLine = `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`

// TestSDKDropsMixedBatch shows the go-sdk v1.8.0 limitation that the
// transport works around: served without it, a batch of a request and a
// notification is read and its request handled, but its answer is never
// written (the SDK waits for an answer to the notification too), while a
// batch of the request alone is answered.
func TestSDKDropsMixedBatch(t *testing.T) {
	tests := []struct {
		name  string
		batch string
		want  []string // answered ids, sorted
	}{
		{"request_alone", `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, []string{"1", "2", "3"}},
		{"request_and_notification", mixedBatchLine, []string{"1", "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inR, inW := io.Pipe()
				out := &lockedBuffer{}
				server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- server.Run(ctx, &mcp.IOTransport{Reader: inR, Writer: out}) }()
				if _, err := io.WriteString(inW, batchLines(tt.batch)); err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // the server has written all it will write
				var ids []string
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					var msgs []struct {
						ID json.RawMessage `json:"id"`
					}
					if !strings.HasPrefix(line, "[") {
						line = "[" + line + "]"
					}
					if err := json.Unmarshal([]byte(line), &msgs); err != nil {
						t.Fatalf("output line is not JSON-RPC: %q", line)
					}
					for _, m := range msgs {
						ids = append(ids, string(m.ID))
					}
				}
				slices.Sort(ids)
				if diff := cmp.Diff(tt.want, ids); diff != "" {
					t.Errorf("answered ids (-want +got):\n%s\noutput:\n%s", diff, out)
				}
				cancel()
				inW.Close()
				<-done
			})
		})
	}
}

// TestReaderRefusesMixedBatch: the transport answers a batch of a request
// and a notification with -32600 (id null), logs it, and goes on.
func TestReaderRefusesMixedBatch(t *testing.T) {
	out, logs, err := serveLines(t, io.NopCloser(strings.NewReader(batchLines(mixedBatchLine))))
	if err != nil {
		t.Errorf("Run: %v", err)
	}
	// Sent at once, the batch comes before the answer to initialize is
	// out, and is refused for that; TestReaderRefusesMixedBatchAfterInitialize
	// sends it after the answer.
	want := []answer{{"1", 0}, {"null", codeInvalidRequest}, {"3", 0}}
	if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
	if n := strings.Count(logs.String(), "refused an input line"); n != 1 {
		t.Errorf("log has %d refusals, want 1:\n%s", n, logs)
	}
}

// TestReaderRefusesMixedBatchAfterInitialize: once the answer to
// initialize is out with a version that has batches, a batch of a request
// and a notification is refused for mixing them, and the session goes on.
func TestReaderRefusesMixedBatchAfterInitialize(t *testing.T) {
	out := &lockedBuffer{}
	in, done := rawServer(t, out, nil)
	lines := strings.SplitAfter(batchLines(mixedBatchLine), "\n")
	if _, err := io.WriteString(in, lines[0]); err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, 1) // the answer to initialize (2025-03-26: batches)
	go func() {
		io.WriteString(in, strings.Join(lines[1:], ""))
		in.Close()
	}()
	if err := <-done; err != nil {
		t.Errorf("Run: %v, want nil at end of input", err)
	}
	want := []answer{{"1", 0}, {"null", codeInvalidRequest}, {"3", 0}}
	if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
	if !strings.Contains(out.String(), "mixes requests and notifications") {
		t.Errorf("the batch was not refused for mixing requests and notifications:\n%s", out)
	}
}

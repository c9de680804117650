package stdio

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawServer serves a server made with opts over the transport of this
// package, reading the returned pipe and writing to out, until the input
// ends; Run's error is sent on done.
func rawServer(t *testing.T, out io.WriteCloser, opts *mcp.ServerOptions, mw ...mcp.Middleware) (in *io.PipeWriter, done <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	t.Cleanup(func() { inR.Close() })
	s := newSession()
	w := newWriter(out, s)
	tr := &mcp.IOTransport{Reader: newReader(inR, w, s, slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Second), Writer: w}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, opts)
	server.AddReceivingMiddleware(mw...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	ch := make(chan error, 1)
	go func() { ch <- server.Run(ctx, tr) }()
	return inW, ch
}

// waitLines waits until out holds n lines.
func waitLines(t *testing.T, out *lockedBuffer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(out.String(), "\n") < n; {
		if time.Now().After(deadline) {
			t.Fatalf("want %d output lines; output:\n%s", n, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBatchRefusedWhileInitializeUnanswered: the go-sdk fixes the
// protocol version its stdio connection checks batches against when it
// handles initialize, before its answer is written. Until the transport
// sees that answer it cannot tell the version: the server may not support
// the one asked for (ServerOptions.SupportedProtocolVersions answers an
// old client's 2025-03-26 with 2025-11-25), and the SDK reads
// "protocolVersion" by its exact name. So the transport answers a batch
// read in that window with -32600, and the session goes on.
func TestBatchRefusedWhileInitializeUnanswered(t *testing.T) {
	tests := []struct {
		name     string
		versions []string // ServerOptions.SupportedProtocolVersions
		params   string   // of initialize
	}{
		{"server_negotiates_other_version", []string{"2025-11-25"},
			`{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`},
		{"protocol_version_member_case", nil,
			`{"protocolVersion":"2025-11-25","PROTOCOLVERSION":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The go-sdk handles initialize (and fixes the version) but
			// does not answer it until open is closed.
			entered, open := make(chan struct{}), make(chan struct{})
			hold := func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if method == "initialize" {
						close(entered)
						<-open
					}
					return res, err
				}
			}
			out := &lockedBuffer{}
			in, done := rawServer(t, out, &mcp.ServerOptions{SupportedProtocolVersions: tt.versions}, hold)

			if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+tt.params+"}\n"); err != nil {
				t.Fatal(err)
			}
			<-entered // initialize handled; its answer not handed to the writer yet
			// The transport reads the batch (the pipe write returns once it
			// is read) while the answer to initialize is not out yet, and
			// refuses it at once for that reason.
			if _, err := io.WriteString(in, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n"); err != nil {
				t.Fatal(err)
			}
			waitLines(t, out, 1)
			if !strings.Contains(out.String(), "must wait for the answer to initialize") {
				t.Errorf("the batch was not refused for the unanswered initialize:\n%s", out)
			}
			close(open)
			go func() {
				io.WriteString(in, `{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n")
				in.Close()
			}()
			if err := <-done; err != nil {
				t.Errorf("Run: %v, want nil at end of input (a line the transport passed ended the session)", err)
			}
			want := []answer{{"1", 0}, {"null", codeInvalidRequest}, {"3", 0}}
			if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
				t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
			}
		})
	}
}

// TestBatchPassedAfterInitializeAnswer: once the answer to initialize is
// out with a version that has batches, a batch reaches the go-sdk, which
// answers it as a batch.
func TestBatchPassedAfterInitializeAnswer(t *testing.T) {
	out := &lockedBuffer{}
	in, done := rawServer(t, out, nil)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, 1)
	go func() {
		io.WriteString(in, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`+"\n")
		in.Close()
	}()
	if err := <-done; err != nil {
		t.Errorf("Run: %v, want nil at end of input", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("output:\n%s\nwant the answer to initialize and one batch answer", out)
	}
	var batch []json.RawMessage
	if err := json.Unmarshal([]byte(lines[1]), &batch); err != nil {
		t.Fatalf("second output line %q is not a batch answer", lines[1])
	}
	got := answers(t, lines[0])
	for _, m := range batch {
		got = append(got, answers(t, string(m))...)
	}
	want := []answer{{"1", 0}, {"2", 0}, {"3", 0}}
	if diff := cmp.Diff(want, got, anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
}

// TestEveryUnansweredInitializeTracked: a client may send a second
// initialize before the answer to a first it got wrong (no params: the
// go-sdk refuses it and keeps no version). The second negotiates the
// session, 2025-11-25 here, where the SDK ends the session on any batch;
// the transport tracks both, takes the version from the answer that
// succeeds, and answers a later batch with -32600.
func TestEveryUnansweredInitializeTracked(t *testing.T) {
	out := &lockedBuffer{}
	in, done := rawServer(t, out, nil)
	first := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
	}, "\n") + "\n"
	if _, err := io.WriteString(in, first); err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, 2)
	go func() {
		io.WriteString(in, `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`+"\n"+`{"jsonrpc":"2.0","id":4,"method":"ping"}`+"\n")
		in.Close()
	}()
	if err := <-done; err != nil {
		t.Errorf("Run: %v, want nil at end of input (a line the transport passed ended the session)", err)
	}
	want := []answer{{"1", 0}, {"2", 0}, {"null", codeInvalidRequest}, {"4", 0}}
	got := answers(t, out.String())
	// The first initialize is answered with an error: compare its id only.
	for i := range got {
		if got[i].ID == "1" {
			got[i].Code = 0
		}
	}
	if diff := cmp.Diff(want, got, anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
}

// TestSessionInitializeTracking: batches are refused while any initialize
// passed is unanswered; the first successful answer decides the version
// for good; an initialize answered with an error leaves the version
// unknown (the go-sdk may have negotiated one before a middleware failed),
// so batches stay refused until one succeeds.
func TestSessionInitializeTracking(t *testing.T) {
	// Each asks for 2025-03-26, which has batches: the version asked for
	// never decides.
	initialize := func(id int64) info {
		return info{request: true, id: idKey{set: true, n: id}, method: "initialize", params: []byte(`{"protocolVersion":"2025-03-26"}`)}
	}
	result := func(id, version string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"` + version + `"}}`
	}
	refused := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"x"}}`
	}
	type step struct {
		init int64  // an initialize request with this id, or
		sent string // a line the server writes, or
		want bool   // (neither) whether a batch is admitted now
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unanswered", []step{{init: 1}, {want: false}}},
		{"answered_2025_03_26", []step{{init: 1}, {sent: result("1", "2025-03-26")}, {want: true}}},
		{"answered_2025_11_25", []step{{init: 1}, {sent: result("1", "2025-11-25")}, {want: false}}},
		{"refused", []step{{init: 1}, {sent: refused("1")}, {want: false}}},
		{"refused_then_2025_03_26", []step{{init: 1}, {sent: refused("1")}, {init: 2}, {sent: result("2", "2025-03-26")}, {want: true}}},
		{"refused_then_second_unanswered", []step{
			{init: 1}, {init: 2}, {sent: refused("1")}, {want: false},
			{sent: result("2", "2025-11-25")}, {want: false},
		}},
		{"refused_then_second_2025_03_26", []step{
			{init: 1}, {init: 2}, {sent: refused("1")}, {sent: result("2", "2025-03-26")}, {want: true},
		}},
		{"both_refused", []step{{init: 1}, {init: 2}, {sent: refused("2")}, {sent: refused("1")}, {want: false}}},
		{"duplicate_answered_after", []step{
			{init: 1}, {init: 2}, {sent: result("1", "2025-03-26")}, {want: true}, {sent: refused("2")}, {want: true},
		}},
		{"initialize_after_negotiation", []step{
			{init: 1}, {sent: result("1", "2025-03-26")}, {init: 2}, {want: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession()
			next := int64(100) // ids of the batches
			for i, st := range tt.steps {
				switch {
				case st.init != 0:
					if e := s.admit([]info{initialize(st.init)}, false); e != nil {
						t.Fatalf("step %d: initialize refused: %s", i, e.reason)
					}
				case st.sent != "":
					s.sent([]byte(st.sent))
				default:
					next++
					batch := []info{{request: true, id: idKey{set: true, n: next}}}
					if e := s.admit(batch, true); (e == nil) != st.want {
						t.Errorf("step %d: admit(batch) = %v, want admitted %t", i, e, st.want)
					}
				}
			}
		})
	}
}

// TestLineLimitExcludesBlanks: the transport passes an input line's JSON
// value alone and a newline, so the limit is on the value; up to
// lineSlack blanks around it, a CRLF line's '\r' among them, do not count.
// A CRLF client gets the same limit as an LF one.
func TestLineLimitExcludesBlanks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 16 MiB lines")
	}
	tests := []struct {
		name     string
		size     int    // of the ping's value
		tail     string // after it, before the newline
		sdkReads bool   // the go-sdk alone reads the input
		passed   bool
	}{
		{"crlf_at_limit", maxLine, "\r", true, true},
		{"blanks_within_slack", maxLine, "\r" + strings.Repeat(" ", lineSlack-1), false, true},
		{"crlf_over_limit", maxLine + 1, "\r", false, false},
		{"blanks_beyond_slack", maxLine, "\r" + strings.Repeat(" ", lineSlack), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ping := padTo(t, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"`, `"}}`, tt.size)
			in := initLine + "\r\n" + ping + tt.tail + "\n" + `{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\r\n"
			if tt.sdkReads {
				if _, err := sdkRead(t, []byte(in)); err != nil {
					t.Fatalf("the go-sdk alone refuses the input: %v", err)
				}
			}
			out, _, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
			if err != nil {
				t.Errorf("Run: %v", err)
			}
			want := []answer{{"1", 0}, {"5", 0}, {"6", 0}}
			if !tt.passed {
				want[1] = answer{"null", codeInvalidRequest}
			}
			if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

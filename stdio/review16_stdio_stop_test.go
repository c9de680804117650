package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopHarness is a server over Isolate's transport, on pipes, with
// Options.Stop. Its tools: "hold" returns when the test releases it,
// whatever its context; "roots" asks the client for its roots and returns
// with the answer.
type stopHarness struct {
	t       *testing.T
	in      *os.File // the client's end of the server's input
	out     *lockedBuffer
	logf    *os.File
	stop    chan struct{}
	release chan struct{}
	started atomic.Int32
	cause   chan error // the cause of a "hold" call's context, once it ends
	ran     chan error
	outEOF  chan struct{} // closed when the client reads end of file
}

func newStopHarness(t *testing.T, drain time.Duration) *stopHarness {
	t.Helper()
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	h := &stopHarness{t: t, in: inW, out: &lockedBuffer{}, logf: logFile(t), stop: make(chan struct{}),
		release: make(chan struct{}), cause: make(chan error, 16), ran: make(chan error, 1), outEOF: make(chan struct{})}
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: h.logf, DrainTimeout: drain, Stop: h.stop})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hold", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started.Add(1)
			go func() {
				select {
				case <-ctx.Done():
					h.cause <- context.Cause(ctx)
				case <-h.release:
				}
			}()
			<-h.release // a call that ignores its context
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "roots", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			//lint:ignore SA1019 a server-to-client request whose answer must pass after the stop; roots is one the go-sdk v1.8.0 still sends
			if _, err := req.Session.ListRoots(ctx, nil); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots"}}}, nil
		})
	go func() {
		defer close(h.outEOF)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.out.Write(append(sc.Bytes(), '\n'))
		}
	}()
	// Run's context is never cancelled: only the stop ends the session.
	go func() { h.ran <- server.Run(context.Background(), tr) }()
	t.Cleanup(h.releaseCalls)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	waitLines(t, h.out, 1)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return h
}

func (h *stopHarness) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *stopHarness) releaseCalls() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// waitStarted waits until n "hold" calls have started.
func (h *stopHarness) waitStarted(n int32) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); h.started.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d calls started, want %d; output:\n%s", h.started.Load(), n, h.out)
		}
	}
}

// waitRun waits for server.Run to return, and the client to read the end
// of the output, and returns Run's error.
func (h *stopHarness) waitRun(within time.Duration) error {
	h.t.Helper()
	var err error
	select {
	case err = <-h.ran:
	case <-time.After(within):
		h.t.Fatalf("server.Run did not return within %v of the stop; output:\n%s", within, h.out)
	}
	select {
	case <-h.outEOF:
	case <-time.After(within):
		h.t.Fatalf("the client did not read the end of the output; output:\n%s", h.out)
	}
	return err
}

func (h *stopHarness) logs() string {
	b, err := os.ReadFile(h.logf.Name())
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

// TestStopAnswersCallsUnderWay: Options.Stop is a graceful stop. The
// calls the transport passed on before it are answered (here after the
// stop, when the test lets them end), with or without the client closing
// its input meanwhile; a request read after it is not started but answered
// at once with -32004 (the go-sdk's "server is closing") and its id; and
// the session then ends by itself, Run returning nil. Before, a stop did
// nothing: the transport kept passing requests, and only a cancelled
// context ended the session, dropping the answers in flight.
func TestStopAnswersCallsUnderWay(t *testing.T) {
	for _, name := range []string{"stdin_open", "stdin_closed_after_stop"} {
		t.Run(name, func(t *testing.T) {
			h := newStopHarness(t, 10*time.Second)
			for _, id := range []string{"2", "3", "4"} {
				h.send(callLine(id, "hold"))
			}
			h.waitStarted(3)
			close(h.stop)
			h.send(callLine("5", "hold"))
			h.send(`{"jsonrpc":"2.0","id":"p-6","method":"ping"}`)
			h.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}`)
			waitLines(t, h.out, 3)
			if name == "stdin_closed_after_stop" {
				h.in.Close()
			}
			select {
			case err := <-h.ran:
				t.Fatalf("server.Run returned %v with three calls under way", err)
			case <-time.After(100 * time.Millisecond):
			}
			h.releaseCalls()
			if err := h.waitRun(10 * time.Second); err != nil {
				t.Errorf("Run after the stop: %v, want nil", err)
			}
			want := []answer{{"1", 0}, {"5", -32004}, {`"p-6"`, -32004}, {"2", 0}, {"3", 0}, {"4", 0}}
			if diff := cmp.Diff(want, answers(t, h.out.String()), anyOrder); diff != "" {
				t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, h.out)
			}
			if n := h.started.Load(); n != 3 {
				t.Errorf("%d calls started, want 3: none after the stop", n)
			}
			if !strings.Contains(h.out.String(), `"message":"server is closing: `) {
				t.Errorf("no answer says the server is closing:\n%s", h.out)
			}
			if logs := h.logs(); !strings.Contains(logs, "code=-32004") {
				t.Errorf("the refusals after the stop are not logged:\n%s", logs)
			}
		})
	}
}

// TestStopPassesAnswersToServerRequests: after the stop, a call under way
// may still wait for the client's answer to a request of the server's own
// (roots, elicitation, sampling): the transport keeps reading its input
// and passes that answer, so the call ends and is answered.
func TestStopPassesAnswersToServerRequests(t *testing.T) {
	h := newStopHarness(t, 10*time.Second)
	h.send(callLine("2", "roots"))
	var req struct{ ID json.RawMessage }
	for deadline := time.Now().Add(10 * time.Second); req.ID == nil; time.Sleep(5 * time.Millisecond) {
		for _, line := range strings.Split(h.out.String(), "\n") {
			if strings.Contains(line, `"method":"roots/list"`) {
				if err := json.Unmarshal([]byte(line), &req); err != nil {
					t.Fatal(err)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never asked for roots:\n%s", h.out)
		}
	}
	close(h.stop)
	h.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"roots":[]}}`)
	if err := h.waitRun(10 * time.Second); err != nil {
		t.Errorf("Run after the stop: %v, want nil", err)
	}
	var got []answer
	for _, line := range strings.Split(strings.TrimSpace(h.out.String()), "\n") {
		if !strings.Contains(line, `"method"`) {
			got = append(got, answers(t, line)...)
		}
	}
	if diff := cmp.Diff([]answer{{"1", 0}, {"2", 0}}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, h.out)
	}
}

// TestStopBoundedByDrainTimeout: a call that never ends does not hold a
// stopped server for good. DrainTimeout after the stop the transport ends
// its input as at end of file: the go-sdk cancels the call (cause io.EOF)
// and its answer is lost, which the transport logs; with a negative
// DrainTimeout it does so at once. Before, the stop did nothing, and the
// call ran on.
func TestStopBoundedByDrainTimeout(t *testing.T) {
	for _, tt := range []struct {
		name  string
		drain time.Duration
		min   time.Duration
	}{
		{"grace_300ms", 300 * time.Millisecond, 300 * time.Millisecond},
		{"no_drain", -1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newStopHarness(t, tt.drain)
			h.send(callLine("2", "hold"))
			h.waitStarted(1)
			start := time.Now()
			close(h.stop)
			select {
			case err := <-h.cause:
				if !errors.Is(err, io.EOF) {
					t.Errorf("the call's context ended with cause %v, want io.EOF", err)
				}
				if d := time.Since(start); d < tt.min {
					t.Errorf("the call was cancelled %v after the stop, before DrainTimeout (%v)", d, tt.min)
				}
			case <-time.After(8 * time.Second):
				t.Fatalf("the call was not cancelled within 8 s of the stop (DrainTimeout %v)", tt.drain)
			}
			h.releaseCalls()
			if err := h.waitRun(10 * time.Second); err != nil {
				t.Errorf("Run after the stop: %v, want nil", err)
			}
			if diff := cmp.Diff([]answer{{"1", 0}}, answers(t, h.out.String())); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if tt.drain > 0 && !strings.Contains(h.logs(), "requests=1") {
				t.Errorf("the log does not say one request was left unanswered:\n%s", h.logs())
			}
		})
	}
}

// TestSessionStoppedRefusesRequests: once stopped, the session refuses
// every request with -32004 and its id (each request of a batch, whose
// answers to the server's requests the reader still passes), and admits
// notifications and responses.
func TestSessionStoppedRefusesRequests(t *testing.T) {
	req := func(id int64) info {
		return info{request: true, id: idKey{set: true, n: id}, echo: json.RawMessage(strconv.FormatInt(id, 10))}
	}
	notification := info{request: true, method: "notifications/cancelled"}
	response := info{id: idKey{set: true, n: 9}}
	tests := []struct {
		name     string
		msgs     []info
		batch    bool
		wantCode int // 0: admitted
		wantIDs  []string
	}{
		{"request", []info{req(5)}, false, -32004, []string{"5"}},
		{"notification", []info{notification}, false, 0, nil},
		{"response", []info{response}, false, 0, nil},
		{"batch_of_requests", []info{req(5), req(6)}, true, -32004, []string{"5", "6"}},
		{"batch_with_response", []info{req(5), response}, true, -32004, []string{"5"}},
		{"batch_of_notification", []info{notification}, true, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession()
			s.stopping()
			e := s.admit(tt.msgs, tt.batch)
			if tt.wantCode == 0 {
				if e != nil {
					t.Fatalf("admit(%+v) refused with %d: %s", tt.msgs, e.code, e.reason)
				}
				return
			}
			if e == nil {
				t.Fatalf("admit(%+v) admitted, want %d", tt.msgs, tt.wantCode)
			}
			var ids []string
			if e.ids != nil {
				for _, id := range e.ids {
					ids = append(ids, string(id))
				}
			} else {
				ids = []string{string(e.id)}
			}
			if e.code != tt.wantCode || !cmp.Equal(ids, tt.wantIDs) {
				t.Errorf("admit(%+v) = %d with ids %v, want %d with ids %v", tt.msgs, e.code, ids, tt.wantCode, tt.wantIDs)
			}
			if n, _ := s.unanswered(); n != 0 {
				t.Errorf("%d requests in flight after the refusal, want 0", n)
			}
		})
	}
}

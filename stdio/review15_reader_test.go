package stdio

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReaderOneByteAtATime: the client's writes split values anywhere. Fed
// one byte per read, CRLF lines, a raw NUL after a value, invalid UTF-8 in
// an id, a request split over many reads and a last line without a newline
// are each read as they are when whole: the good ones answered, the NUL
// line refused with -32700, and the session goes on.
func TestReaderOneByteAtATime(t *testing.T) {
	input := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\x00",
		`{"jsonrpc":"2.0","id":"` + "\xff" + `","method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\r\n")
	out, logs, err := serveLines(t, io.NopCloser(iotest.OneByteReader(strings.NewReader(input))))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []answer{{ID: "1"}, {ID: "null", Code: -32700}, {ID: `"\ufffd"`}, {ID: "3"}, {ID: "4"}}
	got := answers(t, strings.ReplaceAll(out.String(), "\uFFFD", `\ufffd`))
	if diff := cmp.Diff(want, got, anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\nlog:\n%s", diff, logs)
	}
}

// TestRequestsInFlightBounded: the go-sdk reads every request and runs
// each call in a goroutine of its own, however many are in flight, so a
// client that floods a server whose handler is slow grew it without bound
// (about 10 KB a call: 100,000 calls in flight held 1 GB). Beyond
// maxInFlight requests in flight, the transport answers a request itself,
// with -32029 and its id, and passes nothing; a batch that would go beyond
// has each of its requests answered so (review15c). Notifications and
// responses still pass (a handler may wait for the answer to a request of
// its own), and once answers are out requests pass again.
func TestRequestsInFlightBounded(t *testing.T) {
	pr, pw := io.Pipe()
	out, logs := &lockedBuffer{}, &lockedBuffer{}
	s := newSession()
	s.maxInFlight = 3
	w := newWriter(out, s)
	tr := &mcp.IOTransport{Reader: newReader(pr, w, s, slog.New(slog.NewTextHandler(logs, nil)), 10*time.Second), Writer: w}
	release := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-release
			return &mcp.CallToolResult{}, nil
		})
	ran := make(chan error, 1)
	go func() { ran <- server.Run(context.Background(), tr) }()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); strings.Count(out.String(), "\n") < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d answers, want %d:\n%s", strings.Count(out.String(), "\n"), n, out)
			}
		}
	}
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"block","arguments":{}}}`
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	waitFor(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	send(call("2"))
	send(call("3"))
	send(call(`"four"`))
	send(call("5"))                                                                        // one too many
	send("[" + call("6") + "]")                                                            // a batch too
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`) // passes
	waitFor(3)
	close(release)
	waitFor(6)
	send(call("7")) // room again
	waitFor(7)
	pw.Close()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []answer{{ID: "1"}, {ID: "2"}, {ID: "3"}, {ID: `"four"`}, {ID: "5", Code: -32029}, {ID: "6", Code: -32029}, {ID: "7"}}
	if diff := cmp.Diff(want, flatAnswers(t, out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\nlog:\n%s", diff, logs)
	}
	// The first refusal is logged, the second counted with it once call 7
	// passed (review18: a flood is not logged line by line).
	if n := strings.Count(logs.String(), "too many requests in flight"); n != 1 || !strings.Contains(logs.String(), "requests=2") {
		t.Errorf("log has %d refusals for requests in flight and no count of 2, want 1 and a count:\n%s", n, logs)
	}
}

package stdio

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review25Server serves a server made with opts, with a tool "ask", which
// asks the client (roots) after before and answers "asked" or, when the
// ask fails, "unasked" and the error, and a tool "slow", which answers
// after before, over the transport of this package with drain as its
// DrainTimeout. It returns the input's pipe, the output, and Run's error
// on done.
func review25Server(t *testing.T, drain, before time.Duration, opts *mcp.ServerOptions) (in *io.PipeWriter, out *lockedBuffer, done <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	t.Cleanup(func() { inR.Close() })
	out = &lockedBuffer{}
	s := newSession()
	w := newWriter(out, s)
	tr := &mcp.IOTransport{Reader: newReader(inR, w, s, slog.New(slog.DiscardHandler), drain), Writer: w}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, opts)
	server.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(before)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(before)
			text := "asked"
			//lint:ignore SA1019 a server-to-client request that the go-sdk v1.8.0 still sends
			if _, err := req.Session.ListRoots(ctx, nil); err != nil {
				text = "unasked: " + err.Error()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	ch := make(chan error, 1)
	go func() { ch <- server.Run(ctx, tr) }()
	return inW, out, ch
}

// TestReview25InputEndAnswersServerRequests: at end of input the transport
// holds the end back until the requests read are answered. A call whose
// handler waits for the client's answer to a request of the server's own
// (a ping, roots, sampling, elicitation) could never be answered: the
// client can no longer write. The go-sdk, not told of the end, kept the
// server's request waiting, the handler with it, until DrainTimeout; then
// it cancelled the call and dropped its answer, though the client was still
// reading. The transport now answers the server's requests still waiting,
// at end of input, with an error, so the handler goes on and its call is
// answered.
func TestReview25InputEndAnswersServerRequests(t *testing.T) {
	in, out, done := review25Server(t, 4*time.Second, 0, nil)
	io.WriteString(in, initLine+"\n")
	waitLines(t, out, 1)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n")
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`+"\n")
	waitLines(t, out, 2) // the server's request
	if !strings.Contains(out.String(), `"method":"roots/list"`) {
		t.Fatalf("the server did not ask the client; output:\n%s", out)
	}
	start := time.Now()
	in.Close()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the session ended %v after the end of input, want at once (the drain waited for an answer that could not come)", took)
	}
	if !strings.Contains(out.String(), `"id":2,"result"`) || !strings.Contains(out.String(), "the input ended before the client answered") {
		t.Errorf("the call whose handler asked the client was not answered; output:\n%s", out)
	}
}

// TestReview25AskAfterInputEndAnswered: a request the server writes while
// the transport drains, after the end of input, is answered at once too.
func TestReview25AskAfterInputEndAnswered(t *testing.T) {
	in, out, done := review25Server(t, 4*time.Second, 300*time.Millisecond, nil)
	io.WriteString(in, initLine+"\n")
	waitLines(t, out, 1)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n")
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`+"\n")
	start := time.Now()
	in.Close() // before the handler asks
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the session ended %v after the end of input, want once the call is answered", took)
	}
	if !strings.Contains(out.String(), `"id":2,"result"`) || !strings.Contains(out.String(), "unasked") {
		t.Errorf("the call whose handler asked the client was not answered; output:\n%s", out)
	}
}

// TestReview25KeepAliveDuringDrain: the go-sdk's keepalive pings the
// client every KeepAlive, and closes the session when a ping fails, with
// the answers of the calls under way. A ping written in the drain after
// the end of input is answered with -32601, which the keepalive takes for
// a client without ping, and stops: the call under way is still answered.
func TestReview25KeepAliveDuringDrain(t *testing.T) {
	in, out, done := review25Server(t, 4*time.Second, 900*time.Millisecond, &mcp.ServerOptions{KeepAlive: 200 * time.Millisecond})
	io.WriteString(in, initLine+"\n")
	waitLines(t, out, 1)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n")
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`+"\n")
	in.Close() // before the first ping
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if !strings.Contains(out.String(), `"method":"ping"`) {
		t.Fatalf("no keepalive ping in the drain; output:\n%s", out)
	}
	if !strings.Contains(out.String(), `"id":2,"result"`) {
		t.Errorf("the call under way was not answered; output:\n%s", out)
	}
}

// TestReview25AsksForgotten: the server's requests that the client answers
// (alone or in a batch), or that the go-sdk gives up, are forgotten: the
// record of them does not grow with each, and none is answered again at
// end of input. An answer with an id the server never used changes
// nothing, nor does one of the client's own requests with the same id.
func TestReview25AsksForgotten(t *testing.T) {
	s := newSession()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"gave up"}}`,
	} {
		s.sent([]byte(line))
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`, // the client's own request, id 4
		`{"jsonrpc":"2.0","id":9,"result":{}}`,     // never asked
		`[{"jsonrpc":"2.0","id":2.0,"result":{"roots":[]}}]`,
	} {
		_, msgs, batch, lerr := checkLine([]byte(line))
		if lerr == nil {
			lerr = s.admit(msgs, batch)
		}
		if lerr != nil {
			t.Fatalf("%s refused: %s", line, lerr.reason)
		}
		s.replied(msgs)
	}
	var got []string
	for _, a := range s.takeAsked() {
		got = append(got, string(a.id))
	}
	if len(got) != 1 || got[0] != "4" || len(s.asked) != 0 {
		t.Errorf("asks left unanswered: %q, want [4], and none after they are taken (%d)", got, len(s.asked))
	}
}

// TestReview25RedirectedFilesNotInherited: Isolate points the descriptors
// of the files it is given at standard error and the null device with
// dup2, which clears close-on-exec. Files given in Options, opened by Go
// close-on-exec, were so left to every child process: each inherited a
// copy of standard error (holding a log pipe open while it lived) and of
// the null device. A descriptor above 2 now stays close-on-exec; 0, 1 and
// 2 are for children to inherit.
func TestReview25RedirectedFilesNotInherited(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("stdio: no /proc/self/fd to see a child's descriptors")
	}
	inR, _ := pipe(t)
	_, outW := pipe(t)
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Reader.Close()
	defer tr.Writer.Close()
	for _, f := range []*os.File{inR, outW} {
		cmd := exec.Command("sh", "-c", "test -e /proc/self/fd/"+strconv.Itoa(int(f.Fd())))
		if err := cmd.Run(); err == nil {
			t.Errorf("a child process inherited descriptor %d (%s)", f.Fd(), f.Name())
		}
	}
}

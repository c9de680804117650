package stdio

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHarness runs Serve over Isolate's transport on pipes, with
// ctx's Done channel as the stop. Its tools: "slow" returns after 200 ms;
// "stuck" returns when the test releases it, whatever its context.
type serveHarness struct {
	t       *testing.T
	in      io.WriteCloser
	out     *lockedBuffer
	cancel  context.CancelFunc
	release chan struct{}
	started atomic.Int32
	stops   atomic.Int32
	served  chan error
	outEOF  chan struct{} // closed when the client reads end of file
}

func newServeHarness(t *testing.T, drain, grace time.Duration) *serveHarness {
	t.Helper()
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	h := &serveHarness{t: t, in: inW, out: &lockedBuffer{}, cancel: cancel, release: make(chan struct{}), served: make(chan error, 1), outEOF: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logFile(t), DrainTimeout: drain, Stop: ctx.Done()})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started.Add(1)
			time.Sleep(200 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow done"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "stuck", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started.Add(1)
			<-h.release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stuck done"}}}, nil
		})
	go func() {
		defer close(h.outEOF)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.out.Write(append(sc.Bytes(), '\n'))
		}
	}()
	go func() { h.served <- Serve(ctx, server, tr, grace, func() { h.stops.Add(1) }) }()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	waitLines(t, h.out, 1)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return h
}

func (h *serveHarness) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *serveHarness) call(id, tool string) {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`)
	for deadline := time.Now().Add(10 * time.Second); h.started.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s never started; output:\n%s", tool, h.out)
		}
	}
}

func (h *serveHarness) wait(within time.Duration) error {
	h.t.Helper()
	select {
	case err := <-h.served:
		return err
	case <-time.After(within):
		h.t.Fatalf("Serve did not return within %v; output:\n%s", within, h.out)
		return nil
	}
}

// output waits for the client to read the end of the server's output
// (the session's end closes it), and returns what it read.
func (h *serveHarness) output() string {
	h.t.Helper()
	select {
	case <-h.outEOF:
	case <-time.After(10 * time.Second):
		h.t.Fatalf("the server's output did not end; output:\n%s", h.out)
	}
	return h.out.String()
}

// TestServeStopAnswersCallsUnderWay: a stop while a call runs ends Serve
// with nil once the call is answered (not with -32004), stopping called
// once.
func TestServeStopAnswersCallsUnderWay(t *testing.T) {
	h := newServeHarness(t, 5*time.Second, 6*time.Second)
	h.call("2", "slow")
	h.cancel()
	if err := h.wait(10 * time.Second); err != nil {
		t.Fatalf("Serve after a stop = %v, want nil", err)
	}
	out := h.output()
	if !strings.Contains(out, `"id":2,"result"`) || !strings.Contains(out, "slow done") {
		t.Errorf("the call under way was not answered; output:\n%s", out)
	}
	if n := h.stops.Load(); n != 1 {
		t.Errorf("stopping called %d times, want 1", n)
	}
}

// TestServeStopBoundedByGrace: a call that ignores its cancellation does
// not hold Serve past its grace: ErrStopTimeout.
func TestServeStopBoundedByGrace(t *testing.T) {
	h := newServeHarness(t, 100*time.Millisecond, 500*time.Millisecond)
	h.call("2", "stuck")
	start := time.Now()
	h.cancel()
	if err := h.wait(10 * time.Second); !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Serve with a stuck call = %v, want ErrStopTimeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Serve returned %v after the stop, want about its 500 ms grace", d)
	}
}

// TestServeClientEnds: a client that closes its end ends Serve with nil,
// its calls answered, and no stop.
func TestServeClientEnds(t *testing.T) {
	h := newServeHarness(t, 5*time.Second, time.Second)
	h.call("2", "slow")
	h.in.Close()
	if err := h.wait(10 * time.Second); err != nil {
		t.Fatalf("Serve after end of input = %v, want nil", err)
	}
	if !strings.Contains(h.output(), "slow done") {
		t.Errorf("the call was not answered; output:\n%s", h.out)
	}
	if n := h.stops.Load(); n != 0 {
		t.Errorf("stopping called %d times, want 0", n)
	}
}

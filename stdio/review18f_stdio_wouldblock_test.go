//go:build linux

package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nonblockServe runs Serve over Isolate's transport whose output is a
// blocking pipe when Isolate takes it (so outside the runtime's poller),
// made non-blocking right after, as another process sharing it may do.
// Its tool "big" answers with more than a pipe holds; "small" with a
// word. The client reads nothing until read is called.
type nonblockServe struct {
	t      *testing.T
	in     *os.File
	out    *os.File // the read end of the server's output
	cancel context.CancelFunc
	served chan error
}

func newNonblockServe(t *testing.T, drain, grace time.Duration) *nonblockServe {
	t.Helper()
	inR, inW := pipe(t)
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	outR, outW := os.NewFile(uintptr(p[0]), "out-r"), os.NewFile(uintptr(p[1]), "out-w")
	t.Cleanup(func() { outR.Close(); outW.Close() })
	// Another process's copy of the output: Isolate points outW's own
	// descriptor at standard error.
	other, err := syscall.Dup(p[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(other) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logFile(t), DrainTimeout: drain, Stop: ctx.Done()})
	if err != nil {
		t.Fatal(err)
	}
	// The open file description is shared with Isolate's copy.
	if err := syscall.SetNonblock(other, true); err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	text := func(s string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
		}
	}
	server.AddTool(&mcp.Tool{Name: "big", InputSchema: map[string]any{"type": "object"}}, text(strings.Repeat("b", 512<<10)))
	server.AddTool(&mcp.Tool{Name: "small", InputSchema: map[string]any{"type": "object"}}, text("small done"))
	h := &nonblockServe{t: t, in: inW, out: outR, cancel: cancel, served: make(chan error, 1)}
	go func() { h.served <- Serve(ctx, server, tr, grace, nil) }()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return h
}

func (h *nonblockServe) send(line string) {
	h.t.Helper()
	if _, err := h.in.WriteString(line + "\n"); err != nil {
		h.t.Fatal(err)
	}
}

// waitFull waits until the output holds more than 32 KiB unread: the big
// answer is being written and the pipe is full (a fixed sleep was not
// enough under load: the stop then cancelled the call before it answered).
func (h *nonblockServe) waitFull() {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var n int32
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, h.out.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
			h.t.Fatalf("FIONREAD on the output: %v", errno)
		}
		if n > 32<<10 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the output holds %d bytes after 10s, want the big answer filling it", n)
		}
	}
}

func (h *nonblockServe) call(id, tool string) {
	h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`)
}

// TestReview18fServeWaitsForASlowClient: through the go-sdk and Serve, a
// client slow to read a non-blocking output gets every answer whole, each
// a line of JSON, and the session goes on (an answer larger than the pipe
// is written in parts, waiting between them).
func TestReview18fServeWaitsForASlowClient(t *testing.T) {
	h := newNonblockServe(t, 5*time.Second, 6*time.Second)
	h.call("2", "big")
	h.call("3", "small")
	h.waitFull()
	lines := make(chan string, 8)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(h.out)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	ids := map[string]string{}
	for len(ids) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the output ended with answers to %v only", ids)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result *mcp.CallToolResult
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("an output line is not JSON (%v): %.200s", err, l)
			}
			ids[string(m.ID)] = l
		case <-time.After(10 * time.Second):
			t.Fatalf("answers to %v only after 10s", ids)
		}
	}
	if l := ids["2"]; !strings.Contains(l, strings.Repeat("b", 512<<10)) {
		t.Errorf("the big answer: %.200s", l)
	}
	if l := ids["3"]; !strings.Contains(l, "small done") {
		t.Errorf("the small answer: %.200s", l)
	}
	h.in.Close()
	select {
	case err := <-h.served:
		if err != nil {
			t.Errorf("Serve after end of input = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after end of input")
	}
}

// TestReview18fStopBoundedWhenClientNeverReads: a client that never reads
// the non-blocking output holds the go-sdk's write in its wait, and the
// transport's refusal of a request read after the stop behind it (the
// reader waits for the writer): Serve's grace still ends Serve with
// ErrStopTimeout. Closing the output's read end (the client gone) then
// ends the wait with EPIPE.
func TestReview18fStopBoundedWhenClientNeverReads(t *testing.T) {
	h := newNonblockServe(t, 100*time.Millisecond, 500*time.Millisecond)
	h.call("2", "big")
	h.call("3", "small")
	h.waitFull()
	start := time.Now()
	h.cancel()
	time.Sleep(50 * time.Millisecond)
	h.call("4", "small") // refused after the stop: its answer waits too
	select {
	case err := <-h.served:
		if !errors.Is(err, ErrStopTimeout) {
			t.Fatalf("Serve = %v, want ErrStopTimeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of the stop")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Serve returned %v after the stop, want about its 500 ms grace", d)
	}
	// The client goes: the wait ends, the session with it, and the
	// transport closes its input.
	h.out.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := h.in.WriteString("\n"); errors.Is(err, syscall.EPIPE) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session did not end within 10s of the client's going")
		}
	}
}

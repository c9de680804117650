//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stdio

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview23ReadWaitsOutWouldBlock: the input's descriptor, blocking
// when Isolate took it and so outside the runtime's poller, may be made
// non-blocking since by another process that shares it (a wrapper that
// launched the server with its own standard input, node's runtime, say),
// as review18e met on the output. A read with no input yet then failed
// with EAGAIN, which the transport took for the input's end: the session
// ended, with that error, while the client was still there, only not
// written to yet. A blocking input would have waited; the reader now waits
// too, and the session reads the client's next line.
func TestReview23ReadWaitsOutWouldBlock(t *testing.T) {
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	// The other process's copy: one open file with the transport's input.
	other, err := syscall.Dup(int(inR.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(other)
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logFile(t), DrainTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(other, true); err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- server.Run(ctx, tr) }()
	lines := make(chan string, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// The reader meets the empty input first.
	time.Sleep(100 * time.Millisecond)
	if _, err := io.WriteString(inW, initLine+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case line, ok := <-lines:
		if !ok || !strings.Contains(line, `"id":1,"result"`) {
			t.Errorf("the answer to initialize: %q (output open: %v), want its result", line, ok)
		}
	case err := <-ran:
		t.Fatalf("the session ended before the client wrote (%v); a blocking input would have waited", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to initialize")
	}
	inW.Close()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run at end of input: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return at end of input")
	}
}

// emptyNonBlocking is an input made non-blocking with nothing to read: every
// Read would block. It counts the Reads.
type emptyNonBlocking struct{ reads atomic.Int64 }

func (e *emptyNonBlocking) Read([]byte) (int, error) {
	e.reads.Add(1)
	return 0, syscall.EAGAIN
}

func (e *emptyNonBlocking) Close() error { return nil }

// TestReview23CloseEndsTheReadWait: the wait for an input that would block
// ends with Close, as the wait for a write does: the Read under way reports
// end of file, and the reading goroutine reads no more.
func TestReview23CloseEndsTheReadWait(t *testing.T) {
	in := &emptyNonBlocking{}
	s := newSession()
	r := newReader(in, newWriter(discard{}, s), s, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Second)
	read := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 512))
		read <- err
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-read:
		t.Fatalf("Read on an input that would block returned %v, want it to wait", err)
	default:
	}
	r.Close()
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read after Close: %v, want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waits after Close")
	}
	time.Sleep(2 * maxWouldBlockPause)
	n := in.reads.Load()
	time.Sleep(5 * maxWouldBlockPause)
	if m := in.reads.Load(); m != n {
		t.Errorf("the input was read %d more times after Close, want none", m-n)
	}
}

//go:build linux

package stdio

import (
	"bytes"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readLater reads everything from r, starting after a pause (so that the
// writer meets the full pipe first), until the write end is closed.
func readLater(r io.Reader) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		b, _ := io.ReadAll(r)
		got <- b
	}()
	return got
}

// waitDone fails the test when done is not closed within a while.
func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10s", what)
	}
}

// TestReview18eSDKWriteWaitsOutWouldBlock: on a standard output made
// non-blocking by another process after Isolate (outside the runtime's
// poller: see fullPipe), a full pipe failed the go-sdk's write with
// EAGAIN, part of its line out or none. The SDK takes a failed write as a
// broken connection for good (jsonrpc2's writeErr): it cancels every call
// under way and answers nothing more, while the client, which was only
// slow to read, is still there. A blocking output would have waited; the
// writer now waits too, and writes the line whole.
func TestReview18eSDKWriteWaitsOutWouldBlock(t *testing.T) {
	r, out, filled := fullPipe(t)
	w := newWriter(out, newSession())
	// Longer than the pipe: it goes out in parts whatever the timing.
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("a", 256<<10) + `"}}` + "\n")
	got := readLater(r)
	done := make(chan struct{})
	var n int
	var err error
	go func() {
		defer close(done)
		n, err = w.Write(line)
	}()
	waitDone(t, done, "the go-sdk's write")
	if err != nil || n != len(line) {
		t.Errorf("the go-sdk's write on a full pipe that drains: (%d, %v), want (%d, nil)", n, err, len(line))
	}
	out.Close()
	if b := <-got; !bytes.Equal(b[min(filled, len(b)):], line) {
		t.Errorf("after the %d bytes that filled the pipe, %d bytes came out, want the line's %d", filled, len(b)-filled, len(line))
	}
}

// TestReview18eAnswerWaitsOutWouldBlock: an answer of the transport's own
// met the same full pipe. When nothing of it went out, it was lost (the
// client waits for it for good); when part of it went out, the line was
// left cut, the go-sdk's next line was written after the cut part, making
// one line of two that the client cannot read (the SDK's answer lost as
// well), and every later answer of the transport's was dropped. The
// client was only slow: the writer now waits, as on a blocking output,
// and every line comes out whole and in order.
func TestReview18eAnswerWaitsOutWouldBlock(t *testing.T) {
	for _, tc := range []struct {
		name string
		room int // bytes read off the full pipe before the answer
	}{
		{"nothing_written", 0},
		{"cut_inside_the_line", 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, out, filled := fullPipe(t)
			w := newWriter(out, newSession())
			if _, err := io.ReadFull(r, make([]byte, tc.room)); err != nil {
				t.Fatal(err)
			}
			lerr := &lineError{code: codeBusy, reason: "first"}
			for range 400 { // some 16 KB: more than the room
				lerr.ids = append(lerr.ids, []byte(`"a-long-request-id-of-some-forty-bytes"`))
			}
			first := errorLine(lerr)
			sdk := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
			next := errorLine(&lineError{code: codeBusy, reason: "next", id: []byte(`"next"`)})
			got := readLater(r)
			done := make(chan struct{})
			go func() {
				defer close(done)
				w.answer(first)
				if _, err := w.Write(sdk); err != nil {
					t.Errorf("the go-sdk's write after the answer: %v", err)
				}
				w.answer(next)
			}()
			waitDone(t, done, "the answer")
			out.Close()
			b := <-got
			want := slicesConcat(first, sdk, next)
			if rest := b[min(filled-tc.room, len(b)):]; !bytes.Equal(rest, want) {
				t.Errorf("output after the pipe drained:\n%.300s\n...\nwant the answer whole, the go-sdk's line, then the next answer (%d bytes, got %d)", rest, len(want), len(rest))
			}
		})
	}
}

// TestReview18eCloseEndsTheWait: a writer waiting for a full pipe that is
// never read stops when the transport is closed (at the end of the
// session), as the write fails then.
func TestReview18eCloseEndsTheWait(t *testing.T) {
	_, out, _ := fullPipe(t)
	w := newWriter(out, newSession())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.answer(errorLine(parseError("never read")))
	}()
	time.Sleep(50 * time.Millisecond)
	w.Close()
	waitDone(t, done, "the answer after Close")
}

// cutOnce takes room bytes, fails the write under way then with EPIPE,
// and takes every later write: what it took is in b.
type cutOnce struct {
	room int
	cut  bool
	b    bytes.Buffer
}

func (c *cutOnce) Write(p []byte) (int, error) {
	if !c.cut && len(p) > c.room {
		c.cut = true
		c.b.Write(p[:c.room])
		return c.room, syscall.EPIPE
	}
	return c.b.Write(p)
}

func (c *cutOnce) Close() error { return nil }

// TestReview18eCutAnswerBreaksOutput: an answer of the transport's cut
// part-way by an error other than EAGAIN (EPIPE: the client closed its
// end) is not tried again, and the output is taken for gone: later
// answers of the transport's are dropped. (It replaces review18b's
// TestWriterCutAnswerBreaksOutput, which cut on EAGAIN.)
func TestReview18eCutAnswerBreaksOutput(t *testing.T) {
	out := &cutOnce{room: 10}
	w := newWriter(out, newSession())
	w.answer(errorLine(parseError("cut")))
	w.answer(errorLine(parseError("after")))
	if got := out.b.String(); len(got) != 10 {
		t.Errorf("output %q: want the 10 bytes of the cut answer alone", got)
	}
}

func slicesConcat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

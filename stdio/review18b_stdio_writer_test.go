//go:build linux

package stdio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
)

// fullPipe returns a pipe whose write end is a blocking *os.File (as
// Isolate makes it from a blocking descriptor: outside the runtime's
// poller) that another process sharing its open file description has since
// made non-blocking, as some runtimes (node's, say) do with the standard
// streams they share; and fills it, so that a write fails with EAGAIN
// until the reader reads. It returns the bytes it wrote.
func fullPipe(t *testing.T) (r, w *os.File, filled int) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	if err := syscall.SetNonblock(p[1], true); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{4096, 1} {
		chunk := make([]byte, size)
		for {
			n, err := syscall.Write(p[1], chunk)
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			filled += n
		}
	}
	return r, w, filled
}

// TestWriterTransientFailureLosesOneAnswer: an answer of the transport's
// own that could not be written at all (EAGAIN on a full pipe made
// non-blocking by another process, nothing of it out) took the output for
// gone for good: every later answer of the transport's was dropped, while
// the go-sdk's own lines still went out, so that once the client had read
// its output, a request refused as busy, or a line refused, got no answer
// ever (and the client waits for it). Nothing was cut: the answer is lost
// alone, and the next is written. (A write that cut a line short still
// ends the transport's answers: the rest of that line never comes.)
func TestWriterTransientFailureLosesOneAnswer(t *testing.T) {
	r, out, filled := fullPipe(t)
	w := newWriter(out, newSession())
	lost := errorLine(&lineError{code: codeBusy, reason: "lost", id: []byte(`"lost"`)})
	w.answer(lost)
	if _, err := io.ReadFull(r, make([]byte, filled)); err != nil {
		t.Fatal(err)
	}
	next := errorLine(&lineError{code: codeBusy, reason: "next", id: []byte(`"next"`)})
	w.answer(next)
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")); err != nil {
		t.Fatalf("the go-sdk's write after the pipe drained: %v", err)
	}
	out.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, next) {
		t.Errorf("output after a transient failure of an answer that wrote nothing:\n%s\nwant the next answer first:\n%s", got, next)
	}
	if bytes.Contains(got, []byte(`"lost"`)) {
		t.Errorf("the answer whose write failed came out after all:\n%s", got)
	}
}

// TestWriterCutAnswerBreaksOutput: an answer of the transport's whose
// write fails part-way (a batch answer larger than the room left in the
// pipe) leaves a line cut for good: later answers of the transport's are
// dropped, as after a failed write of the go-sdk's.
func TestWriterCutAnswerBreaksOutput(t *testing.T) {
	r, out, filled := fullPipe(t)
	w := newWriter(out, newSession())
	// Room for one page, and an answer of more.
	if _, err := io.ReadFull(r, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	lerr := &lineError{code: codeBusy, reason: "cut"}
	for range 400 {
		lerr.ids = append(lerr.ids, []byte(`"a-long-request-id-of-some-forty-bytes"`))
	}
	big := errorLine(lerr)
	w.answer(big)
	if _, err := io.ReadFull(r, make([]byte, filled-4096)); err != nil {
		t.Fatal(err)
	}
	w.answer(errorLine(&lineError{code: codeBusy, reason: "after", id: []byte(`"after"`)}))
	out.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= len(big) {
		t.Fatalf("%d bytes of an answer of %d came out, want it cut", len(got), len(big))
	}
	if bytes.Contains(got, []byte(`"after"`)) {
		t.Errorf("an answer was written after a line was cut:\n...%s", got[max(0, len(got)-200):])
	}
}

//go:build linux

package stdio

import (
	"errors"
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

// TestWriterTransientFailureLosesOneAnswer and TestWriterCutAnswerBreaksOutput
// stood here: a write that would block on fullPipe lost its answer, or cut
// it and broke the output. Since review18e the writer waits such a write
// out (TestReview18eAnswerWaitsOutWouldBlock); a cut by any other error
// still breaks the output (TestReview18eCutAnswerBreaksOutput).

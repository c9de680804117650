// Package recheck holds the ResponseWriter of an event stream whose
// caller is judged again before each write: a stream lives as long as its
// client holds it, and must not outlive the caller's right to it (a token
// revoked or expired since it opened).
package recheck

import (
	"net/http"
	"sync/atomic"
)

// Writer passes writes on to ResponseWriter while Check reports true,
// asked before each write; once it reports false, nothing more is written
// or flushed, and Write returns Err. Check ends the stream's request (its
// context) as it sees fit.
type Writer struct {
	http.ResponseWriter
	Check func() bool
	Err   error
	gone  atomic.Bool
}

func (w *Writer) Write(p []byte) (int, error) {
	if w.gone.Load() || !w.Check() {
		w.gone.Store(true)
		return 0, w.Err
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes what was written, unless the stream was refused since.
func (w *Writer) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.gone.Load() {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

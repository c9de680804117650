package gateway

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// lateDeadlineWriter is a ResponseWriter whose Write blocks until the
// write guard starts setting its write deadline, as a write to a client
// that resumed reading at that very moment completes; SetWriteDeadline
// then stalls a little (the timer's goroutine preempted), and notes
// whether the handler had returned meanwhile: net/http's HTTP/2
// responseWriter has given back its state by then, and its
// SetWriteDeadline dereferences nil (a panic on the timer's goroutine,
// which ends the process); HTTP/1's sets the deadline of the connection,
// which may serve the next request by then.
type lateDeadlineWriter struct {
	entered  chan struct{}
	returned atomic.Bool
	late     atomic.Bool
	calls    atomic.Int64
}

func (w *lateDeadlineWriter) Header() http.Header { return http.Header{} }
func (w *lateDeadlineWriter) WriteHeader(int)     {}

func (w *lateDeadlineWriter) Write(p []byte) (int, error) {
	<-w.entered
	return len(p), nil
}

func (w *lateDeadlineWriter) SetWriteDeadline(time.Time) error {
	if w.calls.Add(1) == 1 {
		close(w.entered)
	}
	time.Sleep(100 * time.Millisecond)
	if w.returned.Load() {
		w.late.Store(true)
	}
	return nil
}

// TestReview21GuardNotAfterHandler checks that the write guard never acts
// on a ResponseWriter after the handler has returned: a handler that ends
// its guard (a call's close, a batch's or an own answer's watch) waits for
// a check that is setting the deadline.
func TestReview21GuardNotAfterHandler(t *testing.T) {
	const timeout = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		run  func(w http.ResponseWriter)
	}{
		{"call", func(w http.ResponseWriter) {
			c := &upstreamCall{timeout: timeout, origin: time.Now(), cancel: func(error) {}}
			c.out.timeout, c.out.origin, c.out.w = timeout, c.origin, w
			c.timer.Store(time.AfterFunc(timeout, c.expire))
			c.out.write([]byte("answer"))
			c.stop()
		}},
		{"watch", func(w http.ResponseWriter) {
			g := &writeGuard{w: w, timeout: timeout, origin: time.Now()}
			stop := g.watch()
			g.write([]byte("answer"))
			stop()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &lateDeadlineWriter{entered: make(chan struct{})}
			tc.run(w)
			w.returned.Store(true)
			time.Sleep(200 * time.Millisecond)
			if w.late.Load() {
				t.Fatal("the write guard set the write deadline of a ResponseWriter after the handler had returned")
			}
		})
	}
}

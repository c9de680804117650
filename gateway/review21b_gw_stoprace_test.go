package gateway

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stopRaceWriter counts the write deadlines set on it after stopped.
type stopRaceWriter struct {
	stopped atomic.Bool
	late    atomic.Int64
	set     atomic.Int64
}

func (w *stopRaceWriter) Header() http.Header         { return http.Header{} }
func (w *stopRaceWriter) WriteHeader(int)             {}
func (w *stopRaceWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *stopRaceWriter) SetWriteDeadline(time.Time) error {
	w.set.Add(1)
	if w.stopped.Load() {
		w.late.Add(1)
	}
	return nil
}

// TestReview21bGuardCheckStopRace races a write guard's checks, each
// finding a write overdue, with its stop, many times: no check sets a
// write deadline once stop has returned (the handler may have returned by
// then), and stop never waits for long.
func TestReview21bGuardCheckStopRace(t *testing.T) {
	w := &stopRaceWriter{}
	for i := range 2000 {
		w.stopped.Store(false)
		g := &writeGuard{w: w, timeout: time.Nanosecond, origin: time.Now()}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for j := 0; j < 50 && !w.stopped.Load(); j++ {
					g.begin() // a write in progress, overdue at once
					g.check()
				}
			})
		}
		if i%2 == 0 {
			time.Sleep(time.Duration(i%7) * time.Microsecond)
		}
		start := time.Now()
		g.stop()
		if d := time.Since(start); d > time.Second {
			t.Fatalf("stop waited %v for a check", d)
		}
		w.stopped.Store(true)
		wg.Wait()
	}
	if n := w.late.Load(); n != 0 {
		t.Fatalf("%d write deadlines set after the guard's stop returned (of %d)", n, w.set.Load())
	}
	if w.set.Load() == 0 {
		t.Fatal("no check set a write deadline: the race was not run")
	}
}

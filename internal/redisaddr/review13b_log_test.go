package redisaddr

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestThrottledConcurrentLines: two go-redis lines logged at once give one
// record. The logger read the clock before taking its lock, so a line that
// read the clock first but took the lock second saw the last record in its
// future, took it for a clock stepped back, and wrote a second record: in
// a burst of failed dials from many goroutines (Redis down under load),
// each such inversion wrote one more record.
func TestThrottledConcurrentLines(t *testing.T) {
	var (
		buf     bytes.Buffer
		mu      sync.Mutex // buf is written by two goroutines
		calls   atomic.Int32
		entered = make(chan struct{})
		release = make(chan struct{})
	)
	t0 := time.Unix(1000, 0)
	now := func() time.Time {
		if calls.Add(1) == 1 {
			// The first line has read the clock; it goes on once the second
			// line is through (or, when the second waits for it, after
			// 200 ms).
			close(entered)
			select {
			case <-release:
			case <-time.After(200 * time.Millisecond):
			}
			return t0
		}
		return t0.Add(time.Millisecond)
	}
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil)
	l := newThrottled(slog.New(h), 10*time.Second, now)
	ctx := context.Background()

	var wg sync.WaitGroup
	wg.Go(func() { l.Printf(ctx, "first") })
	<-entered
	second := make(chan struct{})
	wg.Go(func() {
		l.Printf(ctx, "second")
		close(second)
	})
	select {
	case <-second:
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(buf.String(), `msg="redis client"`); n != 1 {
		t.Errorf("two lines 1 ms apart, 10 s interval: %d records, want 1:\n%s", n, buf.String())
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

package redisaddr

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// LogTo sends go-redis's own log lines to logger instead of the process's
// standard error, as Warn records with the line in "redis" and at most one
// record per interval: while Redis is down, go-redis logs a failed dial for
// every refused decision, which would bury the server's own log. The
// record after a quiet spell counts the lines dropped before it in
// "suppressed".
//
// go-redis has one logger per process (redis.SetLogger), so LogTo is for
// main packages; it leaves the logger alone when logger is nil.
func LogTo(logger *slog.Logger, interval time.Duration) {
	if logger == nil {
		return
	}
	redis.SetLogger(newThrottled(logger, interval, time.Now))
}

// throttled is a go-redis logger that writes at most one record per
// interval.
type throttled struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	last       time.Time // of the last record written; zero before the first
	suppressed int       // lines dropped since it
}

func newThrottled(logger *slog.Logger, interval time.Duration, now func() time.Time) *throttled {
	return &throttled{log: logger, interval: interval, now: now}
}

// Printf logs one go-redis line, or counts it when the last record is
// less than the interval old. The clock is read under the lock: read
// before it, a line that took the lock after a later one would see the
// last record in its future and write another.
func (t *throttled) Printf(ctx context.Context, format string, v ...any) {
	t.mu.Lock()
	now := t.now()
	if !t.last.IsZero() && now.Sub(t.last) < t.interval && now.Sub(t.last) >= 0 {
		t.suppressed++
		t.mu.Unlock()
		return
	}
	n := t.suppressed
	t.last, t.suppressed = now, 0
	t.mu.Unlock()
	attrs := []any{"redis", fmt.Sprintf(format, v...)}
	if n > 0 {
		attrs = append(attrs, "suppressed", n)
	}
	t.log.Warn("redis client", attrs...)
}

package redisaddr

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestThrottledLogger(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := newThrottled(slog.New(slog.NewTextHandler(&buf, nil)), 10*time.Second, func() time.Time { return now })
	ctx := context.Background()
	l.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %v", 1, "refused")
	for range 5 {
		now = now.Add(time.Second)
		l.Printf(ctx, "failed to dial %d", 2)
	}
	now = now.Add(5 * time.Second) // 10 s after the first record
	l.Printf(ctx, "failed again")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d records, want 2 (the rest suppressed):\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], `level=WARN msg="redis client" redis="redis: connection pool: failed to dial after 1 attempts: refused"`) || strings.Contains(lines[0], "suppressed") {
		t.Errorf("first record: %s", lines[0])
	}
	if !strings.Contains(lines[1], `redis="failed again" suppressed=5`) {
		t.Errorf("second record: %s", lines[1])
	}
	// A clock stepped back does not silence the logger for the step.
	now = now.Add(-time.Hour)
	l.Printf(ctx, "after the step")
	if !strings.Contains(buf.String(), `redis="after the step"`) {
		t.Errorf("a line after the clock stepped back was dropped:\n%s", buf.String())
	}
}

func TestLogToNil(t *testing.T) {
	LogTo(nil, time.Second) // must not panic or replace go-redis's logger with nil
}

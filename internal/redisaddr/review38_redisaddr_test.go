package redisaddr

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestReview38ThrottledEdges pins the go-redis log throttle at its edges
// with a clock the test sets: a line at the very instant of the last
// record is suppressed (a burst of failed dials often reads one clock
// tick), and a single suppressed line is counted on the next record
// ("suppressed=1"), so that the log never hides that lines were dropped.
func TestReview38ThrottledEdges(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Unix(1000, 0)
	at := t0
	l := newThrottled(slog.New(slog.NewTextHandler(&buf, nil)), 10*time.Second, func() time.Time { return at })
	ctx := context.Background()
	l.Printf(ctx, "dial %d", 1)
	l.Printf(ctx, "dial %d", 2) // the same instant
	at = t0.Add(10 * time.Second)
	l.Printf(ctx, "dial %d", 3)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `redis="dial 1"`) || strings.Contains(lines[0], "suppressed") ||
		!strings.Contains(lines[1], `redis="dial 3"`) || !strings.Contains(lines[1], "suppressed=1") {
		t.Errorf("records:\n%s\nwant two: dial 1, then dial 3 with suppressed=1", buf.String())
	}
}

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

// TestReview38DatabaseNumberRange pins the database numbers a --redis URL
// may name, as its doc says: 0 to 2147483647 in decimal digits only, the
// largest included and one more refused (Redis's own bound is lower, and
// says so when the client selects it; what is refused here never reaches
// it).
func TestReview38DatabaseNumberRange(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "2147483646": true, "2147483647": true,
		"2147483648": false, "4294967295": false, "4294967296": false, "": false, "+1": false, "-1": false,
	} {
		if got := dbNumber(s); got != want {
			t.Errorf("dbNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

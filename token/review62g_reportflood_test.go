package token_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview62gReportKeepsInFlightBound: MaxInFlight "bounds the requests
// to the endpoint under way at once ...: a flood of made-up tokens, each
// unknown to the cache, does not become a flood of requests to the
// authorization server or of waiting goroutines here". Since 9c4d312 a
// failed request leaves the books before its ErrorHandler runs; a handler
// that is slow (the default one, a warning on slog.Default, on a standard
// error nobody drains) no longer counts: every made-up token's lookup
// asks the endpoint and then waits, with its request's goroutine, for the
// handler. With MaxInFlight 1 and one report under way, a lookup of
// another token asked the endpoint and waited until its context ended,
// instead of failing at once without asking, as it did before.
func TestReview62gReportKeepsInFlightBound(t *testing.T) {
	e := newIntroEndpoint(t)
	e.setStatus(http.StatusInternalServerError)
	release := make(chan struct{})
	var reports atomic.Int32
	in, _ := newIntrospector(t, e, &clock{}, func(c *token.IntrospectionConfig) {
		c.MaxInFlight = 1
		c.ErrorHandler = func(error) {
			reports.Add(1)
			<-release
		}
	})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(release)
		wg.Wait()
	})
	wg.Go(func() { in.Introspect(context.Background(), tokAnn) }) //nolint:errcheck // fails
	for reports.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	const other = "made-up-token-1"
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := in.Introspect(ctx, other)
	if n := e.count(other); n != 0 || !errors.Is(err, token.ErrIntrospectionFailed) ||
		!strings.Contains(err.Error(), "MaxInFlight") {
		t.Errorf("a lookup of another token while one failure's report runs, MaxInFlight 1: %v after %v, "+
			"the endpoint asked %d times; want a failure at once naming MaxInFlight, not asked", err,
			time.Since(start).Round(time.Millisecond), n)
	}
}

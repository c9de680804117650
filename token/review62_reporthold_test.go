package token_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview62ReportDoesNotHoldLaterLookups: an Introspector's
// ErrorHandler was called while its failed request was still under way in
// the Introspector's books: a handler that blocked (a log shipper that
// stalled) made every later lookup of the token join the failed request
// and wait for the handler, and kept a place of MaxInFlight taken. The
// lookups that waited for the request wait for the handler, as
// documented; a later one asks the endpoint again.
func TestReview62ReportDoesNotHoldLaterLookups(t *testing.T) {
	e := newIntroEndpoint(t)
	e.setStatus(http.StatusInternalServerError)
	release := make(chan struct{})
	var reports atomic.Int32
	in, _ := newIntrospector(t, e, &clock{}, func(c *token.IntrospectionConfig) {
		c.ErrorHandler = func(error) {
			if reports.Add(1) == 1 {
				<-release
			}
		}
	})
	first := make(chan error, 1)
	go func() {
		_, _, err := in.Introspect(context.Background(), tokAnn)
		first <- err
	}()
	defer func() {
		close(release)
		if err := <-first; !errors.Is(err, token.ErrIntrospectionFailed) {
			t.Errorf("the first lookup: %v, want ErrIntrospectionFailed", err)
		}
	}()
	for reports.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _, err := in.Introspect(ctx, tokAnn)
	if !errors.Is(err, token.ErrIntrospectionFailed) || ctx.Err() != nil {
		t.Errorf("a later lookup while the handler blocks: %v (its context: %v), want the endpoint's failure", err, ctx.Err())
	}
	if n := e.count(tokAnn); n != 2 {
		t.Errorf("the endpoint was asked %d times, want 2", n)
	}
}

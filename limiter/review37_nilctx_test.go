package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview37NilContext pins what AllowAt and Refund document of a nil
// ctx: it is taken as context.Background, so a store that reads its ctx
// (as a network store does) gets one it can use, and neither call panics
// nor fails for it.
func TestReview37NilContext(t *testing.T) {
	s := &ctxStore{}
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Minute},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context // nil
	d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1})
	if !d.Allowed || d.Err != nil {
		t.Fatalf("AllowAt(nil ctx) = allowed %t, err %v; want allowed, no error", d.Allowed, d.Err)
	}
	if err := l.Refund(ctx, t0, d); err != nil {
		t.Errorf("Refund(nil ctx) = %v, want nil", err)
	}
	if len(s.elapsed) != 1 {
		t.Errorf("the store carried out %d refunds, want 1", len(s.elapsed))
	}
}

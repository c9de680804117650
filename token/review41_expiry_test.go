package token_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/token"
)

// TestReview41IntrospectorDropsExpired: storing an answer first drops the
// cached answers that have expired, the soonest first, and only those: ann
// (cached at t for a minute) is gone when carl is stored at t+61s, bob
// (cached at t+30s) is still served from the cache, and ann is asked about
// again.
func TestReview41IntrospectorDropsExpired(t *testing.T) {
	e := newIntroEndpoint(t)
	carl := "opq_carl_3Jd8"
	e.answer(carl, introAnswer(t, func(m map[string]any) { m["sub"] = "carl" }))
	clk := &clock{now: testNow}
	i, _ := newIntrospector(t, e, clk, func(c *token.IntrospectionConfig) { c.CacheTTL = time.Minute })
	ctx := context.Background()
	for _, step := range []struct {
		tok     string
		advance time.Duration
	}{
		{tokAnn, 30 * time.Second},
		{tokBob, 31 * time.Second},
		{carl, 0},
		{tokBob, 0},
		{carl, 0},
		{tokAnn, 0},
	} {
		if _, _, err := i.Introspect(ctx, step.tok); err != nil {
			t.Fatalf("%s: %v", step.tok, err)
		}
		clk.advance(step.advance)
	}
	got := []int{e.count(tokAnn), e.count(tokBob), e.count(carl)}
	if diff := cmp.Diff([]int{2, 1, 1}, got); diff != "" {
		t.Errorf("requests for ann, bob, carl (-want +got):\n%s", diff)
	}
}

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview25SpendCapHeadingIsTrue: the walkthrough's spend cap is a
// bucket (GCRA) of 100.00 per user that refills continuously at 100.00 an
// hour, so within one hour a user can refund 100.00 at once and, as it
// refills, nearly 100.00 more. The demo printed "Spend cap: 100.00
// refunded per user per hour", which it is not; its heading must say what
// the limit does.
func TestReview25SpendCapHeadingIsTrue(t *testing.T) {
	lim, err := limiter.New(demoLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	refund := func(at time.Time, amount float64) bool {
		return lim.AllowAt(context.Background(), at, limiter.Request{
			User: "ada@example.com", Tool: "trigger_refund", Write: true, Calls: 1, Cost: amount,
		}).Allowed
	}
	if !refund(t0, 100) || !refund(t0.Add(59*time.Minute), 98) {
		t.Fatal("100.00, then 98.00 59 minutes later: want both allowed (the bucket refills)")
	}

	var out strings.Builder
	if err := run(filepath.Join(t.TempDir(), "audit.db"), &out); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(out.String(), "\nSpend cap")
	if i < 0 {
		t.Fatalf("no spend cap heading in the output:\n%s", out.String())
	}
	heading, _, _ := strings.Cut(out.String()[i+1:], "\n")
	if want := "Spend cap: a budget of 100.00 per user, refilling at 100.00 an hour"; heading != want {
		t.Errorf("heading %q, want %q (198.00 passed within an hour above)", heading, want)
	}
}

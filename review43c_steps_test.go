package mcpguard_test

import (
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview43cInnerLimitPolicyRefusalGivesOuterBack: a Limit step whose
// policy refuses a call that an outer Limit step admitted (here the write
// is off its allowlist) gives back what the outer step charged: the call
// never ran, so the caller's one call an hour is still theirs.
func TestReview43cInnerLimitPolicyRefusalGivesOuterBack(t *testing.T) {
	m := must(t)
	p := stepPolicy(t)
	strict := basePolicy(false)
	strict.WriteAllowlist = []string{"wipe"}
	ps, err := policy.New(strict)
	if err != nil {
		t.Fatal(err)
	}
	outerLim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	innerLim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{Logger: quiet}
	var s stub
	h := mcpguard.Chain(
		mcpguard.Authenticate(fixed(bob)),
		m(mcpguard.Limit(outerLim, p, opts)),
		m(mcpguard.Limit(innerLim, ps, opts)),
	)(s.handle)
	if got := codeOfCall(t, h, req("add_note", `{"text":"x"}`)); got != "WRITE_NOT_ALLOWED" || s.ran != 0 {
		t.Fatalf("write the inner policy refuses: %q, handler ran %d times; want WRITE_NOT_ALLOWED", got, s.ran)
	}
	if got := codeOfCall(t, h, req("echo", `{"text":"x"}`)); got != "" || s.ran != 1 {
		t.Errorf("next call, within the outer rate of 1 as the refused one ran nothing: %q, handler ran %d times",
			got, s.ran)
	}
}

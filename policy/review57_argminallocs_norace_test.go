//go:build !race

// The race detector allocates on its own, so allocation counts are only
// checked without it; this file is not built under -race (nothing skips).

package policy_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57ArgLimitMinNoAlloc: Decide does not allocate on the allowed
// path with a Min either.
func TestReview57ArgLimitMinNoAlloc(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Min: review57Min(0), Max: 100}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sam := &policy.Principal{Subject: "sam"}
	var args policy.Args = review57Args{50, "50"}
	if n := testing.AllocsPerRun(100, func() {
		if !p.Decide(sam, "refund", args).Allowed() {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Errorf("Decide allocates %v times per call; want 0", n)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview65hDoubledRateFitsInt: each session's request cap and the
// stranger cap are twice --rate, computed as 2 * cfg.rate in int. On a
// 32-bit platform (GOARCH=386, arm) any --rate from 2^30 to maxCap
// (2^31-1), which checkFlags accepts, overflowed the doubling to a
// negative cap, and newShop failed with the limiter's complaint about a
// "rate -2/1m0s per session" instead of building the shop that the flag
// check promised. On 64-bit platforms it cannot fail.
func TestReview65hDoubledRateFitsInt(t *testing.T) {
	for _, rate := range []int{1 << 30, maxCap} {
		cfg := defaultConfig()
		cfg.gateway, cfg.rate = "http://127.0.0.1:1", rate
		if err := checkFlags(cfg); err != nil {
			t.Fatalf("checkFlags(--rate %d) = %v, want nil", rate, err)
		}
		s, err := newShop(cfg, &strings.Builder{}, nil)
		if err != nil {
			t.Errorf("newShop(--rate %d) = %v, want a shop", rate, err)
			continue
		}
		s.Close()
	}
}

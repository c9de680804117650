package main

import (
	"strings"
	"testing"
)

// TestReview22HugeCapsAreUsageErrors: --rate and --max-in-flight were
// checked only from below. --rate 9223372036854775807 made the per-session
// request cap (twice the rate) overflow to -2, and the shop exited 1 with
// the limiter's "rate -2/1m0s per session for tool \"GET /api/auth/me\"",
// naming neither the flag nor anything the operator wrote; any --rate from
// 2^62 did the same. --max-in-flight above 2147483647 (the limiter's most
// slots) exited 1 with "max 9.223372036854776e+18 is not a whole number of
// slots". Both are command lines that cannot work: exit 2, naming the flag.
func TestReview22HugeCapsAreUsageErrors(t *testing.T) {
	base := []string{"--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"rate_max_int64", []string{"--rate", "9223372036854775807"}, "--rate"},
		{"rate_2_62", []string{"--rate", "4611686018427387904"}, "--rate"},
		{"rate_above_int32", []string{"--rate", "2147483648"}, "--rate"},
		{"in_flight_max_int64", []string{"--max-in-flight", "9223372036854775807"}, "--max-in-flight"},
		{"in_flight_above_int32", []string{"--max-in-flight", "2147483648"}, "--max-in-flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runBinary(t, append(tc.args, base...)...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("shop %q: exit %d, output %q; want exit 2 naming %s", tc.args, code, out, tc.want)
			}
		})
	}
	// The largest values allowed build a shop.
	cfg := defaultConfig()
	cfg.gateway, cfg.rate, cfg.inFlight = "http://127.0.0.1:1", maxCap, maxCap
	if err := checkFlags(cfg); err != nil {
		t.Fatalf("checkFlags(rate and in-flight %d) = %v, want nil", maxCap, err)
	}
	s, err := newShop(cfg, &strings.Builder{}, nil)
	if err != nil {
		t.Fatalf("newShop(rate and in-flight %d) = %v, want a shop", maxCap, err)
	}
	s.Close()
}

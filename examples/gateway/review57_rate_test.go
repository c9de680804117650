package main

import (
	"strings"
	"testing"
)

// TestReview57RateNumberPlain: --rate's N was read by strconv.ParseFloat,
// which takes "1_0" as 10, "0x1p4" as 16 and "1e2" as 100: a rate other
// than the one a reader of the flag sees. N is digits with an optional
// fraction now; anything else is a usage error naming the flag.
func TestReview57RateNumberPlain(t *testing.T) {
	for _, v := range []string{"1_0/1m", "0x1p4/1m", "1e2/1m", "+5/1m", "Inf/1m", "5./1m", ".5/1m"} {
		_, err := runAtStart(t, nil, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--rate", v)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--rate") {
			t.Errorf("--rate %s: %v (exit status %d), want a usage error naming --rate", v, err, exitCode(err))
		}
	}
	for _, v := range []string{"60/1m", "0.5/1s", "10/1h"} {
		_, err := runAtStart(t, nil, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--rate", v, "--path", "nopath")
		if err == nil || !strings.Contains(err.Error(), "--path") {
			t.Errorf("--rate %s: %v, want it taken (the error of the --path checked after it)", v, err)
		}
	}
}

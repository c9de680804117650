package main

import (
	"strings"
	"testing"
)

// TestReview56DemoRecordsSayWhy: the seed's demo prints the burst
// session's audit records, the refused one with its reason ("detail":
// "Session 'demo-burst-session' exceeded its rate/spend cap ..."), so
// that the trail shown says why the call was refused, not only that it
// was. The demo printed the records without their detail; it now prints
// it: "" for the allowed calls, the guard's reason for the refusal.
func TestReview56DemoRecordsSayWhy(t *testing.T) {
	code, out, errOut := runCLI(t, "demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := burstSessionLine.FindAllString(out, -1)
	if len(got) != 6 {
		t.Fatalf("%d audit lines of the burst session, want 6:\n%s", len(got), out)
	}
	if !strings.Contains(got[5], `"code":"RATE_LIMIT_EXCEEDED","detail":"rate limit per session reached (5 calls per 1m)"`) {
		t.Errorf("the refused call's record does not say why:\n%s", got[5])
	}
	if !strings.Contains(got[0], `"code":"","detail":""`) {
		t.Errorf("an allowed call's record:\n%s", got[0])
	}
}

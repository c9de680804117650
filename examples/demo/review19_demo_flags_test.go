package main

import (
	"strings"
	"testing"
)

// TestReview19EmptyAuditPathIsAUsageError: -audit given with an empty
// value (`-audit "$AUDIT"` with AUDIT unset) meant "keep the trail" and
// got a temporary database, removed at exit, silently: it is a usage
// error now (exit 2), found before the walkthrough starts.
func TestReview19EmptyAuditPathIsAUsageError(t *testing.T) {
	for _, args := range [][]string{{"-audit", ""}, {"-audit="}, {"--audit", ""}} {
		var stdout, stderr strings.Builder
		code := demo(args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "-audit") {
			t.Errorf("demo %q: exit %d, stderr %q; want exit 2 naming -audit", args, code, stderr.String())
		}
		if stdout.String() != "" {
			t.Errorf("demo %q ran the walkthrough:\n%s", args, stdout.String())
		}
	}
}

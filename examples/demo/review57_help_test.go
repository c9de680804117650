package main

import (
	"strings"
	"testing"
)

// TestReview57HelpPrintsUsage pins the package doc's word on -h: unlike
// any other argument, which is refused with status 2, it prints the usage
// on stderr and exits 0, without running the walkthrough.
func TestReview57HelpPrintsUsage(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}} {
		var stdout, stderr strings.Builder
		code := demo(args, &stdout, &stderr)
		if code != 0 || !strings.Contains(stderr.String(), "Usage of demo") || !strings.Contains(stderr.String(), "-audit") {
			t.Errorf("demo %q: exit %d, stderr %q; want exit 0 with the usage", args, code, stderr.String())
		}
		if stdout.String() != "" {
			t.Errorf("demo %q ran the walkthrough:\n%s", args, stdout.String())
		}
	}
}

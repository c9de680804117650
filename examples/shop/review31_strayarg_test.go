package main

import (
	"strings"
	"testing"
)

// TestReview31StrayAssignmentNotShown: an assignment of one of the shop's
// secret variables put after the command (SHOP_MCP_CONFIRM_KEY=...) was
// echoed whole in "unexpected arguments": the stray-argument rule hid only
// "@" and "password". The example binaries now share one rule
// (internal/cliarg), which hides keys, tokens and secrets too.
func TestReview31StrayAssignmentNotShown(t *testing.T) {
	for _, arg := range []string{"SHOP_MCP_CONFIRM_KEY=c2VjcmV0c2VjcmV0", "SHOP_MCP_AUDIT_KEY=c2VjcmV0c2VjcmV0"} {
		var out strings.Builder
		if code := run([]string{"--gateway", "http://127.0.0.1:1", arg}, &out, &out); code != 2 {
			t.Errorf("%s: exit %d, want 2; output:\n%s", arg, code, out.String())
		}
		if !strings.Contains(out.String(), "unexpected arguments") {
			t.Errorf("%s: output does not say \"unexpected arguments\":\n%s", arg, out.String())
		}
		if strings.Contains(out.String(), "c2VjcmV0c2VjcmV0") {
			t.Errorf("%s: output shows the key:\n%s", arg, out.String())
		}
	}
}

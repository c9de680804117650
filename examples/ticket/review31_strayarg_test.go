package main

import (
	"strings"
	"testing"
)

// TestReview31StrayAssignmentNotShown: an assignment of the ticket
// server's token or audit key put where the command goes, or after it, was
// echoed whole ("unknown command", "unexpected arguments"): the rule hid
// only "@" and "password". The example binaries now share one rule
// (internal/cliarg), which hides keys, tokens and secrets too.
func TestReview31StrayAssignmentNotShown(t *testing.T) {
	for _, args := range [][]string{
		{"TICKET_MCP_TOKEN=tok-s3cretvalue"},
		{"demo", "TICKET_MCP_AUDIT_KEY=tok-s3cretvalue"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if strings.Contains(errOut, "tok-s3cretvalue") {
			t.Errorf("%q: the secret is echoed: %s", args, errOut)
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview30FinalUnknownCommandNotEchoed: a URL given where the command
// goes (its flag forgotten: --audit-postgres, --redis) is not echoed whole
// in the "unknown command" error, as a stray argument after the command is
// not: it may hold a password.
func TestReview30FinalUnknownCommandNotEchoed(t *testing.T) {
	for _, arg := range []string{
		"postgres://audit:s3cretpw@db.example/audit",
		"redis://default:s3cretpw@127.0.0.1:6379",
	} {
		code, _, errOut := runCLI(t, arg, "serve-http")
		if code != 2 {
			t.Errorf("%s: exit %d, want 2", arg, code)
		}
		if strings.Contains(errOut, "s3cretpw") {
			t.Errorf("the password is echoed: %s", errOut)
		}
		if !strings.Contains(errOut, "unknown command") {
			t.Errorf("no unknown command error: %s", errOut)
		}
	}
	// A plain one is still quoted.
	if _, _, errOut := runCLI(t, "serve-htp"); !strings.Contains(errOut, `unknown command "serve-htp"`) {
		t.Errorf("a plain unknown command is not quoted: %s", errOut)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview32FlagValueNotShown: what the flag package refuses was printed
// whole: a URL with its password typed into serve-http's --port, or put
// after two dashes before the command (a flag not defined, named by it).
// The global and per-command flag sets now parse with cliarg.Parse, which
// shows it as cliarg.Shown does; the usage follows and the exit status
// stays 2.
func TestReview32FlagValueNotShown(t *testing.T) {
	const pw = "postgres://app:s3cret@127.0.0.1/audit"
	for _, tc := range []struct {
		args  []string
		usage string
	}{
		{[]string{"--" + pw, "tools"}, "usage: ticket"},
		{[]string{"serve-http", "--port", pw}, "Usage of ticket serve-http"},
		{[]string{"serve-http", "--allow-remote=" + pw}, "Usage of ticket serve-http"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2", tc.args, code)
		}
		if strings.Contains(errOut, "s3cret") || !strings.Contains(errOut, "not shown") || !strings.Contains(errOut, tc.usage) {
			t.Errorf("%q: stderr %q: want the value named, not shown, then the usage", tc.args, errOut)
		}
	}
	_, _, errOut := runCLI(t, "serve-http", "--port", "x")
	if !strings.HasPrefix(errOut, `invalid value "x" for flag -port: parse error`+"\n") {
		t.Errorf("a plain bad value is not quoted as before: %q", errOut)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview32FlagValueNotShown: a URL with its password typed into a
// number or duration flag was printed whole by the flag package ("invalid
// value \"postgres://...\" for flag -session-cap"). The refund server now
// parses with cliarg.Parse, which shows it as cliarg.Shown does; the usage
// follows and the exit status stays 2.
func TestReview32FlagValueNotShown(t *testing.T) {
	for _, flag := range []string{"-session-cap", "-cap-window", "-allow-remote="} {
		args := []string{flag, "postgres://app:s3cret@db/x"}
		if strings.HasSuffix(flag, "=") {
			args = []string{flag + args[1]}
		}
		var stderr strings.Builder
		if code := run(args, &stderr); code != 2 {
			t.Errorf("%q: exit status %d, want 2", args, code)
		}
		if strings.Contains(stderr.String(), "s3cret") || !strings.Contains(stderr.String(), "not shown") ||
			!strings.Contains(stderr.String(), "Usage: refund") {
			t.Errorf("%q: stderr %q: want the value named, not shown, then the usage", args, stderr.String())
		}
	}
	var stderr strings.Builder
	run([]string{"-cap-window", "1x"}, &stderr)
	if !strings.HasPrefix(stderr.String(), `invalid value "1x" for flag -cap-window: parse error`+"\n") {
		t.Errorf("a plain bad value is not quoted as before: %q", stderr.String())
	}
}

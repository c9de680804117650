package main

import (
	"strings"
	"testing"
)

// TestReview32FlagErrorNotShown: the flag package's own errors quoted what
// was typed: a URL with its password put after two dashes became the name
// of a flag not defined, printed whole. The demo now parses with
// cliarg.Parse, which shows it as cliarg.Shown does; the usage follows and
// the exit status stays 2.
func TestReview32FlagErrorNotShown(t *testing.T) {
	for _, args := range [][]string{
		{"--postgres://app:s3cret@db/x"},
		{"--=postgres://app:s3cret@db/x"},
	} {
		var out, stderr strings.Builder
		if code := demo(args, &out, &stderr); code != 2 {
			t.Errorf("%q: exit status %d, want 2", args, code)
		}
		if strings.Contains(stderr.String(), "s3cret") || !strings.Contains(stderr.String(), "not shown") ||
			!strings.Contains(stderr.String(), "Usage of demo") {
			t.Errorf("%q: stderr %q: want the flag named, not shown, then the usage", args, stderr.String())
		}
	}
	var out, stderr strings.Builder
	demo([]string{"--verbose"}, &out, &stderr)
	if !strings.HasPrefix(stderr.String(), "flag provided but not defined: -verbose\n") {
		t.Errorf("a plain flag not defined is not named as before: %q", stderr.String())
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview63FlagTwice: a flag given twice kept its last value (the flag
// package's way): in a script, a second -session-cap replaced the first
// without a word. It is a usage error naming the flag, as the gateway's.
func TestReview63FlagTwice(t *testing.T) {
	var stderr strings.Builder
	if code := run([]string{"-session-cap", "100", "-session-cap=5000"}, &stderr); code != 2 {
		t.Errorf("exit status %d, want 2 (stderr %q)", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "-session-cap is given twice") {
		t.Errorf("stderr %q: want the flag named", stderr.String())
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview63FlagTwice: -audit given twice kept the last path (the flag
// package's way), leaving the first without the trail its user meant to
// keep there: a usage error naming the flag.
func TestReview63FlagTwice(t *testing.T) {
	var out, stderr strings.Builder
	dir := t.TempDir()
	if code := demo([]string{"-audit", dir + "/a.db", "-audit", dir + "/b.db"}, &out, &stderr); code != 2 {
		t.Errorf("exit status %d, want 2 (stderr %q)", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "-audit is given twice") {
		t.Errorf("stderr %q: want the flag named", stderr.String())
	}
}

//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReview56NoTempDirSaysWhat: with TMPDIR naming a directory that is
// not there (a container's, removed), the demo said only "demo: stat
// /gone: no such file or directory", naming neither what it was making
// there (its temporary audit database) nor the way around it (-audit
// PATH). It now says both, and exits with status 1.
func TestReview56NoTempDirSaysWhat(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "gone")
	t.Setenv("TMPDIR", gone)
	var out, stderr strings.Builder
	if code := demo(nil, &out, &stderr); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	msg := stderr.String()
	if !strings.Contains(msg, gone) || !strings.Contains(msg, "temporary") || !strings.Contains(msg, "-audit") {
		t.Errorf("stderr %q: want it to name the temporary directory %s as such, and -audit PATH", msg, gone)
	}
}

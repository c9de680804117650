package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview63FlagTwice: a flag given twice kept its last value (the flag
// package's way): a second --audit-dir or --config in a script replaced
// the first without a word, and --config before the command was replaced
// by one after it. Each is a usage error naming the flag, found before
// anything is opened.
func TestReview63FlagTwice(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve-stdio", "--audit-dir", a, "--audit-dir", b}, "--audit-dir is given twice"},
		{[]string{"--config", "x.yaml", "--config=y.yaml", "tools"}, "--config is given twice"},
		{[]string{"--config", "x.yaml", "serve-stdio", "--config", "y.yaml"}, "--config is given twice"},
	} {
		var out, stderr strings.Builder
		if code := run(context.Background(), tc.args, &out, &stderr); code != 2 {
			t.Errorf("%q: exit status %d, want 2 (stderr %q)", tc.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: stderr %q: want %q", tc.args, stderr.String(), tc.want)
		}
	}
	for _, d := range []string{a, b} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s created by a refused command line", d)
		}
	}
}

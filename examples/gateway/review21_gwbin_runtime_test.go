package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview21RuntimeErrorsNameTheFlag: a failure at start that is not a
// mistake in the flags (exit status 1) still names the flag it concerns.
// An --audit file that could not be opened said only "audit: open ...",
// and an address in use only "listen tcp 127.0.0.1:N: bind: address
// already in use", which does not tell the operator to change --port or
// --host.
func TestReview21RuntimeErrorsNameTheFlag(t *testing.T) {
	answeringDownstream(t) // saves the flags and arguments
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, busy, _ := net.SplitHostPort(ln.Addr().String())
	missing := filepath.Join(t.TempDir(), "none", "audit.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"audit_dir_missing", []string{"--port", "0", "--audit", missing}, []string{"--audit", "no such file"}},
		{"audit_sqlite_dir_missing", []string{"--port", "0", "--audit", missing + ".db"}, []string{"--audit", "no such file"}},
		{"audit_is_directory", []string{"--port", "0", "--audit", t.TempDir()}, []string{"--audit", "directory"}},
		{"port_in_use", []string{"--port", busy}, []string{"--host", "--port " + busy, "address already in use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs, err := runAtStart(t, nil, append([]string{"--upstream", "http://127.0.0.1:1/mcp"}, tc.args...)...)
			if err == nil {
				t.Fatalf("run(%q) returned nil; logs:\n%s", tc.args, logs)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("run(%q): %v: does not name %q", tc.args, err, w)
				}
			}
			if got := exitCode(err); got != 1 {
				t.Errorf("run(%q): %v: exit status %d, want 1", tc.args, err, got)
			}
		})
	}
}

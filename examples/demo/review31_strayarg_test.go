package main

import (
	"strings"
	"testing"
)

// TestReview31StrayArgumentNotShown: a stray argument was printed whole in
// "unexpected arguments"; one that may hold a secret is now named without
// being shown, by the rule the other example binaries use (internal/cliarg).
func TestReview31StrayArgumentNotShown(t *testing.T) {
	var out, stderr strings.Builder
	if code := demo([]string{"REFUND_MCP_TOKEN=tok-s3cretvalue"}, &out, &stderr); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	if strings.Contains(stderr.String(), "s3cretvalue") || !strings.Contains(stderr.String(), "unexpected arguments") {
		t.Errorf("stderr %q: want the unexpected argument named, not shown", stderr.String())
	}
	stderr.Reset()
	demo([]string{"audit.db"}, &out, &stderr)
	if !strings.Contains(stderr.String(), `unexpected arguments ["audit.db"]`) {
		t.Errorf("a plain stray argument is not quoted: %q", stderr.String())
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview31StrayArgumentNotShown: a stray argument (an assignment of
// REFUND_MCP_TOKEN put after the command) was printed whole in
// "unexpected arguments"; it is now named without being shown, by the rule
// the other example binaries use (internal/cliarg).
func TestReview31StrayArgumentNotShown(t *testing.T) {
	var stderr strings.Builder
	if code := run([]string{"REFUND_MCP_TOKEN=tok-s3cretvalue"}, &stderr); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	if strings.Contains(stderr.String(), "s3cretvalue") || !strings.Contains(stderr.String(), "unexpected arguments") {
		t.Errorf("stderr %q: want the unexpected argument named, not shown", stderr.String())
	}
	stderr.Reset()
	run([]string{"stray"}, &stderr)
	if !strings.Contains(stderr.String(), `unexpected arguments ["stray"]`) {
		t.Errorf("a plain stray argument is not quoted: %q", stderr.String())
	}
}

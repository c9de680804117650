package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReview19PathRefused: a --path that no request's path can equal (a
// query, a fragment, a percent-escape, which the request's decoded path
// never holds; "//host/..." read as a host) made a gateway that answers
// every MCP request 404, and --path /healthz one whose health check
// shadows the MCP path (GET answers the health, POST 405). Each stops the
// start with exit status 2, naming --path, before the audit file is
// opened.
func TestReview19PathRefused(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"query", "/mcp?x=1"},
		{"fragment", "/mcp#x"},
		{"escape", "/%6Dcp"},
		{"double_slash", "//host/mcp"},
		{"health_path", "/healthz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			logs, err := runAtStart(t, nil, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--audit", auditPath, "--path", tc.path)
			if err == nil || !strings.Contains(err.Error(), "--path") || exitCode(err) != 2 {
				t.Errorf("--path %q: err %v (exit status %d), want one naming --path, exit status 2; logs:\n%s", tc.path, err, exitCode(err), logs)
			}
		})
	}
}

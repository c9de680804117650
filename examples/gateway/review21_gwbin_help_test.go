package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview21HelpNamesTheEnvironment: --help is where an operator looks
// first. It listed the flags only: nothing said that the tokens come from
// MCP_GATEWAY_TOKENS and in what form, that the demo tokens are used when
// it is unset, where the health check is, or what the exit statuses mean.
func TestReview21HelpNamesTheEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("gateway --help: %v (want exit status 0)\n%s", err, out)
	}
	for _, want := range []string{
		"Usage: gateway [flags]",
		`MCP_GATEWAY_TOKENS  a JSON object from token to a role`,
		`{"sub": "...", "role": "..." | "roles": [...]}`,
		"admin-token and viewer-token",
		"MCP_GATEWAY_INTROSPECT_CLIENT_SECRET",
		"GET /healthz",
		"Exit status: 0",
		"2 for a mistake",
		"-upstream string",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("gateway --help does not say %q:\n%s", want, out)
		}
	}
}

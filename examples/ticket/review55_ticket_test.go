package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview55DemoAllowWritesChecksTheCost: `demo --allow-writes` puts
// create_ticket on the allowlist after the file was loaded and checked, so
// the configuration check that refuses an allowlisted write costing more
// than a spend cap (README: "refused when the file is loaded ..., naming
// the keys, not by the guard at start in the library's terms") never saw
// the configuration the demo runs. With create_ticket at 50 units and
// cost_per_session 10 (a file that loads: the write is not allowlisted),
// the demo failed with the library's message ("mcpguard: limiter limit
// spend 10/1m0s per session: a call under tool ...") instead of the
// configuration's, which names cost_units and cost_per_session.
func TestReview55DemoAllowWritesChecksTheCost(t *testing.T) {
	data, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	const from, to = "create_ticket:\n    read_only: false\n    cost_units: 5\n", "create_ticket:\n    read_only: false\n    cost_units: 50\n"
	if !strings.Contains(text, from) {
		t.Fatalf("server.yaml has no %q", from)
	}
	path := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(text, from, to, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file itself loads: the costly write is not allowlisted.
	if code, _, errOut := runCLI(t, "--config", path, "tools"); code != 0 {
		t.Fatalf("tools: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "--config", path, "demo", "--allow-writes")
	if code != 1 {
		t.Errorf("demo --allow-writes: exit %d, want 1; stdout:\n%s", code, out)
	}
	want := "tools.create_ticket.cost_units 50 is more than rate_limit.cost_per_session 10"
	if !strings.Contains(errOut, want) || strings.Contains(errOut, "mcpguard:") {
		t.Errorf("demo --allow-writes: stderr = %q, want the configuration's refusal %q (not the library's)", errOut, want)
	}
	if strings.Contains(out, "===") {
		t.Errorf("demo --allow-writes ran scenes on a configuration it refuses:\n%s", out)
	}
}

// TestReview55EmptyConfigIsAUsageError: `--config ""` (an empty variable
// in a service template, `--config "$TICKET_CONFIG"`) was taken for no
// --config at all: every command silently ran the embedded server.yaml
// (its allowlist, dry_run and caps, not the operator's), and serve-http
// started with it, with nothing to read again on SIGHUP. The example's own
// rule for --audit-dir, --redis and --audit-postgres (main.go: "A backend
// flag or --audit-dir given is checked even empty: "" would otherwise mean
// memory, SQLite or the default directory, silently") applies to --config
// as well: a usage error (exit 2) naming the flag, before anything is
// opened. The context is cancelled beforehand, so that a serve-http that
// does start stops at once.
func TestReview55EmptyConfigIsAUsageError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		args func(dir string) []string
	}{
		{"tools_before", func(string) []string { return []string{"--config", "", "tools"} }},
		{"tools_after", func(string) []string { return []string{"tools", "--config="} }},
		{"demo", func(dir string) []string { return []string{"--config=", "demo", "--audit-dir", dir} }},
		{"serve_http", func(dir string) []string {
			return []string{"serve-http", "--config", "", "--port", "0", "--audit-dir", dir}
		}},
		{"given_twice_last_empty", func(string) []string { return []string{"--config", "server.yaml", "tools", "--config", ""} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "audit")
			args := tc.args(dir)
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			code := run(ctx, args, stdout, stderr)
			if code != 2 || !strings.Contains(stderr.String(), "--config") {
				t.Errorf("run(%q) = exit %d, stderr %q; want exit 2 naming --config", args, code, stderr)
			}
			if stdout.String() != "" {
				t.Errorf("run(%q) printed:\n%s", args, stdout)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("run(%q) created the audit directory (stat: %v)", args, err)
			}
		})
	}
	// Left out, or naming a file, --config is as before.
	if code, _, errOut := runCLI(t, "tools"); code != 0 {
		t.Errorf("tools: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "tools", "--config", "server.yaml"); code != 0 {
		t.Errorf("tools --config server.yaml: exit %d: %s", code, errOut)
	}
}

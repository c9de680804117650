package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview29CostAboveSpendCap: the README says that impossible values in
// server.yaml are errors naming the file, and that `tools`, the listing for
// a security review, refuses a configuration the servers would refuse. A
// tool that can be called (a read, or a write on the allowlist) whose
// cost_units is above cost_per_session or cost_per_user can never be
// called: the limiter admits no call of more than a cap. `tools` listed
// such a file as valid, and `demo` and the servers stopped with the
// library's message (`mcpguard: limiter limit spend 4/1m0s per session: a
// call under tool "create_ticket" costs 5 (its rule's Cost, and no Cost
// function in Options.Tools)...`), which names neither the file nor its
// keys. The file is now refused when it is loaded, naming the file, the
// tool's cost_units and the cap; a write off the allowlist, which no call
// reaches, may cost more, as the library allows.
func TestReview29CostAboveSpendCap(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := func(s string, pairs ...string) string {
		t.Helper()
		for i := 0; i+1 < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				t.Fatalf("server.yaml has no %q", pairs[i])
			}
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return s
	}
	const (
		allow       = "allowed_write_tools: []"
		sessionCap  = "cost_per_session: 10 "
		userCap     = "cost_per_user: 60 "
		searchCost  = "    cost_units: 1\n"
		allowTicket = "allowed_write_tools: [create_ticket]"
	)
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"write_above_session_cap", r(string(base), allow, allowTicket, sessionCap, "cost_per_session: 4 "),
			[]string{"tools.create_ticket.cost_units", "rate_limit.cost_per_session"}},
		{"write_above_user_cap", r(string(base), allow, allowTicket, userCap, "cost_per_user: 4 "),
			[]string{"tools.create_ticket.cost_units", "rate_limit.cost_per_user"}},
		{"read_above_session_cap", r(string(base), searchCost, "    cost_units: 11\n"),
			[]string{"tools.search_docs.cost_units", "rate_limit.cost_per_session"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := loadConfig(path)
			if err == nil {
				t.Fatalf("loadConfig accepted a tool no call of which fits a spend cap:\n%s", tt.yaml)
			}
			for _, w := range append([]string{path}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			// `tools` refuses it too, as it refuses a registry mismatch.
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), []string{"--config", path, "tools"}, &stdout, &stderr); code != 1 {
				t.Errorf("tools exited %d, want 1; stdout:\n%s", code, stdout.String())
			}
		})
	}

	// A cost equal to a cap fits one call; a write off the allowlist is never
	// called, so its cost may be above the caps; both load.
	for _, tt := range []struct{ name, yaml string }{
		{"equal_to_cap", r(string(base), allow, allowTicket, sessionCap, "cost_per_session: 5 ")},
		{"write_off_allowlist", r(string(base), sessionCap, "cost_per_session: 4 ")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, _, err := loadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			// The guard takes it as well.
			a, err := newApp(appOptions{ConfigName: path, Config: c, AuditDir: t.TempDir()})
			if err != nil {
				t.Fatalf("the guard refused a configuration the file check let through: %v", err)
			}
			a.Close()
		})
	}
}

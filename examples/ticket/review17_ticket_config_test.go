package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview17SafetyValuesAreNeverDefaulted: server.yaml without dry_run
// (or with dry_run: and no value) loaded as dry_run: false, so that
// allowlisting create_ticket alone made it create real tickets, although
// the README says that takes both the allowlist *and* dry_run: false; and
// a tool without cost_units (or with a null one) cost nothing against
// cost_per_session. Like read_only, both must now be written out: the
// file is refused, naming the key.
func TestReview17SafetyValuesAreNeverDefaulted(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := func(old, new string) string {
		t.Helper()
		if !strings.Contains(string(base), old) {
			t.Fatalf("server.yaml has no %q", old)
		}
		return strings.Replace(string(base), old, new, 1)
	}
	const dryRun = "dry_run: true              # write tools simulate (DRYRUN-... ids) instead of executing\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"dry_run_missing", r(dryRun, ""), "dry_run is required"},
		{"dry_run_empty", r(dryRun, "dry_run:\n"), "dry_run is required"},
		{"dry_run_null", r(dryRun, "dry_run: ~\n"), "dry_run is required"},
		{"dry_run_null_word", r(dryRun, "dry_run: null\n"), "dry_run is required"},
		{"cost_units_missing", r("    cost_units: 5\n", ""), "tools.create_ticket.cost_units is required"},
		{"cost_units_empty", r("    cost_units: 5\n", "    cost_units:\n"), "tools.create_ticket.cost_units is required"},
		{"cost_units_null", r("    cost_units: 5\n", "    cost_units: ~\n"), "tools.create_ticket.cost_units is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, _, err := loadConfig(path)
			if err == nil {
				t.Fatalf("loadConfig accepted it (dry_run %v, create_ticket cost %v):\n%s", c.DryRun, c.Tools["create_ticket"].CostUnits, tt.yaml)
			}
			for _, w := range []string{path, tt.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}

	// Written out, through a merge key as well, they load.
	for _, tt := range []struct{ name, yaml string }{
		{"dry_run_false", r(dryRun, "dry_run: false\n")},
		{"cost_through_merge", r("  create_ticket:\n    read_only: false\n    cost_units: 5\n",
			"  create_ticket:\n    <<: {cost_units: 5}\n    read_only: false\n")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseConfig("server.yaml", []byte(tt.yaml)); err != nil {
				t.Errorf("refused: %v\n%s", err, tt.yaml)
			}
		})
	}

	// End to end: allowlisting create_ticket in a file without dry_run
	// created a real ticket in the demo; it is now a start-up error.
	path := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(path, []byte(r(dryRun, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "--config", path, "demo", "--allow-writes")
	if code != 1 || !strings.Contains(errOut, "dry_run is required") {
		t.Errorf("demo --allow-writes without dry_run: exit %d, stderr %q, want 1 naming dry_run\n%s", code, errOut, out)
	}
	if strings.Contains(out, "TICKET-0001") {
		t.Errorf("demo created a real ticket:\n%s", out)
	}
}

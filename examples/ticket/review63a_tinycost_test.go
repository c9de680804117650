package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview63aCostWrittenNonzeroReadsAsZero: a cost_units written as a
// number other than zero that the decoder reads as the float64 0 (1e-400,
// below the smallest float64; -1e-400, read as -0 and so not refused as
// negative) loaded as a tool that costs nothing: off the spend cap, which
// the README says is why cost_units is never defaulted to 0. The policy
// package's rule files refuse the same number ("reads as the float64 0").
// It is refused now, naming the key and the line.
func TestReview63aCostWrittenNonzeroReadsAsZero(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const cost = "    cost_units: 5\n"
	if !strings.Contains(string(base), cost) {
		t.Fatalf("server.yaml has no %q", cost)
	}
	for _, v := range []string{"1e-400", "-1e-400", "0.5e-330"} {
		t.Run(v, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.yaml")
			data := strings.Replace(string(base), cost, "    cost_units: "+v+"\n", 1)
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			c, _, err := loadConfig(path)
			if err == nil {
				t.Fatalf("cost_units: %s loaded as create_ticket cost %v (a tool that costs nothing), want an error", v, c.Tools["create_ticket"].CostUnits)
			}
			for _, w := range []string{path, "tools.create_ticket.cost_units", "line 18"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Zero written as zero, in any form, still loads.
	for _, v := range []string{"0", "0.0", "-0", "0e10", "0.000"} {
		data := strings.Replace(string(base), cost, "    cost_units: "+v+"\n", 1)
		if _, err := parseConfig("server.yaml", []byte(data)); err != nil {
			t.Errorf("cost_units: %s refused: %v", v, err)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview15cConfigLeadingZeroNumbers: yaml.v3 reads an integer written
// with a leading zero as octal, as YAML 1.1 did: `calls_per_min: 060` ran
// as 48 calls, `window_seconds: 060` as a 48 s window, `cost_units: 010`
// as 8. YAML 1.2 readers (and people) read 60 and 10. Each is refused,
// naming the file, the line and the key; 0o60 (octal said so), 0x3C and
// the other spellings the numbers had are kept (see
// TestReview15cConfigNumbersKept).
func TestReview15cConfigLeadingZeroNumbers(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := string(base)
	r := func(old, new string) string {
		t.Helper()
		if !strings.Contains(b, old) {
			t.Fatalf("server.yaml has no %q", old)
		}
		return strings.Replace(b, old, new, 1)
	}
	// An anchor on search_docs' cost, aliased by create_ticket's.
	alias := strings.Replace(r("    cost_units: 1\n", "    cost_units: &c 010\n"), "    cost_units: 5\n", "    cost_units: *c\n", 1)
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"calls_octal", r("calls_per_min: 5 ", "calls_per_min: 060 "), []string{"line 6", "rate_limit.calls_per_min", "leading zero"}},
		{"calls_octal_underscore", r("calls_per_min: 5 ", "calls_per_min: 0_60 "), []string{"line 6", "rate_limit.calls_per_min", "leading zero"}},
		{"calls_octal_tagged", r("calls_per_min: 5 ", "calls_per_min: !!int 060 "), []string{"line 6", "leading zero"}},
		{"calls_octal_signed", r("calls_per_min: 5 ", "calls_per_min: +060 "), []string{"line 6", "leading zero"}},
		{"cost_per_session_octal", r("cost_per_session: 10 ", "cost_per_session: 010 "), []string{"line 7", "rate_limit.cost_per_session", "leading zero"}},
		{"window_octal", r("window_seconds: 60 ", "window_seconds: 060 "), []string{"line 8", "rate_limit.window_seconds", "leading zero"}},
		{"cost_units_octal", r("    cost_units: 5\n", "    cost_units: 010\n"), []string{"line 18", "tools.create_ticket.cost_units", "leading zero"}},
		{"cost_units_octal_alias", alias, []string{"line 14", "tools.search_docs.cost_units", "leading zero"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, _, err := loadConfig(path)
			if err == nil {
				t.Fatalf("loadConfig accepted it: calls_per_min %d, cost_per_session %g, window_seconds %g, cost_units %g/%g",
					c.RateLimit.CallsPerMin, c.RateLimit.CostPerSession, c.RateLimit.WindowSeconds, c.Tools["search_docs"].CostUnits, c.Tools["create_ticket"].CostUnits)
			}
			for _, w := range append([]string{path}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestReview15cConfigNumbersKept: the spellings of numbers that mean one
// number to every reader stay accepted, with that number.
func TestReview15cConfigNumbersKept(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		calls, window string
		wantCalls     int
		wantWindow    float64
	}{
		{"60", "60", 60, 60},
		{"+60", "0.5", 60, 0.5},
		{"0x3C", "0o74", 60, 60},
		{"0o74", "0x3C", 60, 60},
		{"1_000", "0_0.5", 1000, 0.5},
		{"!!int 60", "060.5", 60, 60.5},
		{"60 # per minute", "1e2", 60, 100},
	} {
		y := strings.Replace(string(base), "calls_per_min: 5 ", "calls_per_min: "+tt.calls+" ", 1)
		y = strings.Replace(y, "window_seconds: 60 ", "window_seconds: "+tt.window+" ", 1)
		c, err := parseConfig("F", []byte(y))
		if err != nil {
			t.Errorf("calls_per_min %s, window_seconds %s: %v", tt.calls, tt.window, err)
			continue
		}
		if c.RateLimit.CallsPerMin != tt.wantCalls || c.RateLimit.WindowSeconds != tt.wantWindow {
			t.Errorf("calls_per_min %s, window_seconds %s read as %d, %g; want %d, %g",
				tt.calls, tt.window, c.RateLimit.CallsPerMin, c.RateLimit.WindowSeconds, tt.wantCalls, tt.wantWindow)
		}
	}
}

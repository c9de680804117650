package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestReview22bRefusedCallsTakeNoUserBudget: calls that the per-session
// caps refuse take nothing from the user's budget. Alice spends her
// session's 5 calls, is refused 10 more there, and still has the other 25
// of her 30 (calls_per_user) in new sessions; a refused dry-run write
// (create_ticket is not allowlisted) takes nothing either.
func TestReview22bRefusedCallsTakeNoUserBudget(t *testing.T) {
	ta := newTestApp(t, nil)
	q := map[string]any{"query": "deploy"}
	for i := range 15 {
		o := ta.call(t, "token-alice", "one", "search_docs", q)
		if want := i >= 5; (o.code != "") != want {
			t.Fatalf("call %d in one session: code %q", i+1, o.code)
		}
	}
	for range 5 {
		if o := ta.call(t, "token-alice", "w", "create_ticket", ticketArgs()); o.code == "" {
			t.Fatal("create_ticket, not allowlisted, was answered")
		}
	}
	answered := 0
	for i := range 40 {
		if o := ta.call(t, "token-alice", fmt.Sprintf("s%d", i), "search_docs", q); o.code == "" {
			answered++
		} else if o.code != "RATE_LIMIT_EXCEEDED" {
			t.Fatalf("call in a new session: %q", o.code)
		}
	}
	if answered != 25 {
		t.Errorf("after 5 answered and 15 refused calls, %d more answered in new sessions, want 25", answered)
	}
}

// TestReview22bPerUserCapNumbers: the per-user caps as YAML writes numbers:
// aliases are followed, a quoted number, 2^63 and 1e400 are refused with
// the key's line, and the largest int builds a limiter.
func TestReview22bPerUserCapNumbers(t *testing.T) {
	base := strings.Join([]string{
		"dry_run: true",
		"allowed_write_tools: []",
		"rate_limit:",
		"  calls_per_min: &five 5",
		"  cost_per_session: &half 10.5",
		"  window_seconds: 60",
		"%s",
		"tools:",
		"  search_docs: {read_only: true, cost_units: 1}",
		"  create_ticket: {read_only: false, cost_units: 5}",
		"  list_tools: {read_only: true, cost_units: 0}",
		"",
	}, "\n")
	for _, tt := range []struct{ lines, want string }{
		{"  calls_per_user: *half", "calls_per_user must be a whole number"},
		{`  calls_per_user: "30"`, "line 7"},
		{`  cost_per_user: "60"`, "line 7"},
		{"  calls_per_user: 9223372036854775808", "line 7"},
		{"  cost_per_user: 1e400", "line 7"},
		{"  calls_per_user: !!float 30", "calls_per_user must be a whole number"},
		{"  <<: {calls_per_user: 2.5}", "calls_per_user must be a whole number"},
		{"  <<: {cost_per_user: ~}", "cost_per_user is null"},
		{"  cost_per_user: -0.0", "cost_per_user must be a positive number"},
		{"  cost_per_user: .nan", "cost_per_user must be a positive number"},
	} {
		if _, err := parseConfig("x.yaml", fmt.Appendf(nil, base, tt.lines)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error with %q", tt.lines, err, tt.want)
		}
	}
	for _, lines := range []string{
		"  calls_per_user: *five\n  cost_per_user: *half",
		"  calls_per_user: 9223372036854775807\n  cost_per_user: 1.7976931348623157e308",
	} {
		c, err := parseConfig("x.yaml", fmt.Appendf(nil, base, lines))
		if err != nil {
			t.Fatalf("%q: %v", lines, err)
		}
		if len(c.limits()) != 4 {
			t.Errorf("%q: %d limits, want 4", lines, len(c.limits()))
		}
		ta := newTestApp(t, func(x *config) { x.RateLimit = c.RateLimit })
		if o := ta.call(t, "token-alice", "s", "search_docs", map[string]any{"query": "deploy"}); o.code != "" {
			t.Errorf("%q: a search refused %q", lines, o.code)
		}
	}
}

// TestReview22bRedisHelpNamesUserBudgets: --redis keeps the per-user
// budgets (calls_per_user, cost_per_user) on Redis too, shared by every
// server; the usage and the flag's help said "the per-session budgets"
// only, so an operator could not tell that the caps of a user who opens a
// session (or a stdio process) per call are shared between replicas.
func TestReview22bRedisHelpNamesUserBudgets(t *testing.T) {
	for _, cmd := range []string{"serve-http", "serve-stdio"} {
		var out, errb strings.Builder
		if code := run(t.Context(), []string{cmd, "-h"}, &out, &errb); code != 0 {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		if !strings.Contains(errb.String()+out.String(), "per-user budgets") {
			t.Errorf("%s -h does not say --redis keeps the per-user budgets:\n%s", cmd, errb.String())
		}
	}
	var out, errb strings.Builder
	run(t.Context(), nil, &out, &errb)
	if s := out.String() + errb.String(); !strings.Contains(s, "per-user") {
		t.Errorf("the usage does not say --redis keeps the per-user budgets:\n%s", s)
	}
}

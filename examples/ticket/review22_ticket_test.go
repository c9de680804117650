package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview22NewSessionPerCallDoesNotEscapeTheCaps: the seed's caps are
// per session, and the session is the client's to choose: X-Session-Id
// over REST, a new initialize over /mcp. A caller who names a new session
// for each call got a fresh budget each time, so the shipped server.yaml
// bounded nobody who did not want to be bounded: 100 searches in 100 REST
// sessions were all answered, and with writes on every ticket was really
// created. The per-user caps (rate_limit.calls_per_user and
// cost_per_user, limiter scope User) bound a caller across all its
// sessions, and another caller keeps its own.
func TestReview22NewSessionPerCallDoesNotEscapeTheCaps(t *testing.T) {
	ta := newTestApp(t, nil) // the shipped server.yaml; the fake clock stands still
	answered := 0
	for i := range 100 {
		o := ta.call(t, "token-alice", fmt.Sprint("s-", i), "search_docs", map[string]any{"query": ""})
		switch o.code {
		case "":
			answered++
		case "RATE_LIMIT_EXCEEDED":
		default:
			t.Fatalf("call %d: %s", i, o.code)
		}
	}
	if want := ta.cfg().RateLimit.CallsPerUser; want == nil || answered != *want {
		t.Errorf("alice, a new REST session per call: %d of 100 searches answered, want calls_per_user (%v)", answered, want)
	}
	if o := ta.call(t, "token-bob", "s-0", "search_docs", map[string]any{"query": ""}); o.code != "" {
		t.Errorf("bob after alice's flood: %s, want his own budget", o.code)
	}
	// Each refusal is audited, with alice's session of the call.
	if evs := ta.events(t, audit.Filter{Subject: "alice"}); len(evs) != 100 {
		t.Errorf("alice: %d records, want 100", len(evs))
	}
}

// TestReview22NewSessionPerWriteDoesNotEscapeTheSpendCap: with writes
// really on, a new REST session per create_ticket created a ticket each
// time; cost_per_user bounds the tickets of a caller per window.
func TestReview22NewSessionPerWriteDoesNotEscapeTheSpendCap(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false })
	for i := range 40 {
		o := ta.call(t, "token-alice", fmt.Sprint("w-", i), "create_ticket", ticketArgs())
		if o.code != "" && o.code != "SPEND_LIMIT_EXCEEDED" && o.code != "RATE_LIMIT_EXCEEDED" {
			t.Fatalf("write %d: %s", i, o.code)
		}
	}
	limit := ta.cfg().RateLimit.CostPerUser
	if limit == nil {
		t.Fatalf("server.yaml sets no cost_per_user: %d of 40 tickets created", len(ta.tickets.Created()))
	}
	if got, want := len(ta.tickets.Created()), int(*limit/ta.cfg().Tools["create_ticket"].CostUnits); got != want {
		t.Errorf("alice, a new REST session per write: %d tickets created, want %d (cost_per_user %v)", got, want, *limit)
	}
}

// TestReview22NewMCPSessionPerCallDoesNotEscapeTheCaps: the same over
// /mcp, where the go-sdk names the session: one initialize per call.
func TestReview22NewMCPSessionPerCallDoesNotEscapeTheCaps(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	want := ta.cfg().RateLimit.CallsPerUser
	if want == nil {
		t.Fatal("server.yaml sets no calls_per_user")
	}
	answered := 0
	for i := range *want + 5 {
		cs := connectHTTP(t, base, "token-alice")
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
		switch code := toolCode(t, res, err); code {
		case "":
			answered++
		case "RATE_LIMIT_EXCEEDED":
		default:
			t.Fatalf("call %d: %s", i, code)
		}
		cs.Close()
	}
	if answered != *want {
		t.Errorf("alice, a new /mcp session per call: %d of %d answered, want %d", answered, *want+5, *want)
	}
}

// TestReview22PerUserCapsAreChecked: the per-user caps are optional, but
// when written they are checked as strictly as the per-session ones.
func TestReview22PerUserCapsAreChecked(t *testing.T) {
	base := strings.Join([]string{
		"dry_run: true",
		"allowed_write_tools: []",
		"rate_limit:",
		"  calls_per_min: 5",
		"  cost_per_session: 10",
		"  window_seconds: 60",
		"%s",
		"tools:",
		"  search_docs: {read_only: true, cost_units: 1}",
		"  create_ticket: {read_only: false, cost_units: 5}",
		"  list_tools: {read_only: true, cost_units: 0}",
		"",
	}, "\n")
	for _, tt := range []struct{ lines, want string }{
		{"  calls_per_user: 0", "calls_per_user must be at least 1"},
		{"  calls_per_user: 2.5", "calls_per_user must be a whole number"},
		{"  calls_per_user: 030", "leading zero"},
		{"  calls_per_user: ~", "calls_per_user must be a whole number"},
		{"  cost_per_user: -1", "cost_per_user must be a positive number"},
		{"  cost_per_user: .inf", "cost_per_user must be a positive number"},
		{"  cost_per_user:", "cost_per_user is null"},
	} {
		if _, err := parseConfig("x.yaml", fmt.Appendf(nil, base, tt.lines)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error with %q", tt.lines, err, tt.want)
		}
	}
	// Absent, there is no per-user cap (the seed's posture): only the
	// per-session limits.
	c, err := parseConfig("x.yaml", fmt.Appendf(nil, base, ""))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.limits()); n != 2 {
		t.Errorf("no per-user caps: %d limits, want 2", n)
	}
	c, err = parseConfig("x.yaml", fmt.Appendf(nil, base, "  calls_per_user: 20\n  cost_per_user: 0x28"))
	if err != nil {
		t.Fatal(err)
	}
	if *c.RateLimit.CallsPerUser != 20 || *c.RateLimit.CostPerUser != 40 || len(c.limits()) != 4 {
		t.Errorf("calls_per_user 20, cost_per_user 0x28: %v %v, %d limits", *c.RateLimit.CallsPerUser, *c.RateLimit.CostPerUser, len(c.limits()))
	}
}

// TestReview22RedisSharesTheUserBudget: on --redis the per-user budget is
// the user's on every server: with calls_per_user 4, alice's calls in a
// new session each, over two servers, are answered 4 times, and bob still
// is.
func TestReview22RedisSharesTheUserBudget(t *testing.T) {
	r := testsvc.StartRedis(t)
	cfg := configFile(t, "calls_per_user: 30 ", "calls_per_user: 4 ")
	a := startServeHTTP(t, "--config", cfg, "--audit-dir", t.TempDir(), "--redis", r.Addr)
	b := startServeHTTP(t, "--config", cfg, "--audit-dir", t.TempDir(), "--redis", r.Addr)
	var got []int
	for i := range 6 {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		got = append(got, restPost(t, srv.base, "search_docs", "token-alice", fmt.Sprint("u-", i), searchBody).status)
	}
	if want := []int{200, 200, 200, 200, 429, 429}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("alice, a new session per call over two servers on one Redis: %v, want %v", got, want)
	}
	if r := restPost(t, b.base, "search_docs", "token-bob", "u-0", searchBody); r.status != 200 {
		t.Errorf("bob: %d %v", r.status, r.body)
	}
}

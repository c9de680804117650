package main

// Seed conformance (shared/seeds/mcp-starter-template.txt), round 23: the
// seed's sentences, and README claims, whose tests were missing or could
// not fail. Each test names what it demonstrates.

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// TestReview23RESTRefusalsKeepTheirSession: "audit_log: timestamp,
// session_id, user_id, ... escrito en cada llamada" and "JSONL y SQLite
// capturan una sesión completa" (test_audit_jsonl_reconstructs_a_session,
// test_query_filters_by_session). A REST call that the adapter refuses
// before the guard (a tool not in the registry, a malformed body), from an
// authenticated caller with a valid X-Session-Id, is a call of that
// session: its record names the session as the guard's refusals do, so
// that querying the session finds it. Before, it had no session_id.
func TestReview23RESTRefusalsKeepTheirSession(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	const sid = "demo-1"
	steps := []struct {
		tool, tok, sid, body string
		status               int
	}{
		{"search_docs", "token-alice", sid, `{"arguments": {"query": ""}}`, 200},
		{"create_ticket", "token-alice", sid, `{"arguments": {"title": "t", "body": "b"}}`, 403}, // the guard's
		{"delete_everything", "token-alice", sid, `{"arguments": {}}`, 404},                      // before the guard
		{"search_docs", "token-alice", sid, `{"arguments": "deploy"}`, 400},                      // before the guard
		{"search_docs", "token-alice", sid, `{"arguments": {"query": 7}}`, 400},                  // the guard's
		{"search_docs", "token-alice", "bad session", `{"arguments": {"query": ""}}`, 400},       // no session to name
		{"search_docs", "", sid, `{"arguments": {"query": ""}}`, 401},                            // no caller, no session
	}
	for i, s := range steps {
		if r := restPost(t, base, s.tool, s.tok, s.sid, s.body); r.status != s.status {
			t.Fatalf("step %d (%s): HTTP %d %v, want %d", i, s.tool, r.status, r.body, s.status)
		}
	}
	session := restSessionID(sid, "alice")
	want := []row{
		{session, "alice", "search_docs", "read", "", true, false},
		{session, "alice", "create_ticket", "write", "WRITE_NOT_ALLOWED", false, false},
		{session, "alice", "delete_everything", "", "TOOL_NOT_FOUND", false, false},
		{session, "alice", "search_docs", "read", "INVALID_ARGUMENTS", false, false},
		{session, "alice", "search_docs", "read", "INVALID_ARGUMENTS", false, false},
	}
	f := audit.Filter{SessionID: session, Phase: audit.PhaseOutcome}
	if diff := cmp.Diff(want, rows(ta.events(t, f))); diff != "" {
		t.Errorf("SQLite records of session %s (-want +got):\n%s", session, diff)
	}
	if err := ta.flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.QueryJSONL(ta.jsonlPath(), f)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rows(evs)); diff != "" {
		t.Errorf("JSONL records of session %s (-want +got):\n%s", session, diff)
	}
	// The two refusals without a session to name have none.
	all, err := audit.QueryJSONL(ta.jsonlPath(), audit.Filter{Phase: audit.PhaseOutcome})
	if err != nil {
		t.Fatal(err)
	}
	var unnamed []string
	for _, e := range all {
		if e.SessionID == "" {
			unnamed = append(unnamed, e.Subject+":"+e.Code)
		}
	}
	if diff := cmp.Diff([]string{"alice:INVALID_ARGUMENTS", ":UNAUTHENTICATED"}, unnamed); diff != "" {
		t.Errorf("records without a session (-want +got):\n%s", diff)
	}
}

// TestReview23CostBudgetRefillsWithTheWindow: "calls_per_min y
// cost_per_session ... se restablecen juntos cada window_seconds", and "las
// llamadas siguen siendo rechazadas durante el resto de la ventana" for the
// cost budget (the call budget's test is
// TestBurstOfNPlusOneRejectsTheLastAndRefillsWithTheClock): a spend refusal
// says how long to wait, the cost stays refused until then, and after a
// whole window both budgets are whole again.
func TestReview23CostBudgetRefillsWithTheWindow(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false }) // 5 calls, 10 units per 60 s; a ticket costs 5
	use := func(round int) {
		t.Helper()
		for i := 1; i <= 2; i++ {
			if o := ta.call(t, "token-alice", "w", "create_ticket", ticketArgs()); o.code != "" || o.wire != nil {
				t.Fatalf("round %d, ticket %d: %+v", round, i, o)
			}
		}
		for i := 3; i <= 5; i++ {
			if o := ta.call(t, "token-alice", "w", "list_tools", map[string]any{}); o.code != "" || o.wire != nil {
				t.Fatalf("round %d, call %d (list_tools): %+v", round, i, o)
			}
		}
		if o := ta.call(t, "token-alice", "w", "list_tools", map[string]any{}); o.code != "RATE_LIMIT_EXCEEDED" {
			t.Fatalf("round %d, call 6: %+v, want RATE_LIMIT_EXCEEDED", round, o)
		}
	}
	use(1)
	ta.clock.Advance(time.Minute)
	use(2) // 5 calls and 10 units again, together
	if n := ta.tickets.Calls(); n != 4 {
		t.Errorf("ticket system called %d times, want 4", n)
	}

	// The wait of a spend refusal: 5 units refill in 30 s at 10 per 60 s.
	tb := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false; c.RateLimit.CallsPerMin = 100 })
	for i := 1; i <= 2; i++ {
		tb.call(t, "token-bob", "w", "create_ticket", ticketArgs())
	}
	o := tb.call(t, "token-bob", "w", "create_ticket", ticketArgs())
	e, _ := o.content["error"].(map[string]any)
	if o.code != "SPEND_LIMIT_EXCEEDED" || e["retryable"] != true || e["retry_after_seconds"] != float64(30) {
		t.Fatalf("third ticket: %+v, want SPEND_LIMIT_EXCEEDED, retryable after 30 s", o)
	}
	tb.clock.Advance(29 * time.Second)
	if o := tb.call(t, "token-bob", "w", "create_ticket", ticketArgs()); o.code != "SPEND_LIMIT_EXCEEDED" {
		t.Fatalf("at +29 s: %+v, want still SPEND_LIMIT_EXCEEDED", o)
	}
	tb.clock.Advance(time.Second)
	if o := tb.call(t, "token-bob", "w", "create_ticket", ticketArgs()); o.code != "" || o.wire != nil {
		t.Fatalf("at +30 s: %+v, want the ticket", o)
	}
	if n := tb.tickets.Calls(); n != 3 {
		t.Errorf("ticket system called %d times, want 3", n)
	}
}

// TestReview23DryRunMustFitTheCostBudget: README, "a dry run whose cost
// does not fit in what is left of the session's budget is refused
// SPEND_LIMIT_EXCEEDED, with the same wait" as the real call, and a refused
// dry run simulated nothing (no [DRY RUN] line).
func TestReview23DryRunMustFitTheCostBudget(t *testing.T) {
	wait := func(dry bool) float64 {
		t.Helper()
		ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = dry; c.RateLimit.CallsPerMin = 100 })
		for range 6 { // 4 of the 10 units left; a ticket costs 5
			docIDs(t, ta.call(t, "token-alice", "s", "search_docs", map[string]any{"query": ""}))
		}
		o := ta.call(t, "token-alice", "s", "create_ticket", ticketArgs())
		if o.code != "SPEND_LIMIT_EXCEEDED" {
			t.Fatalf("dry_run %v: a ticket of 5 units with 4 left: %+v, want SPEND_LIMIT_EXCEEDED", dry, o)
		}
		if n := ta.tickets.Calls(); n != 0 {
			t.Errorf("dry_run %v: ticket system called %d times", dry, n)
		}
		if strings.Contains(ta.marks.String(), "[DRY RUN]") {
			t.Errorf("dry_run %v: a refused call logged a dry run:\n%s", dry, ta.marks.String())
		}
		w, _ := o.content["error"].(map[string]any)["retry_after_seconds"].(float64)
		return w
	}
	if dry, real := wait(true), wait(false); dry != 6 || real != 6 {
		t.Errorf("retry_after_seconds: dry run %v, real write %v; want 6 for both (1 unit at 10 per 60 s)", dry, real)
	}
}

// TestReview23AuditTrailIsPrivate: README, "Audit files go to --audit-dir
// (default ticket-audit, created 0700; the files in it are created
// 0600)": the trail names who called what, for the owner only.
func TestReview23AuditTrailIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "ticket-audit")
	s := startServeHTTP(t, "--audit-dir", dir)
	if r := restPost(t, s.base, "search_docs", "token-alice", "p", `{"arguments": {"query": ""}}`); r.status != 200 {
		t.Fatalf("search: HTTP %d %v", r.status, r.body)
	}
	if c := s.stop(); c != 0 {
		t.Fatalf("serve-http: exit %d; stderr:\n%s", c, s.stderr)
	}
	for _, p := range []string{dir, filepath.Join(dir, auditJSONL), filepath.Join(dir, auditSQLite)} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want none for group and others", p, st.Mode().Perm())
		}
	}
}

// TestReview23LengthsAreCharacters: README, "query is a string of at most
// 200 characters", "title 1 to 120 characters, body at most 4000":
// characters, not bytes, so a query or ticket in another script has the
// same room.
func TestReview23LengthsAreCharacters(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.RateLimit.CallsPerMin = 100 })
	if got := docIDs(t, ta.call(t, "token-bob", "u", "search_docs", map[string]any{"query": strings.Repeat("é", 200)})); len(got) != 0 {
		t.Errorf("200 é: %v, want no match", got)
	}
	if o := ta.call(t, "token-bob", "u", "search_docs", map[string]any{"query": strings.Repeat("é", 201)}); o.code != "INVALID_ARGUMENTS" {
		t.Errorf("201 é: %+v, want INVALID_ARGUMENTS", o)
	}
	if o := ta.call(t, "token-bob", "u", "create_ticket", map[string]any{"title": strings.Repeat("日", 120), "body": strings.Repeat("日", 4000)}); o.code != "" || o.wire != nil {
		t.Errorf("120 and 4000 日: %+v, want the dry-run ticket", o)
	}
	if o := ta.call(t, "token-bob", "u", "create_ticket", map[string]any{"title": strings.Repeat("日", 121), "body": ""}); o.code != "INVALID_ARGUMENTS" {
		t.Errorf("121 日: %+v, want INVALID_ARGUMENTS", o)
	}
}

// TestReview23AuditRowsOfRefusalsAndTheAdmin: the data model's error_code
// and detail in the SQL table and in the JSON-lines file (TestAuditSQLite
// TableMatchesDataModel reads detail but has no refusal to check), and
// "token-admin (engineering, con el indicador de administrador activado)":
// the admin's record carries the admin role, alice's does not.
func TestReview23AuditRowsOfRefusalsAndTheAdmin(t *testing.T) {
	ta := newTestApp(t, nil)
	for range 6 {
		ta.call(t, "token-admin", "adm", "search_docs", map[string]any{"query": ""})
	}
	ta.call(t, "token-alice", "al", "search_docs", map[string]any{"query": ""})
	if err := ta.sqlSink.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var code, detail string
	err := ta.db.QueryRowContext(t.Context(), `SELECT code, detail FROM audit_log
		WHERE session_id = ? AND phase = 'outcome' AND allowed = 0`, restSessionID("adm", "admin")).Scan(&code, &detail)
	if err != nil || code != "RATE_LIMIT_EXCEEDED" || detail == "" {
		t.Errorf("SQL row of the refusal: code %q, detail %q, %v; want RATE_LIMIT_EXCEEDED with a detail", code, detail, err)
	}
	if err := ta.flush(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(ta.jsonlPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	refusals := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("JSONL line %s: %v", sc.Bytes(), err)
		}
		if m["allowed"] == false {
			refusals++
			if m["code"] != "RATE_LIMIT_EXCEEDED" || m["detail"] == nil || m["detail"] == "" || m["session_id"] != restSessionID("adm", "admin") {
				t.Errorf("JSONL refusal %v: want its code, detail and session", m)
			}
		}
	}
	if refusals != 1 {
		t.Errorf("%d refusals in JSONL, want 1", refusals)
	}
	for _, e := range ta.events(t, audit.Filter{Tool: "search_docs"}) {
		if isAdmin := slices.Contains(e.Roles, "admin"); isAdmin != (e.Subject == "admin") {
			t.Errorf("%s's record has roles %v", e.Subject, e.Roles)
		}
	}
}

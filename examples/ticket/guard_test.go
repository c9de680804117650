package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// Auth passthrough.

func TestTwoUsersSeeDifferentResultsFromSameTool(t *testing.T) {
	ta := newTestApp(t, nil)
	tests := []struct {
		tok  string
		want []string
	}{
		{"token-alice", []string{"eng-001", "eng-002", "all-001"}},
		{"token-bob", []string{"sales-001", "sales-002", "all-001"}},
		{"token-admin", []string{"eng-001", "eng-002", "all-001"}},
	}
	for _, tt := range tests {
		got := docIDs(t, ta.call(t, tt.tok, "s-"+tt.tok, "search_docs", map[string]any{"query": ""}))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: docs (-want +got):\n%s", tt.tok, diff)
		}
	}
	// The query filters within what the caller may see, never beyond.
	if got := docIDs(t, ta.call(t, "token-bob", "s-bob", "search_docs", map[string]any{"query": "deploy"})); len(got) != 0 {
		t.Errorf("bob searching for an engineering doc got %v", got)
	}
	evs := ta.events(t, audit.Filter{Tool: "search_docs"})
	var subjects []string
	for _, e := range evs {
		subjects = append(subjects, e.Subject)
	}
	if diff := cmp.Diff([]string{"alice", "bob", "admin", "bob"}, subjects); diff != "" {
		t.Errorf("audited subjects (-want +got):\n%s", diff)
	}
}

func TestMissingInvalidOrEmptyTokenIsRejectedNotDefaulted(t *testing.T) {
	ta := newTestApp(t, allowWrites)
	tests := []struct {
		name, authorization string
	}{
		{"missing", ""},
		{"empty_bearer", "Bearer "},
		{"unknown_token", "Bearer token-mallory"},
		{"other_scheme", "Basic dG9rZW4tYWxpY2U6"},
		{"token_without_scheme", "token-alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.authorization != "" {
				h.Set("Authorization", tt.authorization)
			}
			for _, tool := range []string{"search_docs", "create_ticket"} {
				res, err := ta.rest.call(t.Context(), h, "anon-"+tt.name, tool, []byte(`{"query":"","title":"t","body":"b"}`))
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "UNAUTHENTICATED") {
					t.Errorf("%s: got %v, want UNAUTHENTICATED", tool, res.StructuredContent)
				}
			}
		})
	}
	if n := ta.tickets.Calls(); n != 0 {
		t.Errorf("ticket system called %d times by unauthenticated callers", n)
	}
	evs := ta.events(t, audit.Filter{Code: "UNAUTHENTICATED"})
	if len(evs) != 2*len(tests) {
		t.Errorf("%d UNAUTHENTICATED records, want %d", len(evs), 2*len(tests))
	}
	for _, e := range evs {
		if e.Allowed || e.Subject != "" {
			t.Errorf("unauthenticated record %+v: allowed or with a subject", e)
		}
	}
}

func TestUnknownToolIsToolNotFoundAndAudited(t *testing.T) {
	ta := newTestApp(t, nil)
	o := ta.call(t, "token-alice", "s1", "delete_everything", map[string]any{})
	if o.wire == nil || !strings.Contains(o.wire.Message, `unknown tool "delete_everything"`) {
		t.Errorf("got %+v, want the SDK's unknown-tool error", o)
	}
	// Authentication comes first: an anonymous caller learns nothing about tools.
	if o := ta.call(t, "", "s1", "delete_everything", map[string]any{}); o.code != "UNAUTHENTICATED" {
		t.Errorf("anonymous: got %+v, want UNAUTHENTICATED", o)
	}
	// The server still works after it.
	docIDs(t, ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": ""}))
	want := []row{
		{restSessionID("s1", "alice"), "alice", "delete_everything", "", "TOOL_NOT_FOUND", false, false},
		{restSessionID("s1", ""), "", "delete_everything", "", "UNAUTHENTICATED", false, false},
	}
	if diff := cmp.Diff(want, rows(ta.events(t, audit.Filter{Tool: "delete_everything"}))); diff != "" {
		t.Errorf("audit of the unknown tool (-want +got):\n%s", diff)
	}
}

func TestInvalidArgumentsAreRefusedBeforeTheHandler(t *testing.T) {
	ta := newTestApp(t, func(c *config) {
		allowWrites(c)
		c.DryRun = false
		c.RateLimit.CallsPerMin = 100
		c.RateLimit.CostPerSession = 1000
	})
	tests := []struct {
		name string
		tool string
		args any
	}{
		{"unknown_field", "create_ticket", map[string]any{"title": "t", "body": "b", "priority": "high"}},
		{"missing_title", "create_ticket", map[string]any{"body": "b"}},
		{"empty_title", "create_ticket", map[string]any{"title": "", "body": "b"}},
		{"overlong_title", "create_ticket", map[string]any{"title": strings.Repeat("x", 121), "body": "b"}},
		{"wrong_type", "create_ticket", map[string]any{"title": 7, "body": "b"}},
		{"control_char", "create_ticket", map[string]any{"title": "a\x00b", "body": "b"}},
		{"credential_in_arguments", "search_docs", map[string]any{"query": "", "token": "token-admin"}},
		{"overlong_query", "search_docs", map[string]any{"query": strings.Repeat("q", 201)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if o := ta.call(t, "token-alice", "s1", tt.tool, tt.args); o.code != "INVALID_ARGUMENTS" {
				t.Errorf("got %+v, want INVALID_ARGUMENTS", o)
			}
		})
	}
	if n := ta.tickets.Calls(); n != 0 {
		t.Errorf("ticket system called %d times with invalid arguments", n)
	}
}

// Registry and allowlist.

func TestWriteToolNotOnAllowlistIsDenied(t *testing.T) {
	ta := newTestApp(t, func(c *config) { c.DryRun = false })
	o := ta.call(t, "token-admin", "s1", "create_ticket", ticketArgs())
	if o.code != "WRITE_NOT_ALLOWED" {
		t.Fatalf("got %+v, want WRITE_NOT_ALLOWED", o)
	}
	if n := ta.tickets.Calls(); n != 0 {
		t.Errorf("ticket system called %d times", n)
	}
}

func TestWriteToolOnAllowlistBecomesEnabled(t *testing.T) {
	ta := newTestApp(t, allowWrites)
	if o := ta.call(t, "token-alice", "s1", "create_ticket", ticketArgs()); o.code != "" || o.wire != nil {
		t.Fatalf("got %+v, want success", o)
	}
}

// Dry run.

var dryRunID = regexp.MustCompile(`^DRYRUN-[0-9a-f]{16}$`)

func TestDryRunNeverInvokesTheDownstreamClient(t *testing.T) {
	ta := newTestApp(t, allowWrites) // dry_run: true, as shipped
	seen := map[string]bool{}
	for i := range 3 {
		o := ta.call(t, "token-alice", "s1", "create_ticket", ticketArgs())
		id, _ := o.content["ticket_id"].(string)
		if o.code != "" || !dryRunID.MatchString(id) || o.content["dry_run"] != true {
			t.Fatalf("call %d: got %+v, want a DRYRUN- id with dry_run true", i, o)
		}
		if seen[id] {
			t.Errorf("dry-run id %s repeated", id)
		}
		seen[id] = true
	}
	if n := ta.tickets.Calls(); n != 0 {
		t.Errorf("TicketSystem.Create called %d times in dry-run", n)
	}
	evs := ta.events(t, audit.Filter{Tool: "create_ticket"})
	if len(evs) != 3 {
		t.Fatalf("%d outcome records, want 3", len(evs))
	}
	for _, e := range evs {
		if !e.DryRun || !e.Allowed || e.Class != "write" {
			t.Errorf("record %+v: want an allowed write marked dry_run", e)
		}
	}
	if got := strings.Count(ta.marks.String(), "[DRY RUN] create_ticket"); got != 3 {
		t.Errorf("%d [DRY RUN] log lines, want 3; log:\n%s", got, ta.marks.String())
	}
}

func TestDryRunOffWithAllowlistCallsDownstream(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false })
	o := ta.call(t, "token-bob", "s1", "create_ticket", ticketArgs())
	if o.code != "" || o.content["ticket_id"] != "TICKET-0001" || o.content["dry_run"] != false {
		t.Fatalf("got %+v, want TICKET-0001", o)
	}
	want := []ticket{{ID: "TICKET-0001", Title: "Broken build", Body: "CI red on main", Creator: "bob"}}
	if diff := cmp.Diff(want, ta.tickets.Created(), cmp.AllowUnexported(ticket{})); diff != "" {
		t.Errorf("created tickets (-want +got):\n%s", diff)
	}
	if strings.Contains(ta.marks.String(), "[DRY RUN]") {
		t.Errorf("a real write logged as a dry run:\n%s", ta.marks.String())
	}
	// A write gets a durable intent record before it runs.
	if evs, err := ta.query(t.Context(), audit.Filter{Tool: "create_ticket", Phase: audit.PhaseIntent}); err != nil || len(evs) != 1 {
		t.Errorf("intent records: %v, %v; want 1", evs, err)
	}
}

func TestReadOnlyToolIsUnaffectedByDryRun(t *testing.T) {
	ta := newTestApp(t, nil) // dry_run: true
	if got := docIDs(t, ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": "handbook"})); !cmp.Equal(got, []string{"all-001"}) {
		t.Errorf("got %v", got)
	}
	if evs := ta.events(t, audit.Filter{Tool: "search_docs"}); len(evs) != 1 || evs[0].DryRun {
		t.Errorf("records %+v: want one, not a dry run", evs)
	}
}

// Rate and spend limits.

func TestDryRunCountsAgainstCallsNotCost(t *testing.T) {
	ta := newTestApp(t, allowWrites) // dry-run; 5 calls, 10 units per window; a ticket costs 5
	for i := 1; i <= 5; i++ {
		if o := ta.call(t, "token-alice", "dry", "create_ticket", ticketArgs()); o.code != "" {
			t.Fatalf("dry-run ticket %d: %+v (a simulated write spent budget)", i, o)
		}
	}
	if o := ta.call(t, "token-alice", "dry", "create_ticket", ticketArgs()); o.code != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("dry-run ticket 6: %+v, want RATE_LIMIT_EXCEEDED", o)
	}
}

func TestBurstOfNPlusOneRejectsTheLastAndRefillsWithTheClock(t *testing.T) {
	ta := newTestApp(t, nil) // 5 calls and 10 units per 60 s per session
	search := map[string]any{"query": ""}
	for i := 1; i <= 5; i++ {
		if o := ta.call(t, "token-alice", "burst", "search_docs", search); o.code != "" {
			t.Fatalf("call %d: %+v", i, o)
		}
	}
	o := ta.call(t, "token-alice", "burst", "search_docs", search)
	if o.code != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("call 6: got %+v, want RATE_LIMIT_EXCEEDED", o)
	}
	e := o.content["error"].(map[string]any)
	if e["retryable"] != true || e["retry_after_seconds"] != float64(12) {
		t.Errorf("call 6: error %v, want retryable after 12 s (one call refills every 60/5 s)", e)
	}
	// Still refused for the rest of that wait, however often it is tried.
	for range 3 {
		ta.clock.Advance(3 * time.Second)
		if o := ta.call(t, "token-alice", "burst", "search_docs", search); o.code != "RATE_LIMIT_EXCEEDED" {
			t.Fatalf("at +%v: got %+v, want still refused", 3*time.Second, o)
		}
	}
	ta.clock.Advance(3 * time.Second) // +12 s: one call has refilled
	if o := ta.call(t, "token-alice", "burst", "search_docs", search); o.code != "" {
		t.Fatalf("after retry_after: got %+v", o)
	}
	if o := ta.call(t, "token-alice", "burst", "search_docs", search); o.code != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("second call after retry_after: got %+v, want refused", o)
	}
	ta.clock.Advance(time.Minute) // a whole window: the full budget is back
	for i := 1; i <= 5; i++ {
		if o := ta.call(t, "token-alice", "burst", "search_docs", search); o.code != "" {
			t.Fatalf("after the window, call %d: %+v", i, o)
		}
	}
}

func TestCostCapIsEnforcedIndependentOfCallCount(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false; c.RateLimit.CallsPerMin = 100 })
	for i := 1; i <= 2; i++ { // 2 x 5 units = the 10-unit budget, after 2 of 100 calls
		if o := ta.call(t, "token-alice", "spend", "create_ticket", ticketArgs()); o.code != "" {
			t.Fatalf("ticket %d: %+v", i, o)
		}
	}
	if o := ta.call(t, "token-alice", "spend", "create_ticket", ticketArgs()); o.code != "SPEND_LIMIT_EXCEEDED" {
		t.Fatalf("third ticket: got %+v, want SPEND_LIMIT_EXCEEDED", o)
	}
	if o := ta.call(t, "token-alice", "spend", "search_docs", map[string]any{"query": ""}); o.code != "SPEND_LIMIT_EXCEEDED" {
		t.Fatalf("a 1-unit read on an empty budget: got %+v, want SPEND_LIMIT_EXCEEDED", o)
	}
	if n := ta.tickets.Calls(); n != 2 {
		t.Errorf("ticket system called %d times, want 2", n)
	}
}

func TestSessionsAreIsolatedFromEachOther(t *testing.T) {
	ta := newTestApp(t, nil)
	search := map[string]any{"query": ""}
	for range 5 {
		ta.call(t, "token-alice", "session-a", "search_docs", search)
	}
	if o := ta.call(t, "token-alice", "session-a", "search_docs", search); o.code != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("session-a call 6: %+v", o)
	}
	for i := 1; i <= 5; i++ {
		if o := ta.call(t, "token-alice", "session-b", "search_docs", search); o.code != "" {
			t.Fatalf("session-b call %d: %+v (session-a's burst leaked)", i, o)
		}
	}
}

func TestDeniedCallsDoNotConsumeBudget(t *testing.T) {
	ta := newTestApp(t, nil) // create_ticket not allowlisted
	for i := range 10 {
		if o := ta.call(t, "token-alice", "s1", "create_ticket", ticketArgs()); o.code != "WRITE_NOT_ALLOWED" {
			t.Fatalf("write %d: %+v", i, o)
		}
		if o := ta.call(t, "", "s1", "search_docs", map[string]any{"query": ""}); o.code != "UNAUTHENTICATED" {
			t.Fatalf("anonymous read %d: %+v", i, o)
		}
		if o := ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": 1}); o.code != "INVALID_ARGUMENTS" {
			t.Fatalf("invalid read %d: %+v", i, o)
		}
	}
	for i := 1; i <= 5; i++ {
		if o := ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": ""}); o.code != "" {
			t.Fatalf("read %d after 30 denied calls: %+v", i, o)
		}
	}
	// A rate denial takes nothing either: after it, one refill allows one call.
	if o := ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": ""}); o.code != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("read 6: %+v", o)
	}
	ta.clock.Advance(12 * time.Second)
	if o := ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": ""}); o.code != "" {
		t.Fatalf("read after one refill: %+v", o)
	}
}

// Audit.

type row struct {
	Session, Subject, Tool, Class, Code string
	Allowed, DryRun                     bool
}

func rows(evs []audit.Event) []row {
	var out []row
	for _, e := range evs {
		out = append(out, row{e.SessionID, e.Subject, e.Tool, e.Class, e.Code, e.Allowed, e.DryRun})
	}
	return out
}

func TestAuditJSONLAndSQLiteReconstructASession(t *testing.T) {
	ta := newTestApp(t, allowWrites) // dry-run on
	ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": ""})
	ta.call(t, "token-alice", "s1", "create_ticket", ticketArgs())
	ta.call(t, "", "s1", "search_docs", map[string]any{"query": ""})
	ta.call(t, "token-bob", "s2", "search_docs", map[string]any{"query": ""})
	// alice's session is hers: the name s1 from another caller (bob, an
	// anonymous one) names another session.
	if o := ta.call(t, "token-bob", "s1", "search_docs", map[string]any{"query": ""}); o.code != "" || o.wire != nil {
		t.Errorf("bob naming s1: %+v, want his own session s1", o)
	}

	sid := restSessionID("s1", "alice")
	want := []row{
		{sid, "alice", "search_docs", "read", "", true, false},
		{sid, "alice", "create_ticket", "write", "", true, true},
	}
	f := audit.Filter{SessionID: sid, Phase: audit.PhaseOutcome}
	if diff := cmp.Diff(want, rows(ta.events(t, f))); diff != "" {
		t.Errorf("SQLite session s1 (-want +got):\n%s", diff)
	}
	if err := ta.flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.QueryJSONL(ta.jsonlPath(), f)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rows(evs)); diff != "" {
		t.Errorf("JSONL session s1 (-want +got):\n%s", diff)
	}
	// Every record has the data model's fields.
	for _, e := range evs {
		if e.Time.IsZero() || e.CorrelationID == "" || e.ArgsSHA256 == "" || e.LatencyMS < 0 {
			t.Errorf("incomplete record %+v", e)
		}
	}
	if got := ta.events(t, audit.Filter{SessionID: restSessionID("s2", "bob")}); len(got) != 1 || got[0].Subject != "bob" {
		t.Errorf("session s2: %+v, want bob's one call", got)
	}
	if got := ta.events(t, audit.Filter{SessionID: restSessionID("s1", "bob")}); len(got) != 1 || got[0].Subject != "bob" {
		t.Errorf("bob's session s1: %+v, want his one call", got)
	}
	want = []row{{restSessionID("s1", ""), "", "search_docs", "", "UNAUTHENTICATED", false, false}}
	if diff := cmp.Diff(want, rows(ta.events(t, audit.Filter{SessionID: restSessionID("s1", "")}))); diff != "" {
		t.Errorf("the anonymous session s1 (-want +got):\n%s", diff)
	}
}

func TestRateLimitDenialIsAudited(t *testing.T) {
	ta := newTestApp(t, nil)
	for range 6 {
		ta.call(t, "token-bob", "s1", "search_docs", map[string]any{"query": ""})
	}
	no := false
	evs := ta.events(t, audit.Filter{SessionID: restSessionID("s1", "bob"), Allowed: &no})
	want := []row{{restSessionID("s1", "bob"), "bob", "search_docs", "read", "RATE_LIMIT_EXCEEDED", false, false}}
	if diff := cmp.Diff(want, rows(evs)); diff != "" {
		t.Errorf("denied records (-want +got):\n%s", diff)
	}
}

func TestAuditSQLiteTableMatchesDataModel(t *testing.T) {
	ta := newTestApp(t, allowWrites)
	ta.call(t, "token-alice", "sql", "search_docs", map[string]any{"query": ""})
	ta.call(t, "token-alice", "sql", "create_ticket", ticketArgs())
	ta.call(t, "token-alice", "other", "search_docs", map[string]any{"query": ""})
	if err := ta.sqlSink.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The seed's audit_log columns, by their names in this schema:
	// timestamp=time, user_id=subject, tool_name=tool, read_or_write=class,
	// error_code=code.
	rs, err := ta.db.QueryContext(t.Context(), `SELECT time, session_id, subject, tool, class, dry_run, allowed, latency_ms, code, detail
		FROM audit_log WHERE session_id = ? AND phase = 'outcome' ORDER BY id`, restSessionID("sql", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var got []row
	for rs.Next() {
		var (
			r       row
			ts      any
			latency float64
			detail  string
		)
		if err := rs.Scan(&ts, &r.Session, &r.Subject, &r.Tool, &r.Class, &r.DryRun, &r.Allowed, &latency, &r.Code, &detail); err != nil {
			t.Fatal(err)
		}
		if ts == nil || latency < 0 {
			t.Errorf("row %+v: time %v, latency %v", r, ts, latency)
		}
		got = append(got, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	want := []row{
		{restSessionID("sql", "alice"), "alice", "search_docs", "read", "", true, false},
		{restSessionID("sql", "alice"), "alice", "create_ticket", "write", "", true, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SQL rows (-want +got):\n%s", diff)
	}
}

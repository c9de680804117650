package mcpguard_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r59fTokens: eve is the agent's user (support); tok-bad is no one's.
const r59fTokens = `{"tok-eve":{"sub":"eve","role":"support"}}`

var r59fObj = json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"id":{"type":"integer"}},"additionalProperties":false}`)

// r59fSaw is what the client was told about one call.
type r59fSaw struct {
	what string // the step of the scenario
	tool string
	code string // "" for a success, "isError" for a tool error
	corr string // the correlation id the client was told ("" if none)
}

// r59fRun plays the incident against a guard whose sink is sink, over
// streamable HTTP (stateless, bearer tokens), and returns what the client
// saw of each call.
func r59fRun(t *testing.T, sink audit.Sink) []r59fSaw { return r59fRunV(t, sink, false) }

// r59fRunV is r59fRun; old: a stateful session of protocol 2025-11-25, bound
// to its user, confirmed by an elicitation within the call.
func r59fRunV(t *testing.T, sink audit.Sink, old bool) []r59fSaw {
	t.Helper()
	ctx := context.Background()
	zero := 0.0
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "admin_purge", Class: policy.Read, Roles: []string{"admin"}},
			{Name: "delete_all", Class: policy.Write},
			{Name: "refund", Class: policy.Write, Confirm: true, Cost: 5,
				ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100, Min: &zero}}},
			{Name: "lookup", Class: policy.Read},
			{Name: "ping", Class: policy.Read},
			{Name: "book", Class: policy.Write, Cost: 1},
			{Name: "slow", Class: policy.Read},
			{Name: "boom", Class: policy.Read},
			{Name: "fail", Class: policy.Read},
			{Name: "wslow", Class: policy.Write},
			{Name: "wboom", Class: policy.Write},
			{Name: "rboom", Class: policy.Write, Confirm: true},
			{Name: "rslow", Class: policy.Write, Confirm: true},
		},
		WriteAllowlist: []string{"refund", "book", "wslow", "wboom", "rboom", "rslow"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "ping", Max: 2, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := token.Parse([]byte(r59fTokens))
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "incident", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("ok"), nil
	}
	for _, n := range []string{"admin_purge", "lookup", "ping"} {
		srv.AddTool(&mcp.Tool{Name: n, InputSchema: r59fObj, Annotations: ro}, ok)
	}
	for _, n := range []string{"delete_all", "refund", "book"} {
		srv.AddTool(&mcp.Tool{Name: n, InputSchema: r59fObj}, ok)
	}
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: r59fObj, Annotations: ro}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "wslow", InputSchema: r59fObj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "rslow", InputSchema: r59fObj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "rboom", InputSchema: r59fObj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("confirmed write handler exploded")
	})
	srv.AddTool(&mcp.Tool{Name: "wboom", InputSchema: r59fObj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("write handler exploded")
	})
	srv.AddTool(&mcp.Tool{Name: "boom", InputSchema: r59fObj, Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("handler exploded")
	})
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: r59fObj, Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "backend said no"}}}, nil
	})
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{
		Audit: sink, Limiter: lim, Confirmer: signer, Logger: quiet,
		Tools: map[string]mcpguard.ToolOptions{"slow": {Timeout: 50 * time.Millisecond}, "wslow": {Timeout: 50 * time.Millisecond}, "rslow": {Timeout: 50 * time.Millisecond}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: !old})
	if old {
		h = tokens.BindSessions(h)
	}
	hs := httptest.NewServer(h)
	defer func() {
		hs.Close()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		g.Wait(wctx)
	}()
	answer := "decline"
	connect := func(tok string) *mcp.ClientSession {
		b := &rfBalancer{urls: []string{hs.URL}, token: tok, route: func() int { return 0 }, hits: make([]int, 1)}
		copts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: elicitCaps()}
		var sopts *mcp.ClientSessionOptions
		if old {
			copts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: answer}, nil
			}
			sopts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, copts)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: b}}, sopts)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	eve := connect("tok-eve")
	defer eve.Close()
	bad := connect("tok-bad")
	defer bad.Close()

	var saw []r59fSaw
	call := func(cs *mcp.ClientSession, what string, p *mcp.CallToolParams) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, p)
		s := r59fSaw{what: what, tool: p.Name}
		if d, ok := mcpguard.DenialOf(res, err); ok {
			s.code, s.corr = string(d.Code), d.CorrelationID
		} else if err != nil && strings.Contains(err.Error(), "unknown tool") {
			s.code = "TOOL_NOT_FOUND" // the go-sdk's own error: no id told
		} else if err != nil {
			t.Fatalf("%s: %v", what, err)
		} else if res.IsError {
			s.code = "isError"
		} else if res.RequestState != "" {
			s.code = "CONFIRMATION_REQUIRED" // asked: a round of its own, no id told
		}
		saw = append(saw, s)
		return res
	}
	a := func(m map[string]any) map[string]any { return m }
	call(eve, "hidden tool", &mcp.CallToolParams{Name: "admin_purge", Arguments: a(map[string]any{})})
	call(eve, "write off the allowlist", &mcp.CallToolParams{Name: "delete_all", Arguments: a(map[string]any{})})
	call(eve, "argument limit", &mcp.CallToolParams{Name: "refund", Arguments: a(map[string]any{"amount": 5000})})
	call(eve, "invalid arguments", &mcp.CallToolParams{Name: "lookup", Arguments: a(map[string]any{"id": "seven"})})
	for i := range 4 {
		call(eve, "flood "+string(rune('0'+i)), &mcp.CallToolParams{Name: "ping", Arguments: a(map[string]any{})})
	}
	call(eve, "dry run", &mcp.CallToolParams{Name: "book", Arguments: a(map[string]any{"amount": 3}), Meta: mcp.Meta{dryrun.MetaKey: true}})
	for _, action := range []string{"decline", "accept"} {
		if old {
			answer = action
			call(eve, "refund "+action, &mcp.CallToolParams{Name: "refund", Arguments: a(map[string]any{"amount": 42})})
			continue
		}
		args := a(map[string]any{"amount": 42})
		ask := call(eve, "refund asked ("+action+")", &mcp.CallToolParams{Name: "refund", Arguments: args})
		if ask == nil || ask.RequestState == "" {
			t.Fatalf("refund: no confirmation asked: %s", mustJSON(ask))
		}
		call(eve, "refund "+action, &mcp.CallToolParams{Name: "refund", Arguments: args, RequestState: ask.RequestState,
			InputResponses: mcp.InputResponseMap{"mcpguard.confirm": &mcp.ElicitResult{Action: action}}})
	}
	for _, tool := range []string{"rboom", "rslow"} {
		p := &mcp.CallToolParams{Name: tool, Arguments: a(map[string]any{})}
		if old {
			answer = "accept"
			call(eve, tool+" confirmed", p)
			continue
		}
		ask := call(eve, tool+" asked", p)
		call(eve, tool+" confirmed", &mcp.CallToolParams{Name: tool, Arguments: p.Arguments, RequestState: ask.RequestState,
			InputResponses: mcp.InputResponseMap{"mcpguard.confirm": &mcp.ElicitResult{Action: "accept"}}})
	}
	call(eve, "timeout", &mcp.CallToolParams{Name: "slow", Arguments: a(map[string]any{})})
	call(eve, "panic", &mcp.CallToolParams{Name: "boom", Arguments: a(map[string]any{})})
	call(eve, "write timeout", &mcp.CallToolParams{Name: "wslow", Arguments: a(map[string]any{})})
	call(eve, "write panic", &mcp.CallToolParams{Name: "wboom", Arguments: a(map[string]any{})})
	call(eve, "tool error", &mcp.CallToolParams{Name: "fail", Arguments: a(map[string]any{})})
	for i := range 2 {
		call(bad, "bad token "+string(rune('0'+i)), &mcp.CallToolParams{Name: "lookup", Arguments: a(map[string]any{"id": 1})})
	}
	return saw
}

// r59fCheck reconstructs the incident from events alone (as a reader of the
// trail would) and reports what is missing or wrong against what the client saw.
func r59fCheck(t *testing.T, sink string, evs []audit.Event, saw []r59fSaw) {
	t.Helper()
	byCorr := map[string][]audit.Event{}
	for _, e := range evs {
		byCorr[e.CorrelationID] = append(byCorr[e.CorrelationID], e)
		if e.Time.IsZero() || e.CorrelationID == "" || e.Phase == "" {
			t.Errorf("%s: record without time, id or phase: %+v", sink, e)
		}
		if e.Args != nil {
			t.Errorf("%s: record carries argument values: %+v", sink, e)
		}
		for _, v := range []string{"5000", "seven", "42"} {
			if strings.Contains(e.Detail, v) {
				t.Errorf("%s: detail quotes an argument value %q: %+v", sink, v, e)
			}
		}
		if e.Phase == audit.PhaseOutcome && e.Tool != "" && e.Subject == "eve" && e.ArgsSHA256 == "" {
			t.Errorf("%s: outcome without args_sha256: %+v", sink, e)
		}
	}
	// Every denial the client was told of has its record under the id it was told.
	for _, s := range saw {
		if s.corr == "" {
			continue
		}
		recs := byCorr[s.corr]
		var out *audit.Event
		for i := range recs {
			if recs[i].Phase == audit.PhaseOutcome {
				out = &recs[i]
			}
		}
		if out == nil {
			t.Errorf("%s: %s: no outcome record under the correlation id the client was told (%s)", sink, s.what, s.corr)
			continue
		}
		if out.Code != s.code || out.Allowed {
			t.Errorf("%s: %s: record says allowed=%v code %q, the client was told %q", sink, s.what, out.Allowed, out.Code, s.code)
		}
		if out.Tool != s.tool && s.code != "UNAUTHENTICATED" {
			t.Errorf("%s: %s: record's tool %q, want %q", sink, s.what, out.Tool, s.tool)
		}
	}
	// Counts per tool and code, from the trail.
	type key struct{ tool, code string }
	got := map[key]int{}
	for _, e := range evs {
		if e.Phase == audit.PhaseOutcome {
			got[key{e.Tool, e.Code}]++
		}
	}
	want := map[key]int{}
	for _, s := range saw {
		c := s.code
		if c == "isError" {
			c = ""
		}
		tool := s.tool
		want[key{tool, c}]++
	}
	for k, n := range want {
		g := got[k]
		if k.code == "UNAUTHENTICATED" {
			g = got[k] + got[key{"", k.code}]
		}
		if g < n {
			t.Errorf("%s: %d outcome records of %q code %q, the client made %d such calls", sink, g, k.tool, k.code, n)
		}
	}
	// Each write that ran has an intent and an outcome sharing an id, intent first.
	for id, recs := range byCorr {
		var intent, outcome int
		for i, e := range recs {
			switch e.Phase {
			case audit.PhaseIntent:
				intent++
				if outcome > 0 {
					t.Errorf("%s: %s: intent after outcome", sink, id)
				}
			case audit.PhaseOutcome:
				outcome++
			}
			if i > 0 && e.Time.Before(recs[i-1].Time) {
				t.Errorf("%s: %s: records out of time order", sink, id)
			}
		}
		if intent > 0 && outcome == 0 {
			t.Errorf("%s: %s: an intent with no outcome: %+v", sink, id, recs)
		}
	}
	// A confirmed call's records say so, however it ended.
	for _, e := range evs {
		if (e.Tool == "rboom" || e.Tool == "rslow") && e.Detail != "confirmation requested" && !strings.HasPrefix(e.Detail, "confirmed by the user") {
			t.Errorf("%s: a record of a confirmed call does not say it was confirmed: %+v", sink, e)
		}
	}
	// Flags: the dry run, the confirmed call, the timed-out call's latency.
	var dry, confirmed, declined, timeout, panicked bool
	for _, e := range evs {
		switch {
		case e.Tool == "book" && e.DryRun && e.Phase == audit.PhaseOutcome:
			dry = true
			if e.Cost != 0 {
				t.Errorf("%s: dry run charged %v", sink, e.Cost)
			}
		case e.Tool == "refund" && e.Allowed && e.Phase == audit.PhaseOutcome && strings.HasPrefix(e.Detail, "confirmed by the user"):
			confirmed = true
			if e.Cost != 5 {
				t.Errorf("%s: confirmed refund's cost %v, want 5", sink, e.Cost)
			}
		case e.Tool == "refund" && strings.Contains(e.Detail, "decline"):
			declined = true
		case e.Tool == "slow" && e.Code == "UPSTREAM_UNAVAILABLE":
			timeout = true
			if e.LatencyMS < 40 {
				t.Errorf("%s: timed-out call's latency %vms, it ran 50ms", sink, e.LatencyMS)
			}
		case e.Tool == "boom" && e.Code == "INTERNAL":
			panicked = true
		}
	}
	if !dry || !confirmed || !declined || !timeout || !panicked {
		t.Errorf("%s: trail lacks: dry=%v confirmed=%v declined=%v timeout=%v panic=%v", sink, dry, confirmed, declined, timeout, panicked)
	}
}

// r59fLog prints a trail (for the report).
func r59fLog(t *testing.T, evs []audit.Event) {
	for _, e := range evs {
		b, _ := json.Marshal(e)
		t.Logf("%s", b)
	}
}

func TestReview59fIncidentJSONL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	saw := r59fRun(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.QueryJSONL(path, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		r59fLog(t, evs)
	}
	if testing.Verbose() {
		for _, x := range saw {
			t.Logf("saw %+v", x)
		}
	}
	r59fCheck(t, "jsonl", evs, saw)
	// Plain reading: every line is a JSON object with the DESIGN's fields.
	raw, _ := os.ReadFile(path)
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, k := range []string{"time", "correlation_id", "phase", "allowed", "dry_run", "latency_ms"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d lacks %q: %s", i+1, k, line)
			}
		}
	}
}

func TestReview59fIncidentSQLite(t *testing.T) {
	db, err := audit.OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	saw := r59fRun(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	r59fCheck(t, "sqlite", evs, saw)
}

func TestReview59fIncidentPostgres(t *testing.T) {
	pg := testsvc.StartPostgres(t)
	db, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	saw := r59fRun(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.QuerySQL(context.Background(), db, audit.Postgres, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	r59fCheck(t, "postgres", evs, saw)
}

// TestReview59fIncidentSameInEverySink: one incident, recorded through one
// Fanout into JSONL, SQLite and PostgreSQL at once; read back with each
// sink's reader, the three trails hold the same records in the same order.
func TestReview59fIncidentSameInEverySink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jpath := filepath.Join(dir, "audit.jsonl")
	js, err := audit.OpenJSONL(jpath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ldb, err := audit.OpenSQLite(filepath.Join(dir, "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ldb.Close()
	ls, err := audit.NewSQL(ctx, ldb, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	pg := testsvc.StartPostgres(t)
	pdb, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	ps, err := audit.NewSQL(ctx, pdb, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := audit.Fanout(js, ls, ps)
	saw := r59fRun(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	je, err := audit.QueryJSONL(jpath, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	le, err := audit.QuerySQL(ctx, ldb, audit.SQLite, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	pe, err := audit.QuerySQL(ctx, pdb, audit.Postgres, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	r59fCheck(t, "fanout/jsonl", je, saw)
	enc := func(e audit.Event) string {
		e.Time = e.Time.UTC()
		b, _ := json.Marshal(e)
		return string(b)
	}
	for name, other := range map[string][]audit.Event{"sqlite": le, "postgres": pe} {
		if len(other) != len(je) {
			t.Errorf("%s holds %d records, jsonl %d", name, len(other), len(je))
		}
		for i := range min(len(je), len(other)) {
			if a, b := enc(je[i]), enc(other[i]); a != b {
				t.Errorf("record %d differs:\njsonl:  %s\n%s: %s", i, a, name, b)
			}
		}
	}
	// Every filter built from a record's own fields finds it, in every
	// reader, and finds what Filter.Match says it should.
	tz := time.FixedZone("X", -5*3600)
	readers := map[string]func(audit.Filter) ([]audit.Event, error){
		"jsonl":    func(f audit.Filter) ([]audit.Event, error) { return audit.QueryJSONL(jpath, f) },
		"sqlite":   func(f audit.Filter) ([]audit.Event, error) { return audit.QuerySQL(ctx, ldb, audit.SQLite, f) },
		"postgres": func(f audit.Filter) ([]audit.Event, error) { return audit.QuerySQL(ctx, pdb, audit.Postgres, f) },
	}
	id := func(e audit.Event) string { return e.CorrelationID + "/" + string(e.Phase) }
	for _, e := range je {
		allowed := e.Allowed
		fs := []audit.Filter{
			{Subject: e.Subject}, {Tool: e.Tool}, {CorrelationID: e.CorrelationID}, {SessionID: e.SessionID},
			{Phase: e.Phase}, {Code: e.Code}, {Allowed: &allowed},
			{Since: e.Time.In(tz), Until: e.Time.Add(time.Nanosecond).In(tz)},
			{Subject: e.Subject, Tool: e.Tool, Phase: e.Phase, Code: e.Code, Allowed: &allowed, CorrelationID: e.CorrelationID},
		}
		for _, f := range fs {
			var want []string
			for _, x := range je {
				if f.Match(&x) {
					want = append(want, id(x))
				}
			}
			for name, read := range readers {
				got, err := read(f)
				if err != nil {
					t.Errorf("%s %+v: %v", name, f, err)
					continue
				}
				var ids []string
				for _, x := range got {
					ids = append(ids, id(x))
				}
				if strings.Join(ids, " ") != strings.Join(want, " ") {
					t.Errorf("%s: filter %+v of record %s: got %v, want %v", name, f, id(e), ids, want)
				}
			}
		}
	}
	// Paging through the whole trail, 2 at a time, reads each record once.
	for name, read := range readers {
		f := audit.Filter{Limit: 2}
		var ids []string
		for range 100 {
			page, err := read(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range page {
				ids = append(ids, id(x))
			}
			if len(page) < f.Limit {
				break
			}
			f = f.Next(page)
		}
		var want []string
		for _, x := range je {
			want = append(want, id(x))
		}
		if strings.Join(ids, " ") != strings.Join(want, " ") {
			t.Errorf("%s: paged %v, want %v", name, ids, want)
		}
	}
	// Plain SQL: what a DBA reads in the time column is the record's instant.
	for name, db := range map[string]*sql.DB{"sqlite": ldb, "postgres": pdb} {
		var n int
		q := "SELECT count(*) FROM audit_log WHERE tool = 'refund' AND phase = 'outcome' AND allowed AND code = ''"
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if n != 1 {
			t.Errorf("%s: %d refunds carried out, want 1", name, n)
		}
	}
}

// TestReview59fIncidentOldClient: the incident from a client on protocol
// 2025-11-25, on a stateful session bound to its user, confirming within
// the call; recorded through one Fanout into JSONL, SQLite and PostgreSQL.
func TestReview59fIncidentOldClient(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jpath := filepath.Join(dir, "audit.jsonl")
	js, err := audit.OpenJSONL(jpath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ldb, err := audit.OpenSQLite(filepath.Join(dir, "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ldb.Close()
	ls, err := audit.NewSQL(ctx, ldb, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	pg := testsvc.StartPostgres(t)
	pdb, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	ps, err := audit.NewSQL(ctx, pdb, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := audit.Fanout(js, ls, ps)
	saw := r59fRunV(t, f, true)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	je, err := audit.QueryJSONL(jpath, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		r59fLog(t, je)
		for _, x := range saw {
			t.Logf("saw %+v", x)
		}
	}
	r59fCheck(t, "old/jsonl", je, saw)
	for name, q := range map[string]func() ([]audit.Event, error){
		"sqlite":   func() ([]audit.Event, error) { return audit.QuerySQL(ctx, ldb, audit.SQLite, audit.Filter{}) },
		"postgres": func() ([]audit.Event, error) { return audit.QuerySQL(ctx, pdb, audit.Postgres, audit.Filter{}) },
	} {
		evs, err := q()
		if err != nil {
			t.Fatal(err)
		}
		r59fCheck(t, "old/"+name, evs, saw)
	}
	sess := map[string]bool{}
	for _, e := range je {
		if e.Subject == "eve" {
			sess[e.SessionID] = true
		}
	}
	if len(sess) != 1 || sess[""] {
		t.Errorf("eve's records carry session ids %v, want her one session's", sess)
	}
}

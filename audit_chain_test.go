package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mustAudit returns the Audit middleware writing to sink with opts.
func mustAudit(t testing.TB, sink audit.Sink, opts *mcpguard.Options) mcpguard.Middleware {
	t.Helper()
	m, err := mcpguard.Audit(sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAuditChainRecordsAsTheGuard runs the same calls through a Guard and
// through the stand-alone guards in the documented order (Audit outside
// Authenticate), with the same settings, and checks that their outcome
// records agree on everything but time, correlation id, latency and detail:
// the caller, the class, the keyed argument hash, the cost charged, the dry
// run, the session and the arguments recorded verbatim. Before the guards
// inside Audit reported to it, the chain's records had no subject, class,
// cost or dry run, and an unkeyed hash.
func TestAuditChainRecordsAsTheGuard(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "echo", Class: policy.Read},
			{Name: "pay", Class: policy.Write, Cost: 3},
			{Name: "secret", Class: policy.Read, Roles: []string{"admin"}},
		},
		WriteAllowlist: []string{"pay"},
		ShowForbidden:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"amount":{"type":"integer"}}}`)
	key := []byte("0123456789abcdef0123")
	newOpts := func(sink audit.Sink, lim *limiter.Limiter) *mcpguard.Options {
		return &mcpguard.Options{
			Audit: sink, ArgsKey: key, Limiter: lim, Logger: quiet, NoWriteAhead: true,
			Tools:      map[string]mcpguard.ToolOptions{"pay": {RecordArgs: []string{"amount"}}},
			SessionKey: func(*mcp.CallToolRequest, *mcpguard.Identity) string { return "sess-1" },
		}
	}
	newLim := func() *limiter.Limiter {
		l, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 4, Window: time.Hour},
			{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	// The Guard's path.
	guardSink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), newOpts(guardSink, newLim()))
	if err != nil {
		t.Fatal(err)
	}
	var viaGuard = map[string]mcp.ToolHandler{}
	for _, name := range []string{"echo", "pay", "secret"} {
		h, err := g.Wrap(&mcp.Tool{Name: name, InputSchema: schema}, (&stub{}).handle)
		if err != nil {
			t.Fatal(err)
		}
		viaGuard[name] = h
	}

	// The chain's path.
	chainSink := &memSink{}
	opts := newOpts(nil, nil)
	v, err := mcpguard.NewValidator(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	limit, err := mcpguard.Limit(newLim(), pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := mcpguard.DryRun(pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	chain := mcpguard.Chain(mcpguard.Recover(quiet), mustAudit(t, chainSink, opts), mcpguard.Authenticate(fixed(bob)),
		mcpguard.Authorize(pol), mcpguard.ValidateArguments(v), limit, dry)((&stub{}).handle)

	dryReq := func(name, args string) *mcp.CallToolRequest {
		r := req(name, args)
		r.Params.Meta = mcp.Meta{dryrun.MetaKey: true}
		return r
	}
	calls := []*mcp.CallToolRequest{
		req("echo", `{"text":"hi"}`),
		req("pay", `{"amount":7}`),
		dryReq("pay", `{"amount":8}`),
		req("secret", `{}`),
		req("echo", `{"text":1}`),
		req("pay", `{"amount":9}`),
		req("echo", `{"text":"over the rate"}`),
	}
	for _, r := range calls {
		viaGuard[r.Params.Name](context.Background(), r)
		chain(context.Background(), r)
	}
	ignore := func(evs []audit.Event) []audit.Event {
		var out []audit.Event
		for _, e := range evs {
			if e.Phase != audit.PhaseOutcome {
				continue
			}
			e.Time, e.CorrelationID, e.LatencyMS, e.Detail = time.Time{}, "", 0, ""
			out = append(out, e)
		}
		return out
	}
	want, got := ignore(guardSink.all()), ignore(chainSink.all())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chain records differ from the guard's (-guard +chain):\n%s", diff)
	}
	if len(got) != len(calls) {
		t.Fatalf("%d chain records, want %d", len(got), len(calls))
	}
	// The comparison is only worth something if the records say things.
	for i, wantCode := range []string{"", "", "", "FORBIDDEN", "INVALID_ARGUMENTS", "", "RATE_LIMIT_EXCEEDED"} {
		e := got[i]
		if e.Code != wantCode || e.Subject != "bob" || e.SessionID != "sess-1" {
			t.Errorf("record %d: code %q subject %q session %q, want %q bob sess-1", i, e.Code, e.Subject, e.SessionID, wantCode)
		}
	}
	if e := got[1]; e.Class != "write" || e.Cost != 3 || e.DryRun || fmt.Sprint(e.Args["amount"]) != "7" {
		t.Errorf("write record = %+v, want class write, cost 3, amount 7 recorded", e)
	}
	if e := got[2]; !e.DryRun || e.Cost != 0 {
		t.Errorf("dry-run record = %+v, want dry_run and cost 0", e)
	}
	unkeyed := audit.ArgsSHA256(json.RawMessage(`{"amount":7}`))
	if got[1].ArgsSHA256 == "" || got[1].ArgsSHA256 == unkeyed {
		t.Errorf("args_sha256 %q is empty or unkeyed", got[1].ArgsSHA256)
	}
}

// TestAuditRefusesBadSettings checks that Audit refuses a nil sink and a
// short ArgsKey, as New does.
func TestAuditRefusesBadSettings(t *testing.T) {
	if _, err := mcpguard.Audit(nil, nil); err == nil {
		t.Error("Audit(nil sink): no error")
	}
	_, err := mcpguard.Audit(&memSink{}, &mcpguard.Options{ArgsKey: []byte("short")})
	if err == nil || !strings.Contains(err.Error(), "ArgsKey") {
		t.Errorf("Audit with a 5-byte ArgsKey: err %v, want one naming ArgsKey", err)
	}
}

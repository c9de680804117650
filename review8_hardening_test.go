package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview8AuditRecordNotRewrittenByNestedChain: a tool handler behind
// the documented chain (Audit, Authenticate, Authorize, ValidateArguments,
// Limit) that serves its call by running another guarded handler, with
// its own Authenticate (a service identity), Authorize and Limit, on the
// context it was given (a dispatcher tool, say). A user expects the outer
// call's audit record to describe the outer call: alice's write of
// "dispatch", charged its cost 3. Instead the inner chain's guards find the
// outer Audit's call in the context (auditCall, guards.go) and overwrite
// what the outer guards reported: the record names the inner call's caller
// ("svc"), the inner tool's class ("read") and its charge (0). The audit
// trail then attributes alice's write to another principal.
func TestReview8AuditRecordNotRewrittenByNestedChain(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "dispatch", Class: policy.Write, Cost: 3},
			{Name: "lookup", Class: policy.Read},
		},
		WriteAllowlist: []string{"dispatch"},
	})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object"}`)
	v, err := mcpguard.NewValidator(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	newLimit := func() mcpguard.Middleware {
		l, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour},
			{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := mcpguard.Limit(l, pol, &mcpguard.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	svc := &mcpguard.Identity{Principal: &policy.Principal{Subject: "svc", Roles: []string{"service"}}}

	// The inner chain: no Audit of its own.
	inner := mcpguard.Chain(mcpguard.Authenticate(fixed(svc)), mcpguard.Authorize(pol),
		mcpguard.ValidateArguments(v), newLimit())((&stub{}).handle)
	dispatch := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return inner(ctx, req("lookup", `{}`))
	}

	sink := &memSink{}
	outer := mcpguard.Chain(mcpguard.Recover(quiet), mustAudit(t, sink, &mcpguard.Options{Logger: quiet}),
		mcpguard.Authenticate(fixed(alice)), mcpguard.Authorize(pol), mcpguard.ValidateArguments(v), newLimit())(dispatch)

	res, err := outer(context.Background(), req("dispatch", `{}`))
	if err != nil || res == nil || res.IsError {
		t.Fatalf("dispatch: %v %+v", err, res)
	}
	var recs []audit.Event
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome {
			recs = append(recs, e)
		}
	}
	if len(recs) != 1 {
		t.Fatalf("%d outcome records, want 1: %+v", len(recs), recs)
	}
	e := recs[0]
	if e.Tool != "dispatch" || e.Subject != "alice" || e.Class != "write" || e.Cost != 3 || !e.Allowed {
		t.Errorf("outer record: tool %q subject %q class %q cost %v allowed %v; want dispatch, alice, write, 3, true (the nested chain rewrote it)",
			e.Tool, e.Subject, e.Class, e.Cost, e.Allowed)
	}
}

// TestReview8ToolsListKeepsAuthenticatorCapRefusal: the Authenticator
// contract (auth.go) now lets an authenticator refuse with
// RATE_LIMIT_EXCEEDED or CONCURRENCY_LIMIT_EXCEEDED (its own cap, such as
// examples/shop's in-flight cap on its session checks, which its doc says
// counts the checks "of tools/list" too), and says an Authenticator
// resolves the caller of "a tools/call or a tools/list". A client listing
// tools while the authenticator is at its cap expects that retryable
// refusal, with its wait, as tools/call gets it (authDenial, guards.go).
// Instead listTools (install.go:343) refuses every authenticator error as
// UNAUTHENTICATED "authentication required", which tells the client to
// sign in again, the very answer the shop's comment on `unavailable` says
// must not be given to a caller who should just retry.
func TestReview8ToolsListKeepsAuthenticatorCapRefusal(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	capped := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		d := mcpguard.Deny(mcpguard.CodeConcurrencyLimitExceeded, "the server has too many calls in flight; try again shortly")
		d.RetryAfter = 2 * time.Second
		return nil, d
	})
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return textResult("ok"), nil, nil
	})
	g, err := mcpguard.New(pol, capped, &mcpguard.Options{Audit: &memSink{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })

	codeOfWire := func(err error) string {
		we := wireError(err)
		if we == nil {
			t.Fatalf("want a JSON-RPC error, got %v", err)
		}
		var data struct {
			Code string `json:"code"`
		}
		if err := json.Unmarshal(we.Data, &data); err != nil {
			t.Fatalf("error data %s: %v", we.Data, err)
		}
		return data.Code
	}
	// tools/call: the authenticator's refusal as it is.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "CONCURRENCY_LIMIT_EXCEEDED" {
		t.Fatalf("tools/call: %q, want CONCURRENCY_LIMIT_EXCEEDED", got)
	}
	// tools/list: the same caller, the same authenticator.
	_, err = cs.ListTools(ctx, nil)
	if got := codeOfWire(err); got != "CONCURRENCY_LIMIT_EXCEEDED" {
		t.Errorf("tools/list while the authenticator is at its cap: %q, want CONCURRENCY_LIMIT_EXCEEDED (retryable), not a request to sign in again", got)
	}
}

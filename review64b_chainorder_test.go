package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// review64bSink keeps the events written to it (calls here are sequential).
type review64bSink struct{ events []audit.Event }

func (s *review64bSink) Write(_ context.Context, e *audit.Event) error {
	s.events = append(s.events, *e)
	return nil
}

// One policy, two enforcement points: a Guard installed on a server, and
// the stand-alone chain in the order steps.go documents (Audit,
// Authenticate, Authorize, ValidateArguments). A call whose arguments fail
// the tool's schema (a string where the schema says number, or a name
// twice in two cases) and that an argument limit applies to is refused by
// both; the Guard validates first (INVALID_ARGUMENTS), the chain's
// Authorize checks the limit on the raw arguments first (FORBIDDEN). The
// difference was undocumented (Audit's doc said its records "are the
// Guard's"); Authorize's and Audit's docs name it now, and this pins what
// they say: each side records what it answered, and on arguments that pass
// validation the two agree.
func TestReview64bChainOrderDocumented(t *testing.T) {
	zero := 0.0
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read,
			ArgLimits: []policy.ArgLimit{{Field: "amount", Min: &zero, Max: 100}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice", Roles: []string{"support"}}}, nil
	})
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`)
	tool := func() *mcp.Tool { return &mcp.Tool{Name: "trigger_refund", InputSchema: schema} }
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}

	// The Guard.
	guardSink := &review64bSink{}
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: guardSink})
	if err != nil {
		t.Fatal(err)
	}
	gs := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1"}, nil)
	gs.AddTool(tool(), ok)
	if err := g.Install(gs); err != nil {
		t.Fatal(err)
	}

	// The chain.
	chainSink := &review64bSink{}
	auditStep, err := mcpguard.Audit(chainSink, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := mcpguard.NewValidator(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := mcp.NewServer(&mcp.Implementation{Name: "chained", Version: "1"}, nil)
	cs.AddTool(tool(), mcpguard.Chain(auditStep, mcpguard.Authenticate(authn), mcpguard.Authorize(pol),
		mcpguard.ValidateArguments(v))(ok))

	call := func(s *mcp.Server, args string) string {
		t.Helper()
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		c, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "trigger_refund", Arguments: json.RawMessage(args)})
		if err == nil && res != nil && !res.IsError {
			return "allowed"
		}
		d, ok := mcpguard.DenialOf(res, err)
		if !ok {
			t.Fatalf("no denial: %v %v", res, err)
		}
		return string(d.Code)
	}

	for _, tc := range []struct{ args, guard, chain string }{
		{`{"amount":"50"}`, "INVALID_ARGUMENTS", "FORBIDDEN"},
		{`{"amount":50,"AMOUNT":500}`, "INVALID_ARGUMENTS", "FORBIDDEN"},
		{`{"amount":500}`, "FORBIDDEN", "FORBIDDEN"},
		{`{"amount":50}`, "allowed", "allowed"},
	} {
		if gc, cc := call(gs, tc.args), call(cs, tc.args); gc != tc.guard || cc != tc.chain {
			t.Errorf("arguments %s: the Guard answers %s, the chain %s; want %s and %s", tc.args, gc, cc, tc.guard, tc.chain)
		}
	}
	want := func(sink *review64bSink, codes ...string) {
		t.Helper()
		var got []string
		for _, e := range sink.events {
			got = append(got, e.Code)
		}
		if len(got) != len(codes) {
			t.Fatalf("records %q, want %q", got, codes)
		}
		for i := range codes {
			if got[i] != codes[i] {
				t.Errorf("records %q, want %q", got, codes)
				return
			}
		}
	}
	want(guardSink, "INVALID_ARGUMENTS", "INVALID_ARGUMENTS", "FORBIDDEN", "")
	want(chainSink, "FORBIDDEN", "FORBIDDEN", "FORBIDDEN", "")
}

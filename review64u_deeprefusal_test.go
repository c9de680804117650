package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rv64uDeep returns a handler's refusal whose Details nest n levels deep.
func rv64uDeep(n int) *mcpguard.DenialError {
	var v any = 1
	for range n {
		v = map[string]any{"a": v}
	}
	d := mcpguard.Deny(mcpguard.CodeForbidden, "no")
	d.Details = map[string]any{"x": v}
	return d
}

// rv64uConnect connects a client to srv over in-memory transports.
func rv64uConnect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

var rv64uOutSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)

// TestReview64uChainDeepHandlerRefusal: the docs' stand-alone chain, whose
// "records and refusals are the Guard's" (execute.go), with ValidateOutput
// innermost, which refuses a result "nested more than 512 levels deep (the
// go-sdk's client would close its session on it)". A handler's own refusal
// (a returned *DenialError, or its Result) whose Details nest 1,200 levels
// deep is bounded by a Guard (settle: INVALID_RESPONSE, the session kept);
// the chain renders it as it is (Recover, or a write step's startedWrite),
// and the go-sdk client closes its session: its next request fails.
func TestReview64uChainDeepHandlerRefusal(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "look", Class: policy.Read}, {Name: "put", Class: policy.Write}},
		WriteAllowlist: []string{"put"},
	})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	id := &mcpguard.Identity{Principal: &policy.Principal{Subject: "bob", Roles: []string{"admin"}}}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return id, nil })
	for _, tc := range []struct {
		name   string
		tool   string
		result bool // the handler returns the refusal's Result
	}{
		{"read/error", "look", false},
		{"read/result", "look", true},
		{"write/error", "put", false},
		{"write/result", "put", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				d := rv64uDeep(1200)
				if tc.result {
					return d.Result(), nil
				}
				return nil, d
			}
			tool := &mcp.Tool{Name: tc.tool, InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: rv64uOutSchema}

			// The Guard, on a server of its own.
			gsrv := mcp.NewServer(&mcp.Implementation{Name: "g", Version: "1"}, nil)
			gsrv.AddTool(tool, handler)
			g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: &memSink{}, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(gsrv); err != nil {
				t.Fatal(err)
			}
			gcs := rv64uConnect(t, gsrv)
			gres, gerr := gcs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if _, lerr := gcs.ListTools(context.Background(), nil); lerr != nil {
				t.Fatalf("Guard: session closed (res %v, err %v): %v", gres != nil, gerr, lerr)
			}

			// The stand-alone chain of the docs, on another.
			sink := &memSink{}
			opts := &mcpguard.Options{Logger: log}
			auditStep, err := mcpguard.Audit(sink, opts)
			if err != nil {
				t.Fatal(err)
			}
			in, err := mcpguard.NewValidator(map[string]any{"type": "object"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			out, err := mcpguard.NewOutputValidator(rv64uOutSchema)
			if err != nil {
				t.Fatal(err)
			}
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			limitStep, err := mcpguard.Limit(lim, pol, opts)
			if err != nil {
				t.Fatal(err)
			}
			dryStep, err := mcpguard.DryRun(pol, opts)
			if err != nil {
				t.Fatal(err)
			}
			waStep, err := mcpguard.WriteAhead(sink, pol, opts)
			if err != nil {
				t.Fatal(err)
			}
			chain := mcpguard.Chain(mcpguard.Recover(log), auditStep, mcpguard.Authenticate(authn),
				mcpguard.Authorize(pol), mcpguard.ValidateArguments(in), limitStep, dryStep, waStep,
				mcpguard.ValidateOutput(out))
			csrv := mcp.NewServer(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			csrv.AddTool(tool, chain(handler))
			ccs := rv64uConnect(t, csrv)
			cres, cerr := ccs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if _, lerr := ccs.ListTools(context.Background(), nil); lerr != nil {
				gd, _ := mcpguard.DenialOf(gres, gerr)
				t.Errorf("chain: the tool's refusal nested 1,200 deep closed the client's session "+
					"(call: res %v, err %v; next request: %v); the Guard answers %v", cres != nil, cerr, lerr, gd)
			}
		})
	}
}

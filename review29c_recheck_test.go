package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r29cConnect connects an older client (protocol v) to h's server whose
// elicitation handler calls ask, then accepts.
func r29cConnect(t *testing.T, srv *mcp.Server, v string, ask func()) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, srv, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			ask()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}, v)
}

// TestReview29cRecheckHiddenLooksUnknown: a write an older client is asked
// to confirm within the call, hidden by SetPolicy while the human looks at
// the question, is refused with exactly the JSON-RPC error of a name that
// never existed (code, message, data), on 2025-11-25 and 2025-06-18, in
// both reporting modes; one outcome record, no intent; Wait returns.
func TestReview29cRecheckHiddenLooksUnknown(t *testing.T) {
	confirmPut := policy.ToolRule{Name: "put", Class: policy.Write, Confirm: true}
	for _, v := range []string{"2025-11-25", "2025-06-18"} {
		for _, protoErrs := range []bool{false, true} {
			name := v
			if protoErrs {
				name += "_protocol_errors"
			}
			t.Run(name, func(t *testing.T) {
				old := r29pPolicy(t, policy.Config{Tools: r29pRules(confirmPut), WriteAllowlist: []string{"put"}})
				next := r29pPolicy(t, policy.Config{Tools: r29pRules(confirmPut), WriteAllowlist: []string{"put"},
					RoleRules: []policy.RoleRule{{Pattern: "put", Roles: []string{"nobody"}}}})
				h := newR29p(t, old, &mcpguard.Options{Confirmer: testSigner(t, nil), ProtocolErrors: protoErrs})
				cs := r29cConnect(t, h.srv, v, func() {
					if err := h.g.SetPolicy(next); err != nil {
						t.Error(err)
					}
				})
				_, err := call(t, cs, "put", map[string]any{})
				_, unknown := call(t, cs, "nope", map[string]any{})
				var got, want *jsonrpc.Error
				if !errors.As(err, &got) || !errors.As(unknown, &want) {
					t.Fatalf("hidden: %v; unknown: %v; want JSON-RPC errors both", err, unknown)
				}
				want.Message = strings.ReplaceAll(want.Message, "nope", "put")
				if got.Code != want.Code || got.Message != want.Message || string(got.Data) != string(want.Data) {
					t.Errorf("hidden after the question: %+v, want %+v", got, want)
				}
				if n := h.ran.Load(); n != 0 {
					t.Errorf("the write ran %d times", n)
				}
				if err := h.g.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
				var puts []string
				for _, e := range h.sink.all() {
					if e.Tool == "put" {
						puts = append(puts, string(e.Phase)+"/"+e.Code+"/"+e.Detail)
						if e.Allowed {
							t.Errorf("record allowed: %+v", e)
						}
					}
				}
				if len(puts) != 1 || !strings.HasPrefix(puts[0], "outcome/TOOL_NOT_FOUND/the policy changed while the user was asked") {
					t.Errorf("records of put: %q, want one outcome TOOL_NOT_FOUND saying the policy changed", puts)
				}
			})
		}
	}
}

// TestReview29cRecheckArgLimit: the new rule's argument limits refuse the
// answered call FORBIDDEN.
func TestReview29cRecheckArgLimit(t *testing.T) {
	old := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "put", Class: policy.Write, Confirm: true}),
		WriteAllowlist: []string{"put"}})
	next := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "put", Class: policy.Write, Confirm: true,
		ArgLimits: []policy.ArgLimit{{Field: "n", Max: 10}}}), WriteAllowlist: []string{"put"}})
	h := newR29p(t, old, &mcpguard.Options{Confirmer: testSigner(t, nil), NoWriteAhead: true})
	cs := r29cConnect(t, h.srv, "2025-11-25", func() {
		if err := h.g.SetPolicy(next); err != nil {
			t.Error(err)
		}
	})
	res, err := call(t, cs, "put", map[string]any{"n": 11})
	if got := codeOf(t, res, err); got != "FORBIDDEN" {
		t.Errorf("over the new rule's limit: %s, want FORBIDDEN", got)
	}
	if n := h.ran.Load(); n != 0 {
		t.Errorf("the write ran %d times", n)
	}
}

// TestReview29cHandlerRounds: a write whose handler asks the user itself
// (multi round-trip: input requests, then a second round that writes) is
// taken off the allowlist while the human looks at the question. The second
// round is a call of its own through the guard, decided by the new policy:
// WRITE_NOT_ALLOWED, nothing written. Not so for a guard installed on the
// server (Install) with a client before 2026-07-28: the go-sdk's middleware
// that asks such a client within the call sits below the guard's, so both
// rounds run within the one call the guard admitted.
func TestReview29cHandlerRounds(t *testing.T) {
	for _, tt := range []struct {
		name    string
		wrap    bool
		version string
	}{
		{"install_default", false, ""},
		{"wrap_default", true, ""},
		{"wrap_2025_11_25", true, "2025-11-25"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rules := r29pRules(policy.ToolRule{Name: "ask", Class: policy.Write})
			old := r29pPolicy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"ask"}})
			next := r29pPolicy(t, policy.Config{Tools: rules})
			g, err := mcpguard.New(old, fixed(bob), &mcpguard.Options{NoWriteAhead: true, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			var wrote atomic.Int64
			tool := &mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}
			var h mcp.ToolHandler = func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if req.Params.RequestState == "" {
					return &mcp.CallToolResult{
						InputRequests: mcp.InputRequestMap{"ok": &mcp.ElicitParams{Mode: "form", Message: "sure?",
							RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}},
						RequestState: "round2",
					}, nil
				}
				wrote.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "r29c", Version: "1"}, nil)
			if tt.wrap {
				if h, err = g.Wrap(tool, h); err != nil {
					t.Fatal(err)
				}
			}
			srv.AddTool(tool, h)
			if !tt.wrap {
				if err := g.Install(srv); err != nil {
					t.Fatal(err)
				}
			}
			cs := r29cConnect(t, srv, tt.version, func() {
				if err := g.SetPolicy(next); err != nil {
					t.Error(err)
				}
			})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: json.RawMessage(`{}`)})
			got := codeOf(t, res, err)
			if n := wrote.Load(); n != 0 || got != "WRITE_NOT_ALLOWED" {
				t.Errorf("revoked while the user was asked: %s, wrote %d, want WRITE_NOT_ALLOWED and no write", got, n)
			}
		})
	}
}

// TestReview29cRecheckConfirmedRead: a read whose rule asks for a
// confirmation is decided once more too when an older client answers
// within the call (SetPolicy's doc says so of any call, not of writes
// only): hidden meanwhile, it is refused as an unknown tool, unread.
func TestReview29cRecheckConfirmedRead(t *testing.T) {
	look := policy.ToolRule{Name: "look", Class: policy.Read, Confirm: true}
	old := r29pPolicy(t, policy.Config{Tools: r29pRules(look)})
	next := r29pPolicy(t, policy.Config{Tools: r29pRules(look), RoleRules: []policy.RoleRule{{Pattern: "look", Roles: []string{"nobody"}}}})
	h := newR29p(t, old, &mcpguard.Options{Confirmer: testSigner(t, nil)})
	cs := r29cConnect(t, h.srv, "2025-11-25", func() {
		if err := h.g.SetPolicy(next); err != nil {
			t.Error(err)
		}
	})
	res, err := call(t, cs, "look", map[string]any{})
	if got := codeOf(t, res, err); got != `jsonrpc:unknown tool "look"` {
		t.Errorf("hidden while the user was asked: %s, want the unknown tool's error", got)
	}
	if n := h.ran.Load(); n != 0 {
		t.Errorf("the read ran %d times", n)
	}
}

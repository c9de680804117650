package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63cHiddenProbe: a wrongly-roled caller probes admin tools of
// every kind (a read, a write off the allowlist, an allowlisted write that
// needs a confirmation, one with an argument limit, a typed one) with odd
// arguments and _meta; each answer must be the unknown tool's, byte for
// byte but for the name.
func TestReview63cHiddenProbe(t *testing.T) {
	ctx := context.Background()
	min0 := 0.0
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_a", Class: policy.Read},
			{Name: "admin_read", Class: policy.Read},
			{Name: "admin_write", Class: policy.Write},
			{Name: "admin_confirm", Class: policy.Write, Confirm: true, Cost: 5},
			{Name: "admin_limited", Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "n", Max: 1, Min: &min0}}},
			{Name: "admin_typed", Class: policy.Read},
			{Name: "roled_tool", Class: policy.Read, Roles: []string{"admin"}},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"admin_confirm"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 1000, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "admin_confirm", Max: 5, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rv63cRan{}
	s := mcp.NewServer(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	rv63cAddRaw(s, r, "get_a")
	rv63cAddRaw(s, r, "admin_read")
	rv63cAddRaw(s, r, "admin_write")
	rv63cAddRaw(s, r, "admin_confirm")
	s.AddTool(&mcp.Tool{Name: "admin_limited", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}}}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.add(ctx, "admin_limited")
			return &mcp.CallToolResult{}, nil
		})
	rv63cAddTyped(s, r, "admin_typed")
	rv63cAddRaw(s, r, "roled_tool")
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Audit: &memSink{}, Limiter: lim, Confirmer: testSigner(t, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	args := []any{
		map[string]any{},
		map[string]any{"n": 5},
		map[string]any{"n": "x", "y": 1},
		[]any{1, 2},
		"str",
		nil,
		json.RawMessage(`{"a":1,"a":2}`),
		json.RawMessage(`{"A":1,"a":2}`),
	}
	metas := []mcp.Meta{nil, {dryrun.MetaKey: true}, {"progressToken": "p1"}}
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			vic := &mcpguard.Identity{Principal: &policy.Principal{Subject: "vic", Roles: []string{"viewer"}}}
			cs := rv63cConnectAs(t, s, auth, vic, v, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					t.Error("the caller was asked to confirm a hidden tool")
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			})
			answer := func(name string, a any, m mcp.Meta) string {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: m, Name: name, Arguments: a})
				b, _ := json.Marshal(res)
				out := fmt.Sprintf("res=%s err=%v", b, err)
				if w := wireError(err); w != nil {
					out += fmt.Sprintf(" wire=%d %q %s", w.Code, w.Message, w.Data)
				}
				return strings.ReplaceAll(out, name, "NAME")
			}
			for _, a := range args {
				for _, m := range metas {
					want := answer("no_such_tool", a, m)
					for _, name := range []string{"admin_read", "admin_write", "admin_confirm", "admin_limited", "admin_typed", "roled_tool"} {
						if got := answer(name, a, m); got != want {
							ab, _ := json.Marshal(a)
							t.Errorf("%s args %s meta %v:\n hidden  %s\n unknown %s", name, ab, m, got, want)
						}
					}
				}
			}
		})
	}
	if got := r.all(); len(got) != 0 {
		t.Errorf("ran %v", got)
	}
}

// TestReview63cNotFoundCode: with Options.NotFoundCode set, a hidden tool and
// an unknown one still get the same answer, and over the wire too.
func TestReview63cNotFoundCode(t *testing.T) {
	ctx := context.Background()
	for _, code := range []int64{-32601, -32004, -32602} {
		for _, pe := range []bool{false, true} {
			pol, err := policy.New(policy.Config{
				Tools:     []policy.ToolRule{{Name: "get_a", Class: policy.Read}, {Name: "admin_a", Class: policy.Read}},
				RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			r := &rv63cRan{}
			s := mcp.NewServer(&mcp.Implementation{Name: "nf", Version: "1"}, nil)
			rv63cAddRaw(s, r, "get_a")
			rv63cAddTyped(s, r, "admin_a")
			auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
			g, err := mcpguard.New(pol, auth, &mcpguard.Options{NotFoundCode: code, ProtocolErrors: pe, Audit: &memSink{},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(s); err != nil {
				t.Fatal(err)
			}
			for _, v := range protocolVersions {
				cs := rv63cConnectAs(t, s, auth, &mcpguard.Identity{Principal: &policy.Principal{Subject: "vic"}}, v, nil)
				ans := func(name string, a any) string {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: a})
					out := fmt.Sprint(err)
					if w := wireError(err); w != nil {
						out += fmt.Sprintf(" wire=%d %q %s", w.Code, w.Message, w.Data)
					}
					return strings.ReplaceAll(out, name, "NAME")
				}
				for _, a := range []any{map[string]any{}, []any{1}, "x"} {
					if h, u := ans("admin_a", a), ans("nope", a); h != u {
						t.Errorf("code %d pe %v %s: hidden %s, unknown %s", code, pe, versionName(v), h, u)
					}
				}
				cs.Close()
			}
		}
	}
}

// TestReview63cHiddenRateOracle: calls of a hidden tool and of an unknown
// one weigh the same against the caller's rate limit, so the limit cannot
// tell them apart.
func TestReview63cHiddenRateOracle(t *testing.T) {
	ctx := context.Background()
	left := func(probe string) int {
		pol, err := policy.New(policy.Config{
			Tools:     []policy.ToolRule{{Name: "get_a", Class: policy.Read}, {Name: "admin_a", Class: policy.Read}},
			RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		lim, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Hour},
			{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Hour},
			{Kind: limiter.Rate, Scope: limiter.Global, Max: 5, Window: time.Hour},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := &rv63cRan{}
		s := mcp.NewServer(&mcp.Implementation{Name: "o", Version: "1"}, nil)
		rv63cAddRaw(s, r, "get_a")
		rv63cAddRaw(s, r, "admin_a")
		authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
			return &mcpguard.Identity{Principal: &policy.Principal{Subject: "vic"}}, nil
		})
		g, err := mcpguard.New(pol, authn, &mcpguard.Options{Limiter: lim, Audit: &memSink{}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Install(s); err != nil {
			t.Fatal(err)
		}
		cs := connectVersion(t, s, nil, "")
		for range 3 {
			cs.CallTool(ctx, &mcp.CallToolParams{Name: probe, Arguments: map[string]any{}})
		}
		n := 0
		for range 10 {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_a", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				break
			}
			n++
		}
		return n
	}
	if h, u := left("admin_a"), left("nope"); h != u {
		t.Errorf("after three probes, %d calls left after the hidden tool's, %d after the unknown's", h, u)
	}
}

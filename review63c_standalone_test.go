package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63cStandaloneChain: the stand-alone chain of the docs (Recover,
// Audit, Authenticate, Authorize) on single raw handlers of a real server.
// A stranger runs nothing, a viewer's call of an admin tool is answered as an
// unknown tool's, a write off the allowlist does not run, and each call has
// an outcome record.
func TestReview63cStandaloneChain(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_x", Class: policy.Read},
			{Name: "set_x", Class: policy.Write},
			{Name: "admin_x", Class: policy.Read},
		},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	opts := &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	auditStep, err := mcpguard.Audit(sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	chain := mcpguard.Chain(mcpguard.Recover(opts.Logger), auditStep, mcpguard.Authenticate(auth), mcpguard.Authorize(pol))
	r := &rv63cRan{}
	s := mcp.NewServer(&mcp.Implementation{Name: "alone", Version: "1"}, nil)
	for _, name := range []string{"get_x", "set_x", "admin_x"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			chain(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				r.add(ctx, name)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			}))
	}
	for _, v := range protocolVersions {
		connect := func(id *mcpguard.Identity) *mcp.ClientSession {
			return rv63cConnectAs(t, s, auth, id, v, nil)
		}
		viewer := connect(&mcpguard.Identity{Principal: &policy.Principal{Subject: "vic", Roles: []string{"viewer"}}})
		stranger := connect(nil)
		_, unknownErr := viewer.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
		_, hiddenErr := viewer.CallTool(ctx, &mcp.CallToolParams{Name: "admin_x", Arguments: map[string]any{}})
		if unknownErr == nil || hiddenErr == nil ||
			strings.ReplaceAll(unknownErr.Error(), "no_such_tool", "admin_x") != hiddenErr.Error() {
			t.Errorf("%s: hidden %v, unknown %v", versionName(v), hiddenErr, unknownErr)
		}
		if w := wireError(hiddenErr); w != nil {
			if u := wireError(unknownErr); u == nil || u.Code != w.Code || string(u.Data) != string(w.Data) {
				t.Errorf("%s: hidden %+v, unknown %+v", versionName(v), w, u)
			}
		}
		res, err := viewer.CallTool(ctx, &mcp.CallToolParams{Name: "set_x", Arguments: map[string]any{}})
		if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeWriteNotAllowed {
			t.Errorf("%s: set_x: %v %v", versionName(v), d, err)
		}
		for _, name := range []string{"get_x", "set_x", "admin_x"} {
			res, err := stranger.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeUnauthenticated {
				t.Errorf("%s: stranger %s: %v %v", versionName(v), name, d, err)
			}
		}
		res, err = viewer.CallTool(ctx, &mcp.CallToolParams{Name: "get_x", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Errorf("%s: get_x: %v %v", versionName(v), res, err)
		}
	}
	if got := strings.Join(r.all(), ","); got != "get_x:vic,get_x:vic" {
		t.Errorf("ran %s", got)
	}
	var n int
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome {
			n++
		}
	}
	// Per version: admin_x (the unknown tool never reaches a handler),
	// set_x, three strangers, get_x.
	if n != 2*6 {
		t.Errorf("%d outcome records, want %d", n, 12)
	}
}

// TestReview63cSloppyAuthenticator: an authenticator written by hand that
// forgets to return an error for an unknown caller (a nil identity, an
// identity without a principal, a principal without a subject) must not let
// the call through, under Install and in the stand-alone Authenticate, for
// tools, listings, resources and prompts.
func TestReview63cSloppyAuthenticator(t *testing.T) {
	ctx := context.Background()
	cases := map[string]*mcpguard.Identity{
		"nil identity":  nil,
		"nil principal": {},
		"no subject":    {Principal: &policy.Principal{Roles: []string{"admin"}}},
	}
	for name, id := range cases {
		t.Run(name, func(t *testing.T) {
			authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return id, nil })
			r := &rv63cRan{}
			s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			rv63cAddTyped(s, r, "get_a")
			rv63cAddRaw(s, r, "admin_a")
			s.AddResource(&mcp.Resource{URI: "file:///n", Name: "n"},
				func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					r.add(ctx, "resource")
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
				})
			s.AddPrompt(&mcp.Prompt{Name: "p"}, func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				r.add(ctx, "prompt")
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
			})
			pol, err := policy.New(policy.Config{
				Tools:     []policy.ToolRule{{Name: "get_a", Class: policy.Read}, {Name: "admin_a", Class: policy.Read}},
				RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: sink, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(s); err != nil {
				t.Fatal(err)
			}
			cs := connectVersion(t, s, nil, "")
			if lt, err := cs.ListTools(ctx, nil); err == nil {
				t.Errorf("tools/list answered: %v", rv63cNames(lt.Tools))
			}
			for _, tool := range []string{"get_a", "admin_a"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeUnauthenticated {
					t.Errorf("%s: %v %v, want UNAUTHENTICATED", tool, d, err)
				}
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///n"}); err == nil {
				t.Error("resource read")
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p"}); err == nil {
				t.Error("prompt got")
			}
			// The stand-alone step too.
			h := mcpguard.Authenticate(authn)(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				r.add(ctx, "standalone")
				return &mcp.CallToolResult{}, nil
			})
			res, err := h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get_a", Arguments: json.RawMessage(`{}`)}})
			if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeUnauthenticated {
				t.Errorf("stand-alone: %v %v", d, err)
			}
			if got := r.all(); len(got) != 0 {
				t.Errorf("ran %v", got)
			}
			if n := len(sink.all()); n != 2 {
				t.Errorf("%d records, want 2", n)
			}
		})
	}
}

// TestReview63cLoneStepsApplyPolicy: "Each step also applies the policy
// again ... so a step used alone never acts on a call the policy forbids."
// A chain of Authenticate and one write-path step (no Authorize) on a real
// server: a hidden tool is unknown, a write off the allowlist and an argument
// over its limit are refused, and the handler never runs.
func TestReview63cLoneStepsApplyPolicy(t *testing.T) {
	ctx := context.Background()
	max := 10.0
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "admin_write", Class: policy.Write},
			{Name: "set_x", Class: policy.Write},
			{Name: "pay", Class: policy.Write, Cost: 1, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: max}}},
			{Name: "confirm_pay", Class: policy.Write, Confirm: true, Cost: 1, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: max}}},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"admin_write", "pay", "confirm_pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	lim := mustLimiter63c(t)
	limit, err := mcpguard.Limit(lim, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := mcpguard.DryRun(pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	wa, err := mcpguard.WriteAhead(&memSink{}, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := mcpguard.Confirm(testSigner(t, nil), pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]mcpguard.Middleware{"Limit": limit, "DryRun": dry, "WriteAhead": wa, "Confirm": conf}
	viewer := &mcpguard.Identity{Principal: &policy.Principal{Subject: "vic", Roles: []string{"viewer"}}}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return viewer, nil })
	for stepName, step := range steps {
		t.Run(stepName, func(t *testing.T) {
			r := &rv63cRan{}
			s := mcp.NewServer(&mcp.Implementation{Name: "lone", Version: "1"}, nil)
			for _, name := range []string{"admin_write", "set_x", "pay", "confirm_pay"} {
				s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
					mcpguard.Chain(mcpguard.Authenticate(authn), step)(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						r.add(ctx, name)
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
					}))
			}
			cs := connectVersion(t, s, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			}, "2025-11-25")
			for _, m := range []mcp.Meta{nil, {dryrun.MetaKey: true}} {
				_, unknownErr := cs.CallTool(ctx, &mcp.CallToolParams{Meta: m, Name: "nope", Arguments: map[string]any{}})
				_, hiddenErr := cs.CallTool(ctx, &mcp.CallToolParams{Meta: m, Name: "admin_write", Arguments: map[string]any{}})
				if hiddenErr == nil || unknownErr == nil || strings.ReplaceAll(unknownErr.Error(), "nope", "admin_write") != hiddenErr.Error() {
					t.Errorf("meta %v: hidden %v, unknown %v", m, hiddenErr, unknownErr)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: m, Name: "set_x", Arguments: map[string]any{}})
				if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeWriteNotAllowed {
					t.Errorf("meta %v: set_x: %v %v", m, d, err)
				}
				for _, name := range []string{"pay", "confirm_pay"} {
					res, err = cs.CallTool(ctx, &mcp.CallToolParams{Meta: m, Name: name, Arguments: map[string]any{"amount": 1000}})
					if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeForbidden {
						t.Errorf("meta %v: %s 1000: %v %v", m, name, d, err)
					}
				}
			}
			if got := r.all(); len(got) != 0 {
				t.Errorf("ran %v", got)
			}
		})
	}
}

func mustLimiter63c(t *testing.T) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1000, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestReview63cDocChain: the full chain the docs give (steps.go, execute.go)
// on one raw write handler needing a confirmation, on both protocol
// generations: a declined call and a dry run do not run, an accepted one runs
// once as its caller, and the trail has an intent before the write and an
// outcome for every round.
func TestReview63cDocChain(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write, Confirm: true, Cost: 10}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`)
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			sink := &memSink{}
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			signer := testSigner(t, nil)
			opts := &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Limiter: lim, Confirmer: signer}
			auditStep, err := mcpguard.Audit(sink, opts)
			if err != nil {
				t.Fatal(err)
			}
			in, err := mcpguard.NewValidator(schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			out, err := mcpguard.NewOutputValidator(json.RawMessage(`{"type":"object"}`))
			if err != nil {
				t.Fatal(err)
			}
			confirmStep, err := mcpguard.Confirm(signer, pol, opts)
			if err != nil {
				t.Fatal(err)
			}
			limitStep, err := mcpguard.Limit(lim, pol, opts)
			if err != nil {
				t.Fatal(err)
			}
			dryRunStep, err := mcpguard.DryRun(pol, opts)
			if err != nil {
				t.Fatal(err)
			}
			writeAheadStep, err := mcpguard.WriteAhead(sink, pol, opts)
			if err != nil {
				t.Fatal(err)
			}
			ann := &mcpguard.Identity{Principal: &policy.Principal{Subject: "ann"}}
			a := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return ann, nil })
			chain := mcpguard.Chain(mcpguard.Recover(opts.Logger), auditStep, mcpguard.Authenticate(a), mcpguard.Authorize(pol),
				mcpguard.ValidateArguments(in), confirmStep, limitStep, dryRunStep,
				writeAheadStep, mcpguard.ValidateOutput(out))
			r := &rv63cRan{}
			s := mcp.NewServer(&mcp.Implementation{Name: "chain", Version: "1"}, nil)
			s.AddTool(&mcp.Tool{Name: "refund", InputSchema: schema}, chain(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				r.add(ctx, "refund")
				return &mcp.CallToolResult{StructuredContent: map[string]any{"ok": true}, Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
			}))
			answer := "decline"
			cs := connectVersion(t, s, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: answer}, nil
				},
			}, v)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{"amount": 5}})
			if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeConfirmationRequired {
				t.Errorf("declined: %v %v", d, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{dryrun.MetaKey: true}, Name: "refund", Arguments: map[string]any{"amount": 5}})
			if err != nil || res.IsError {
				t.Errorf("dry run: %v %v", res, err)
			}
			answer = "accept"
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{"amount": 5}})
			if err != nil || res.IsError {
				d, _ := mcpguard.DenialOf(res, err)
				t.Errorf("accepted: %v %v", d, err)
			}
			if got := strings.Join(r.all(), ","); got != "refund:ann" {
				t.Errorf("ran %q", got)
			}
			var intents, outcomes int
			var costs float64
			for _, e := range sink.all() {
				t.Logf("%s %s allowed=%v code=%s dry=%v cost=%v detail=%s", e.Phase, e.Subject, e.Allowed, e.Code, e.DryRun, e.Cost, e.Detail)
				if e.Phase == audit.PhaseIntent {
					intents++
				} else {
					outcomes++
					costs += e.Cost
				}
			}
			if intents != 1 || costs != 10 {
				t.Errorf("%d intents, costs %v", intents, costs)
			}
		})
	}
}

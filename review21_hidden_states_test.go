package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review21Server is a server whose hidden tools would each refuse the
// probes below at a later step than TOOL_NOT_FOUND if they were reached:
// a strict schema, a typed tool, a cost function that fails, an argument
// limit, a confirmation, a dry run.
func review21Server(t *testing.T, opts mcpguard.Options) (*mcp.Server, *sessionAuth, *memSink) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Text: in.Text}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "admin_strict", Annotations: ro, InputSchema: json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"],"additionalProperties":false}`)}, ok)
	// Outside the fast schema subset: the reference validator.
	srv.AddTool(&mcp.Tool{Name: "admin_ref", Annotations: ro, InputSchema: json.RawMessage(
		`{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"required":["n"],"$defs":{"n":{"type":"integer","not":{"const":3}}}}`)}, ok)
	type typedIn struct {
		N int `json:"n"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "admin_typed", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in typedIn) (*mcp.CallToolResult, any, error) {
			return textResult("ok"), nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "admin_pay", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`)}, ok)
	srv.AddTool(&mcp.Tool{Name: "admin_wipe", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)}, ok)
	srv.AddTool(&mcp.Tool{Name: "admin_dry", InputSchema: json.RawMessage(`{"type":"object"}`)}, ok)
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "echo", Class: policy.Read},
			{Name: "admin_strict", Class: policy.Read},
			{Name: "admin_ref", Class: policy.Read},
			{Name: "admin_typed", Class: policy.Read},
			{Name: "admin_pay", Class: policy.Write, Cost: 5, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 10}}},
			{Name: "admin_wipe", Class: policy.Write, Confirm: true},
			{Name: "admin_dry", Class: policy.Write},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"admin_pay", "admin_wipe"}, // admin_dry is not on it
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	sink := &memSink{}
	opts.Audit = sink
	opts.Confirmer = testSigner(t, nil)
	opts.Logger = quiet
	opts.Tools = map[string]mcpguard.ToolOptions{
		"admin_pay": {Cost: func(map[string]any) (float64, error) { return 0, errors.New("always fails") }},
		"admin_dry": {DryRun: true},
	}
	g, err := mcpguard.New(pol, auth, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return srv, auth, sink
}

// review21Probes are the arguments of the probes: each would be refused by
// one hidden tool or another at a step after resolution, or reach it.
var review21Probes = []string{
	`{"name":%s}`,
	`{"name":%s,"arguments":{}}`,
	`{"name":%s,"arguments":{"n":1}}`,
	`{"name":%s,"arguments":{"n":99}}`,
	`{"name":%s,"arguments":{"n":3}}`,
	`{"name":%s,"arguments":{"n":"1"}}`,
	`{"name":%s,"arguments":{"N":1}}`,
	`{"name":%s,"arguments":{"n":1,"n":2}}`,
	`{"name":%s,"arguments":{"n":1,"x":1}}`,
	`{"name":%s,"arguments":{"amount":1e9}}`,
	`{"name":%s,"arguments":{"amount":1}}`,
	`{"name":%s,"arguments":{"target":"all"}}`,
	`{"name":%s,"arguments":{"n":"\u0000\u202e"}}`,
	`{"name":%s,"arguments":[1,2]}`,
	`{"name":%s,"arguments":null}`,
	`{"name":%s,"arguments":{"deep":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}}`,
	`{"name":%s,"arguments":{"big":"` + strings.Repeat("x", 200<<10) + `"}}`,
	`{"name":%s,"arguments":{"target":"all"},"_meta":{"io.mcpguard/dryRun":true,"progressToken":7}}`,
	`{"name":%s,"arguments":{"target":"all"},"requestState":"forged","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}}`,
}

// TestReview21HiddenLooksUnknownInEveryState: every hidden tool, whatever
// step would refuse the probe if the tool were the caller's (its schema,
// the go-sdk's typed wrapper, a failing cost function, an argument limit,
// the write allowlist, a confirmation, a forced dry run), and while the
// caller's rate and spend are used up, answers byte for byte as a name
// the server does not have, on both protocol generations, in each error
// mode; the records of the probes are alike but for the Detail of a hidden
// tool's, and none is charged.
func TestReview21HiddenLooksUnknownInEveryState(t *testing.T) {
	names := []string{"admin_strict", "admin_ref", "admin_typed", "admin_pay", "admin_wipe", "admin_dry",
		"admin_nope", "ADMIN_STRICT", "admin_ſtrict", "no_such"}
	for _, tc := range []struct {
		name string
		opts mcpguard.Options
	}{
		{"tool_errors", mcpguard.Options{}},
		{"protocol_errors", mcpguard.Options{ProtocolErrors: true}},
		{"not_found_code", mcpguard.Options{NotFoundCode: -32004}},
		{"dry_run_all", mcpguard.Options{DryRun: true}},
	} {
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(tc.name+"/"+version, func(t *testing.T) {
				lim, err := limiter.New([]limiter.Limit{
					{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour},
					{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour},
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				opts := tc.opts
				opts.Limiter = lim
				srv, auth, sink := review21Server(t, opts)
				bind := func(ss *mcp.ServerSession) {
					auth.mu.Lock()
					auth.ids[ss] = bob
					auth.mu.Unlock()
				}
				var guarded, bare *review21Raw
				if version == "2025-11-25" {
					guarded = &review21Raw{rawConnectTo(t, srv, bind), ""}
					bare = &review21Raw{rawConnectTo(t, mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil), nil), ""}
				} else {
					guarded = &review21Raw{rawConnectNew(t, srv, bind), version}
					bare = &review21Raw{rawConnectNew(t, mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil), nil), version}
				}
				// Bob uses up his one call an hour.
				if got := guarded.response("tools/call", `{"name":"echo","arguments":{"text":"hi"}}`); strings.Contains(got, `"isError":true`) || strings.Contains(got, `"error"`) {
					t.Fatalf("bob's first echo: %s", got)
				}
				if got := guarded.response("tools/call", `{"name":"echo","arguments":{"text":"hi"}}`); !strings.Contains(got, "RATE_LIMIT_EXCEEDED") {
					t.Fatalf("bob's second echo: %.300s, want RATE_LIMIT_EXCEEDED", got)
				}
				// The bare session's ids keep step.
				bare.response("tools/call", `{"name":"echo"}`)
				bare.response("tools/call", `{"name":"echo"}`)
				before := len(sink.all())
				for _, name := range names {
					q, _ := json.Marshal(name)
					for _, shape := range review21Probes {
						params := fmt.Sprintf(shape, q)
						got := guarded.response("tools/call", params)
						want := bare.response("tools/call", params)
						if tc.opts.NotFoundCode != 0 {
							want = strings.Replace(want, `"code":-32602`, fmt.Sprintf(`"code":%d`, tc.opts.NotFoundCode), 1)
						}
						if got != want {
							t.Errorf("tools/call %.200s:\n got %.400s\nwant %.400s", params, got, want)
						}
					}
				}
				if len(guarded.skipped) > 0 {
					t.Errorf("the probes were sent %v; an unknown tool sends nothing", guarded.skipped)
				}
				events := sink.all()[before:]
				if n := len(names) * len(review21Probes); len(events) != n {
					t.Fatalf("%d audit records, want %d", len(events), n)
				}
				// The records differ in their Detail only: a hidden tool's
				// says so (the trail is the operator's), a missing name's
				// is empty, as is that of a name only folding or a rule's
				// pattern relates to a tool ("ADMIN_STRICT", "admin_ſtrict",
				// "admin_nope": the server has no such tool).
				for _, e := range events {
					hidden := slices.Contains(names[:6], e.Tool)
					if want := map[bool]string{true: "hidden from the caller: it lacks a role the tool requires"}[hidden]; e.Detail != want {
						t.Errorf("the record of a call of %q: detail %q, want %q", e.Tool, e.Detail, want)
					}
				}
				norm := func(e audit.Event) audit.Event {
					e.Time, e.CorrelationID, e.LatencyMS, e.Tool, e.ArgsSHA256, e.Detail = time.Time{}, "", 0, "", "", ""
					return e
				}
				first := norm(events[0])
				for _, e := range events {
					if diff := cmp.Diff(first, norm(e)); diff != "" {
						t.Errorf("the record of a call of %q differs from that of %q (-first +this):\n%s", e.Tool, events[0].Tool, diff)
					}
				}
				if first.Cost != 0 || first.Code != string(mcpguard.CodeToolNotFound) || first.Class != "" || first.DryRun {
					t.Errorf("probe record %+v: want TOOL_NOT_FOUND, no class, no cost, no dry run", first)
				}
			})
		}
	}
}

// review21Raw is a raw session that marks each request with the
// 2026-07-28 protocol's _meta when version is set.
type review21Raw struct {
	*rawSession
	version string
}

func (r *review21Raw) response(method, params string) string {
	r.t.Helper()
	if r.version != "" {
		params = withNewMeta(r.t, params, r.version)
	}
	return r.rawSession.response(method, params)
}

// rawConnectNew connects a raw client to srv that sends no initialize: each
// request carries the 2026-07-28 protocol's _meta (withNewMeta).
func rawConnectNew(t *testing.T, srv *mcp.Server, bind func(*mcp.ServerSession)) *rawSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bind != nil {
		bind(ss)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); ss.Close() })
	return &rawSession{t: t, conn: conn}
}

// withNewMeta adds the 2026-07-28 protocol's _meta keys to params, keeping
// the rest of params' bytes (a duplicate key too) as they are.
func withNewMeta(t *testing.T, params, version string) string {
	t.Helper()
	keys := fmt.Sprintf(`%q:%q,%q:{},%q:{"name":"raw","version":"1"}`,
		mcp.MetaKeyProtocolVersion, version, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo)
	if i := strings.Index(params, `"_meta":{`); i >= 0 {
		i += len(`"_meta":{`)
		if strings.HasPrefix(strings.TrimSpace(params[i:]), "}") {
			return params[:i] + keys + params[i:] // an empty _meta
		}
		return params[:i] + keys + "," + params[i:]
	}
	if !strings.HasPrefix(params, "{") || !strings.HasSuffix(params, "}") {
		t.Fatalf("params %q are not an object", params)
	}
	if strings.TrimSpace(params[1:len(params)-1]) == "" {
		return `{"_meta":{` + keys + `}}`
	}
	return params[:len(params)-1] + `,"_meta":{` + keys + `}}`
}

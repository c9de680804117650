package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r30 is a server whose tools ask the client within the call, for the
// re-check of a call whose question is answered after SetPolicy replaced
// the policy: "rw" (write) and "rr" (read) ask in a multi round-trip
// (input requests, then a next round), "ow" (write) and "or" (read) ask
// themselves (ServerSession.Elicit); "or" ignores the error of its
// question and returns its data anyway. after counts the work done after
// an answer (a next round, or what follows the handler's own question).
type r30 struct {
	srv   *mcp.Server
	g     *mcpguard.Guard
	sink  *memSink
	after atomic.Int64
	asks  int // input requests of a first round (asked in parallel)
}

const r30Secret = "fetched after the answer"

var r30Rules = []policy.ToolRule{
	{Name: "rw", Class: policy.Write},
	{Name: "rr", Class: policy.Read},
	{Name: "ow", Class: policy.Write},
	{Name: "or", Class: policy.Read},
	{Name: "cw", Class: policy.Write, Confirm: true},
}

var r30Writes = []string{"rw", "ow", "cw"}

func r30Form(msg string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: msg,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}

// The ways r30's tools are guarded.
const (
	r30Install = iota
	r30Wrap    // each by Wrap, added with the server's AddTool
	r30AddTool // each by the guard's AddTool
)

// newR30 builds the server, its tools guarded as mode says.
func newR30(t *testing.T, p *policy.Policy, mode int, asks int) *r30 {
	t.Helper()
	h := &r30{sink: &memSink{}, asks: asks}
	g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Audit: h.sink, Logger: quiet, Confirmer: testSigner(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	h.g = g
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "r30", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	rounds := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState == "" {
			irs := mcp.InputRequestMap{}
			for i := range h.asks {
				irs[fmt.Sprint("q", i)] = r30Form("sure?")
			}
			return &mcp.CallToolResult{InputRequests: irs, RequestState: "round2"}, nil
		}
		h.after.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r30Secret}}}, nil
	}
	own := func(ignore bool) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := req.Session.Elicit(ctx, r30Form("which?")); err != nil && !ignore {
				return nil, err
			}
			h.after.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r30Secret}}}, nil
		}
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	tools := []struct {
		t *mcp.Tool
		h mcp.ToolHandler
	}{
		{&mcp.Tool{Name: "rw", InputSchema: obj}, rounds},
		{&mcp.Tool{Name: "rr", InputSchema: obj, Annotations: ro}, rounds},
		{&mcp.Tool{Name: "ow", InputSchema: obj}, own(false)},
		{&mcp.Tool{Name: "or", InputSchema: obj, Annotations: ro}, own(true)},
		{&mcp.Tool{Name: "cw", InputSchema: obj}, rounds},
	}
	for _, tl := range tools {
		hh := tl.h
		switch mode {
		case r30Wrap:
			if hh, err = g.Wrap(tl.t, hh); err != nil {
				t.Fatal(err)
			}
		case r30AddTool:
			if err := g.AddTool(h.srv, tl.t, hh); err != nil {
				t.Fatal(err)
			}
			continue
		}
		h.srv.AddTool(tl.t, hh)
	}
	if mode == r30Install {
		if err := g.Install(h.srv); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// r30Client connects an older client (2025-11-25) whose elicitation
// handler runs hook (with the question's message), then accepts.
func r30Client(t *testing.T, srv *mcp.Server, hook func(msg string)) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, srv, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			hook(req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}, "2025-11-25")
}

// records returns the audit records of tool.
func (h *r30) records(tool string) []audit.Event {
	var out []audit.Event
	for _, e := range h.sink.all() {
		if e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}

func r30Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// r30Revocations are the policies that revoke a tool of r30: hidden (it
// looks unknown), taken off the write allowlist, an argument limit the
// call's arguments exceed.
func r30Revocations(t *testing.T, tool string) map[string]struct {
	p    *policy.Policy
	want string
} {
	hidden := r30Policy(t, policy.Config{Tools: r30Rules, WriteAllowlist: r30Writes,
		RoleRules: []policy.RoleRule{{Pattern: tool, Roles: []string{"nobody"}}}})
	var rules []policy.ToolRule
	for _, r := range r30Rules {
		if r.Name == tool {
			r.ArgLimits = []policy.ArgLimit{{Field: "n", Max: 10}}
		}
		rules = append(rules, r)
	}
	out := map[string]struct {
		p    *policy.Policy
		want string
	}{
		"hidden":    {hidden, `jsonrpc:unknown tool "` + tool + `"`},
		"arg_limit": {r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: r30Writes}), "FORBIDDEN"},
	}
	if strings.HasSuffix(tool, "w") {
		out["off_allowlist"] = struct {
			p    *policy.Policy
			want string
		}{r30Policy(t, policy.Config{Tools: r30Rules}), "WRITE_NOT_ALLOWED"}
	}
	return out
}

func r30Policy(t *testing.T, cfg policy.Config) *policy.Policy {
	t.Helper()
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func r30Old(t *testing.T) *policy.Policy {
	return r30Policy(t, policy.Config{Tools: r30Rules, WriteAllowlist: r30Writes})
}

// TestReview30RevokedWhileAsked: under Install, an older client is asked
// within the call, by the go-sdk's multi round-trip below the guard (one
// question, or two asked in parallel) or by the handler itself; the tool
// is revoked (hidden, taken off the write allowlist, an argument limit)
// while the human looks at the question. The answer is not delivered: the
// next round does not run, nor the work that follows the handler's own
// question, and the caller gets the refusal a call made now gets (a hidden
// tool looks unknown), for a read as for a write, also when the handler
// ignores the error of its question and returns its data anyway. The
// call's one outcome record carries the refusal's code and says the policy
// changed; Wait returns.
func TestReview30RevokedWhileAsked(t *testing.T) {
	for _, mode := range []int{r30Install, r30AddTool} {
		for _, tool := range []string{"rw", "rr", "ow", "or"} {
			if mode == r30AddTool && tool[0] == 'r' {
				continue // the next round is a guarded call of its own (TestReview30WrapNextRound)
			}
			for name, rev := range r30Revocations(t, tool) {
				for _, asks := range []int{1, 2} {
					if asks == 2 && tool[0] != 'r' {
						continue
					}
					t.Run(fmt.Sprintf("%s_%s_%s_%d", []string{"install", "", "addtool"}[mode], tool, name, asks), func(t *testing.T) {
						h := newR30(t, r30Old(t), mode, asks)
						cs := r30Client(t, h.srv, func(string) {
							if err := h.g.SetPolicy(rev.p); err != nil {
								t.Error(err)
							}
						})
						res, err := call(t, cs, tool, map[string]any{"n": 11})
						if got := codeOf(t, res, err); got != rev.want {
							t.Errorf("revoked while asked: %s (%s), want %s", got, r30Text(res), rev.want)
						}
						if strings.Contains(r30Text(res), r30Secret) {
							t.Errorf("the caller got what was fetched after the answer: %s", r30Text(res))
						}
						// "or" goes on without the answer it was refused:
						// what it returns is not the call's answer.
						if n := h.after.Load(); n != 0 && tool != "or" {
							t.Errorf("the work after the answer ran %d times", n)
						}
						if err := h.g.Wait(context.Background()); err != nil {
							t.Fatal(err)
						}
						var outs []string
						for _, e := range h.records(tool) {
							if e.Phase == audit.PhaseOutcome {
								outs = append(outs, e.Code+"/"+e.Detail)
								if e.Allowed {
									t.Errorf("outcome allowed: %+v", e)
								}
							}
						}
						code := strings.TrimPrefix(rev.want, "jsonrpc:unknown tool \""+tool+"\"")
						if code == "" {
							code = "TOOL_NOT_FOUND"
						}
						if len(outs) != 1 || !strings.HasPrefix(outs[0], code+"/the policy changed while the client was asked") {
							t.Errorf("outcome records: %q, want one %s saying the policy changed", outs, code)
						}
					})
				}
			}
		}
	}
}

// TestReview30Unchanged: the same calls, the policy not replaced, or
// replaced by one that allows them as well: they complete as they would
// without the guard, one allowed outcome each.
func TestReview30Unchanged(t *testing.T) {
	for _, replace := range []bool{false, true} {
		for _, tool := range []string{"rw", "rr", "ow", "or", "cw"} {
			t.Run(fmt.Sprintf("%s_replaced_%v", tool, replace), func(t *testing.T) {
				h := newR30(t, r30Old(t), r30Install, 2)
				cs := r30Client(t, h.srv, func(string) {
					if replace {
						if err := h.g.SetPolicy(r30Old(t)); err != nil {
							t.Error(err)
						}
					}
				})
				res, err := call(t, cs, tool, map[string]any{"n": 11})
				if err != nil || res.IsError || !strings.Contains(r30Text(res), r30Secret) {
					t.Fatalf("call: %v %s, want its result", err, r30Text(res))
				}
				if n := h.after.Load(); n != 1 {
					t.Errorf("the work after the answer ran %d times, want 1", n)
				}
				if err := h.g.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
				var outs int
				for _, e := range h.records(tool) {
					if e.Phase == audit.PhaseOutcome {
						outs++
						if !e.Allowed {
							t.Errorf("outcome refused: %+v", e)
						}
					}
				}
				if outs != 1 {
					t.Errorf("%d outcome records, want 1", outs)
				}
			})
		}
	}
}

// TestReview30ConfirmedThenRevoked: a write an older client confirms
// within the call (the policy unchanged then), whose handler then asks in
// a multi round-trip, revoked at that second question: the guard's
// confirmation re-check passed, the question's refuses, and the call has
// one outcome record, refused.
func TestReview30ConfirmedThenRevoked(t *testing.T) {
	h := newR30(t, r30Old(t), r30Install, 1)
	revoked := r30Policy(t, policy.Config{Tools: r30Rules})
	cs := r30Client(t, h.srv, func(msg string) {
		if strings.HasPrefix(msg, "Confirm") {
			return
		}
		if err := h.g.SetPolicy(revoked); err != nil {
			t.Error(err)
		}
	})
	res, err := call(t, cs, "cw", map[string]any{})
	if got := codeOf(t, res, err); got != "WRITE_NOT_ALLOWED" {
		t.Errorf("revoked at the handler's question: %s, want WRITE_NOT_ALLOWED", got)
	}
	if n := h.after.Load(); n != 0 {
		t.Errorf("the next round ran %d times", n)
	}
	if err := h.g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, e := range h.records("cw") {
		if e.Phase == audit.PhaseOutcome {
			outs = append(outs, e.Code+"/"+e.Detail)
		}
	}
	if len(outs) != 1 || !strings.HasPrefix(outs[0], "WRITE_NOT_ALLOWED/confirmed by the user; the policy changed while the client was asked") {
		t.Errorf("outcome records: %q, want one WRITE_NOT_ALLOWED saying the policy changed", outs)
	}
}

// TestReview30WrapNextRound: under Wrap (no guard installed), the go-sdk
// asks an older client a handler's input requests above the guard, and
// its next round is a new guarded call, decided by the policy of its
// moment: a tool hidden meanwhile looks unknown, a write taken off the
// allowlist is WRITE_NOT_ALLOWED; the next round does not run, and its
// outcome record says so.
func TestReview30WrapNextRound(t *testing.T) {
	for _, tool := range []string{"rw", "rr"} {
		for name, rev := range r30Revocations(t, tool) {
			t.Run(tool+"_"+name, func(t *testing.T) {
				h := newR30(t, r30Old(t), r30Wrap, 2)
				cs := r30Client(t, h.srv, func(string) {
					if err := h.g.SetPolicy(rev.p); err != nil {
						t.Error(err)
					}
				})
				res, err := call(t, cs, tool, map[string]any{"n": 11})
				if got := codeOf(t, res, err); got != rev.want {
					t.Errorf("revoked while asked: %s, want %s", got, rev.want)
				}
				if n := h.after.Load(); n != 0 {
					t.Errorf("the next round ran %d times", n)
				}
				var outs []string
				for _, e := range h.records(tool) {
					if e.Phase == audit.PhaseOutcome {
						outs = append(outs, fmt.Sprint(e.Allowed, "/", e.Code))
					}
				}
				code := strings.TrimPrefix(rev.want, "jsonrpc:unknown tool \""+tool+"\"")
				if code == "" {
					code = "TOOL_NOT_FOUND"
				}
				if len(outs) != 2 || outs[1] != "false/"+code {
					t.Errorf("outcome records: %q, want the first round's and the next round's refused %s", outs, code)
				}
			})
		}
	}
}

// TestReview30CancelledWhileAsked: the caller cancels the call while its
// client is asked, the tool revoked meanwhile: the question ends with the
// call (a write's too, whose handler is not cancelled with its caller),
// the next round does not run, the call has one outcome record, refused,
// and Wait returns.
func TestReview30CancelledWhileAsked(t *testing.T) {
	for _, tool := range []string{"rw", "rr"} {
		t.Run(tool, func(t *testing.T) {
			h := newR30(t, r30Old(t), r30Install, 1)
			revoked := r30Policy(t, policy.Config{Tools: r30Rules, WriteAllowlist: r30Writes,
				RoleRules: []policy.RoleRule{{Pattern: tool, Roles: []string{"nobody"}}}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cs := connectVersion(t, h.srv, &mcp.ClientOptions{
				ElicitationHandler: func(ectx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if err := h.g.SetPolicy(revoked); err != nil {
						t.Error(err)
					}
					cancel()
					<-ectx.Done()
					return nil, ectx.Err()
				},
			}, "2025-11-25")
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}); err == nil {
				t.Fatal("cancelled call: no error")
			}
			wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer wcancel()
			if err := h.g.Wait(wctx); err != nil {
				t.Fatal(err)
			}
			if n := h.after.Load(); n != 0 {
				t.Errorf("the next round ran %d times", n)
			}
			var outs []string
			for _, e := range h.records(tool) {
				if e.Phase == audit.PhaseOutcome {
					outs = append(outs, fmt.Sprint(e.Allowed, "/", e.Code))
				}
			}
			if len(outs) != 1 || strings.HasPrefix(outs[0], "true") {
				t.Errorf("outcome records: %q, want one, refused", outs)
			}
		})
	}
}

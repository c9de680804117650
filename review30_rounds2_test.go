package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r2Rules: "wd" is a write whose handler writes, then asks the client
// (ignoring the error of its question); "outer" (read) calls "inner"
// (read), a guarded tool, in-process; "inner" asks the client.
var r2Rules = []policy.ToolRule{
	{Name: "wd", Class: policy.Write},
	{Name: "outer", Class: policy.Read},
	{Name: "inner", Class: policy.Read},
}

func r2Old(t *testing.T) *policy.Policy {
	return r30Policy(t, policy.Config{Tools: r2Rules, WriteAllowlist: []string{"wd"}})
}

func r2Guard(t *testing.T, p *policy.Policy, sink audit.Sink) *mcpguard.Guard {
	t.Helper()
	g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// r2Error reads the error object of a tool-error result.
func r2Error(t *testing.T, res *mcp.CallToolResult) (code, msg string, retryable bool) {
	t.Helper()
	if res == nil || !res.IsError {
		t.Fatalf("want a tool error, got %s", r30Text(res))
	}
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return body.Error.Code, body.Error.Message, body.Error.Retryable
}

// TestReview30R2WriteRevokedAfterWriting: a write's handler makes its
// write, then asks the client (a follow-up question), and the tool is
// revoked (taken off the write allowlist, or an argument limit the call
// exceeds) while the human looks at it. The answer is withheld and the
// call ends with the refusal, but its handler ran and did write: the
// caller must not be told a bare refusal, which reads as "not run", but
// that the write may have been made (not retryable), as for any other
// failure of a write whose handler ran.
func TestReview30R2WriteRevokedAfterWriting(t *testing.T) {
	withLimit := append([]policy.ToolRule(nil), r2Rules...)
	withLimit[0].ArgLimits = []policy.ArgLimit{{Field: "n", Max: 10}}
	revs := map[string]struct {
		p    *policy.Policy
		want string
	}{
		"off_allowlist": {r30Policy(t, policy.Config{Tools: r2Rules}), "WRITE_NOT_ALLOWED"},
		"arg_limit":     {r30Policy(t, policy.Config{Tools: withLimit, WriteAllowlist: []string{"wd"}}), "FORBIDDEN"},
	}
	for _, install := range []bool{true, false} {
		for name, rev := range revs {
			t.Run(fmt.Sprintf("install_%v_%s", install, name), func(t *testing.T) {
				sink := &memSink{}
				g := r2Guard(t, r2Old(t), sink)
				srv := mcp.NewServer(&mcp.Implementation{Name: "r2", Version: "1"}, nil)
				var wrote atomic.Int64
				tool := &mcp.Tool{Name: "wd", InputSchema: map[string]any{"type": "object"}}
				h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					wrote.Add(1)
					req.Session.Elicit(ctx, r30Form("notify anyone?")) // its answer is optional
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refund R-1 made"}}}, nil
				}
				if install {
					srv.AddTool(tool, h)
					if err := g.Install(srv); err != nil {
						t.Fatal(err)
					}
				} else if err := g.AddTool(srv, tool, h); err != nil {
					t.Fatal(err)
				}
				cs := r30Client(t, srv, func(string) {
					if err := g.SetPolicy(rev.p); err != nil {
						t.Error(err)
					}
				})
				res, err := call(t, cs, "wd", map[string]any{"n": 11})
				if err != nil {
					t.Fatal(err)
				}
				if wrote.Load() != 1 {
					t.Fatalf("the handler ran %d times, want 1", wrote.Load())
				}
				code, msg, retryable := r2Error(t, res)
				if code != rev.want || retryable || !strings.Contains(msg, "the write may have been made") {
					t.Errorf("a write revoked after it wrote: code %s, retryable %v, message %q; want %s, not retryable, saying the write may have been made",
						code, retryable, msg, rev.want)
				}
			})
		}
	}
}

// TestReview30R2NestedCallRedecided: the handler of "outer" calls the
// guarded tool "inner" in-process, with its own context, and "inner" asks
// the client; "outer" is hidden while the human looks at the question
// ("inner" stays allowed). "outer" waits on its client within its call as
// much as "inner" does: when the client answers, it is decided again, the
// answer withheld, and the call refused as a call of a hidden tool is,
// with one outcome record, refused. So whether "inner" is guarded by the
// same guard (installed, or adding its tools) or by a second one.
func TestReview30R2NestedCallRedecided(t *testing.T) {
	hidden := r30Policy(t, policy.Config{Tools: r2Rules, WriteAllowlist: []string{"wd"},
		RoleRules: []policy.RoleRule{{Pattern: "outer", Roles: []string{"nobody"}}}})
	obj := map[string]any{"type": "object"}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	for _, mode := range []string{"install", "addtool", "install_second_guard", "addtool_second_guard"} {
		t.Run(mode, func(t *testing.T) {
			sink := &memSink{}
			g := r2Guard(t, r2Old(t), sink)
			gi := g
			if strings.HasSuffix(mode, "second_guard") {
				gi = r2Guard(t, r2Old(t), &memSink{})
			}
			var after atomic.Int64
			inner, err := gi.Wrap(&mcp.Tool{Name: "inner", InputSchema: obj, Annotations: ro},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if _, err := req.Session.Elicit(ctx, r30Form("which?")); err != nil {
						return nil, err
					}
					after.Add(1)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r30Secret}}}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			outer := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return inner(ctx, &mcp.CallToolRequest{Session: req.Session,
					Params: &mcp.CallToolParamsRaw{Name: "inner", Arguments: json.RawMessage(`{}`)}})
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "r2", Version: "1"}, nil)
			tool := &mcp.Tool{Name: "outer", InputSchema: obj, Annotations: ro}
			if strings.HasPrefix(mode, "install") {
				srv.AddTool(tool, outer)
				if err := g.Install(srv); err != nil {
					t.Fatal(err)
				}
			} else if err := g.AddTool(srv, tool, outer); err != nil {
				t.Fatal(err)
			}
			cs := r30Client(t, srv, func(string) {
				if err := g.SetPolicy(hidden); err != nil {
					t.Error(err)
				}
			})
			res, err := call(t, cs, "outer", map[string]any{})
			if got := codeOf(t, res, err); got != `jsonrpc:unknown tool "outer"` {
				t.Errorf("outer hidden while asked: %s (%s), want unknown tool", got, r30Text(res))
			}
			if n := after.Load(); n != 0 {
				t.Errorf("the work after the answer ran %d times", n)
			}
			if err := g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			var outs []string
			for _, e := range sink.all() {
				if e.Tool == "outer" && e.Phase == audit.PhaseOutcome {
					outs = append(outs, fmt.Sprint(e.Allowed, "/", e.Code, "/", e.Detail))
				}
			}
			if len(outs) != 1 || !strings.HasPrefix(outs[0], "false/TOOL_NOT_FOUND/the policy changed while the client was asked") {
				t.Errorf("outer's outcome records: %q, want one TOOL_NOT_FOUND saying the policy changed", outs)
			}
		})
	}
}

package gateway

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A rule that asks for a human confirmation cannot be honoured by the
// gateway, which has no way to ask: such a call was forwarded without one.
// It is refused, never reaching the downstream, whether the rule is a
// tool's own, one its name folds to, or the default; and a filtered
// tools/list leaves it out.
func TestReview17ConfirmRulesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  policy.Config
		tool string
	}{
		{"own rule", policy.Config{
			Tools:          []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Confirm: true}},
			WriteAllowlist: []string{"trigger_refund"},
		}, "trigger_refund"},
		{"folded name", policy.Config{
			Tools:          []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Confirm: true}},
			WriteAllowlist: []string{"trigger_refund"},
			Default:        &policy.ToolRule{Class: policy.Read},
		}, "Trigger_Refund"},
		{"default rule", policy.Config{
			Default: &policy.ToolRule{Class: policy.Read, Confirm: true},
		}, "get_customer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			rg := newRig(t, &Options{Policy: p, FilterToolsList: true})
			r := rg.post(t, admin, call("1", tc.tool, `{"amount":5}`))
			if r.status != http.StatusForbidden {
				t.Errorf("status %d, want 403; body %s", r.status, r.body)
			}
			if _, code, _ := rpcErr(t, r.body); code != CodeForbidden {
				t.Errorf("code %d, want %d; body %s", code, CodeForbidden, r.body)
			}
			for _, b := range rg.down.bodies() {
				if strings.Contains(b, "tools/call") {
					t.Errorf("the downstream received %s", b)
				}
			}
		})
	}
}

// With FilterToolsList, a tool whose rule asks for a confirmation is left
// out of tools/list: its calls are always refused.
func TestReview17ConfirmRuleFilteredFromList(t *testing.T) {
	var resets atomic.Int64
	srv := sdkServer(&resets)
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	p, err := policy.New(policy.Config{
		Tools:   []policy.ToolRule{{Name: "get_customer_record", Class: policy.Read, Confirm: true}},
		Default: &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(down.URL, DemoTokens(), &Options{Policy: p, FilterToolsList: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	sid := sdkSession(t, rg, admin)
	got := rg.post(t, admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	if got.status != http.StatusOK || !strings.Contains(got.body, "admin_reset_key") {
		t.Fatalf("tools/list: %d %s", got.status, got.body)
	}
	if strings.Contains(got.body, "get_customer_record") {
		t.Errorf("the filtered tools/list shows get_customer_record, whose calls are refused: %s", got.body)
	}
}

package gateway

import (
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview60HiddenToolRecord: with ShowForbidden off, a caller without
// the admin role calling admin_reset_key is answered exactly as for a
// name no rule covers (the caller must not tell them apart), but the
// operator's trail must: a probe of admin tools is not a typo. The
// library's guard records such a call as hidden; the gateway recorded
// both "unknown tool".
func TestReview60HiddenToolRecord(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "admin_reset_key", Class: policy.Read},
		},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	rg := newRig(t, &Options{Policy: pol, Audit: sink})
	call := func(tool string) reply {
		return rg.post(t, "Bearer viewer-token",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`)
	}
	hidden, unknown := call("admin_reset_key"), call("no_such_tool")
	if hidden.status != unknown.status {
		t.Errorf("status: hidden %d, unknown %d", hidden.status, unknown.status)
	}
	if len(rg.down.log()) != 0 {
		t.Fatalf("the downstream received %d requests", len(rg.down.log()))
	}
	h, u := sink.outcomes("admin_reset_key"), sink.outcomes("no_such_tool")
	if len(h) != 1 || len(u) != 1 {
		t.Fatalf("records: hidden %d, unknown %d", len(h), len(u))
	}
	if h[0].Code != "TOOL_NOT_FOUND" || u[0].Code != "TOOL_NOT_FOUND" || h[0].Allowed || u[0].Allowed {
		t.Errorf("codes: hidden %q, unknown %q", h[0].Code, u[0].Code)
	}
	if u[0].Detail != "unknown tool" {
		t.Errorf("unknown tool's detail %q", u[0].Detail)
	}
	if h[0].Detail != audit.DetailHidden {
		t.Errorf("hidden tool's detail %q, want %q", h[0].Detail, audit.DetailHidden)
	}
}

package gateway

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// TestHeaderRefusalIsAudited pins the audit record of a tools/call refused
// for its standard headers (a single request whose Mcp-Method or Mcp-Name
// header contradicts its body): one outcome record, not allowed, with the
// refusal's contract and message, the tool its body names, the caller, and
// cost 0. A request other than tools/call refused the same way leaves no
// record.
func TestHeaderRefusalIsAudited(t *testing.T) {
	for _, tc := range []struct {
		name, body   string
		hdr          []string
		tool         string // "" when no record is wanted
		code, detail string
	}{
		{name: "mcp_name_mismatch", body: call(`1`, "get_customer_record", ""),
			hdr: []string{"Mcp-Name", "admin_reset_key"}, tool: "get_customer_record", code: "INVALID_ARGUMENTS",
			detail: "Invalid params: Mcp-Name header does not match params.name"},
		{name: "mcp_method_mismatch", body: call(`1`, "get_customer_record", ""),
			hdr: []string{"Mcp-Method", "tools/list"}, tool: "get_customer_record", code: "INVALID_REQUEST",
			detail: "Invalid Request: Mcp-Method header does not match the body"},
		{name: "not_tools_call", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			hdr: []string{"Mcp-Method", "tools/call"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			rg := newRig(t, &Options{Audit: sink})
			got := rg.post(t, viewer, tc.body, tc.hdr...)
			if got.status != http.StatusBadRequest || len(rg.down.log()) != 0 {
				t.Fatalf("%d %s, %d forwarded; want 400, nothing forwarded", got.status, got.body, len(rg.down.log()))
			}
			recs := sink.since(0)
			if tc.tool == "" {
				if len(recs) != 0 {
					t.Fatalf("%d records, want none: %+v", len(recs), recs)
				}
				return
			}
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(recs), recs)
			}
			e := recs[0]
			if e.Phase != audit.PhaseOutcome || e.Allowed || e.Tool != tc.tool || e.Code != tc.code ||
				e.Detail != tc.detail || e.Cost != 0 || e.Subject != "viewer" {
				t.Errorf("record: %s allowed=%v tool %q %s %q cost %v subject %q; want outcome false %q %s %q 0 viewer",
					e.Phase, e.Allowed, e.Tool, e.Code, e.Detail, e.Cost, e.Subject, tc.tool, tc.code, tc.detail)
			}
		})
	}
}

// TestStandardHeadersOnceOnly pins that a single request that sends its
// Mcp-Method or Mcp-Name header twice is refused (400, not forwarded), even
// when the first value matches its body: a downstream that routes on the
// header may read the second. So is a client's response (no method) that
// sends Mcp-Method at all.
func TestStandardHeadersOnceOnly(t *testing.T) {
	const read = "get_customer_record"
	for _, tc := range []struct {
		name, body string
		hdr        []string
		code       int
	}{
		{"method_twice", call(`1`, read, ""), []string{"Mcp-Method", "tools/call", "Mcp-Method", "tools/call"},
			CodeInvalidRequest},
		{"method_then_other", call(`1`, read, ""), []string{"Mcp-Method", "tools/call", "Mcp-Method", "tools/list"},
			CodeInvalidRequest},
		{"name_twice", call(`1`, read, ""), []string{"Mcp-Method", "tools/call", "Mcp-Name", read, "Mcp-Name", read},
			CodeInvalidParams},
		{"name_then_other", call(`1`, read, ""), []string{"Mcp-Name", read, "Mcp-Name", "admin_reset_key"},
			CodeInvalidParams},
		{"response_with_method_header", `{"jsonrpc":"2.0","id":1,"result":{}}`, []string{"Mcp-Method", ""},
			CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.post(t, viewer, tc.body, tc.hdr...)
			if got.status != http.StatusBadRequest {
				t.Fatalf("answer %d %s, want 400", got.status, got.body)
			}
			if _, code, _ := rpcErr(t, got.body); code != tc.code {
				t.Errorf("error code %d, want %d: %s", code, tc.code, got.body)
			}
			if n := len(rg.down.log()); n != 0 {
				t.Errorf("%d requests forwarded, want none", n)
			}
			// The same request with each header once is forwarded.
			var once []string
			seen := map[string]bool{}
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				if !seen[tc.hdr[i]] {
					seen[tc.hdr[i]] = true
					once = append(once, tc.hdr[i], tc.hdr[i+1])
				}
			}
			if tc.name == "response_with_method_header" {
				once = nil
			}
			if got := rg.post(t, viewer, tc.body, once...); got.status/100 != 2 || len(rg.down.log()) != 1 {
				t.Errorf("with each header once: %d %s, %d forwarded; want it forwarded", got.status, got.body,
					len(rg.down.log()))
			}
		})
	}
}

// TestRolelessCallerDenied pins the refusal of a caller with no role at all
// (a custom Authenticator may return such a principal; token.CheckPrincipal
// accepts it): a -32001 that names the role required and the caller's none,
// whose data has no "role", and nothing forwarded. Reading a first role that
// is not there would end the request without an answer.
func TestRolelessCallerDenied(t *testing.T) {
	d := &downstream{}
	dsrv := newServer(t, d)
	auth := AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) {
		return &policy.Principal{Subject: "nobody"}, nil
	})
	rg := newRigWith(t, dsrv, auth, discardLogger())
	got := rg.post(t, viewer, call(`1`, "admin_reset_key", ""))
	if got.status != http.StatusForbidden {
		t.Fatalf("answer %d %s, want 403", got.status, got.body)
	}
	const want = "Unauthorized Tool Call: tool 'admin_reset_key' requires role admin, caller has role ''."
	if msg := denialMessage(t, got.body); msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	_, code, data := rpcErr(t, got.body)
	if code != CodeForbidden {
		t.Errorf("code %d, want %d", code, CodeForbidden)
	}
	if r, ok := data["role"]; ok {
		t.Errorf("data.role = %v, want none", r)
	}
	if r := data["required_roles"]; !reflect.DeepEqual(r, []any{"admin"}) {
		t.Errorf("data.required_roles = %v, want [admin]", r)
	}
	if n := len(d.log()); n != 0 {
		t.Errorf("%d requests forwarded, want none", n)
	}
	// The same caller may call a tool that needs no role.
	if got := rg.post(t, viewer, call(`2`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Errorf("a tool without a role rule: %d %s, want 200", got.status, got.body)
	}
}

package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolCatalogue(t *testing.T) {
	all := toolSpecs(true)
	if len(all) != 15 {
		t.Fatalf("%d tools with admin writes, want 15", len(all))
	}
	customer := specNames(true, func(s *toolSpec) bool { return slices.Equal(s.roles, customerRoles()) })
	want := []string{"check_stock", "compare_products", "get_cart", "get_order_history", "get_product", "list_categories", "search_products", "update_cart"}
	if diff := cmp.Diff(want, customer); diff != "" {
		t.Errorf("customer tools (-want +got):\n%s", diff)
	}
	for _, s := range all {
		tool := s.mcpTool()
		in := tool.InputSchema.(map[string]any)
		if in["additionalProperties"] != false {
			t.Errorf("%s: input schema allows unknown fields", s.name)
		}
		if tool.OutputSchema == nil || tool.Title == "" {
			t.Errorf("%s: no output schema or title", s.name)
		}
		if !strings.Contains(s.description, "not") && !strings.Contains(s.description, "Read-only") {
			t.Errorf("%s: the description does not say what the tool will not do: %q", s.name, s.description)
		}
		a := tool.Annotations
		if a.ReadOnlyHint == s.write {
			t.Errorf("%s: readOnlyHint %v for write=%v", s.name, a.ReadOnlyHint, s.write)
		}
		if s.write && (a.DestructiveHint == nil || !*a.DestructiveHint || !a.IdempotentHint) {
			t.Errorf("%s: a write without destructiveHint and idempotentHint: %+v", s.name, a)
		}
		if s.confirm != (s.write && strings.HasPrefix(s.name, "admin_")) {
			t.Errorf("%s: confirm = %v; admin writes, and only they, need confirmation", s.name, s.confirm)
		}
	}
	if n := len(toolSpecs(false)); n != 12 {
		t.Errorf("%d tools without admin writes, want 12", n)
	}
}

// TestDiscoveryPerRole lists the tools each synthetic user sees, with and
// without the admin writes.
func TestDiscoveryPerRole(t *testing.T) {
	customer := specNames(true, func(s *toolSpec) bool { return !strings.HasPrefix(s.name, "admin_") })
	for _, writes := range []bool{false, true} {
		st := newStack(t, func(c *config) { c.adminWrites = writes }, nil)
		adminTools := specNames(writes, func(s *toolSpec) bool { return s.name != "admin_list_users" })
		superTools := specNames(writes, func(*toolSpec) bool { return true })
		for _, tc := range []struct {
			session string
			want    []string
		}{
			{sessionCustomer, customer},
			{sessionAdmin, adminTools},
			{sessionSuper, superTools},
		} {
			got := toolNames(t, connect(t, st, tc.session, nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("admin writes %v, %s sees (-want +got):\n%s", writes, tc.session, diff)
			}
		}
	}
}

// TestHiddenToolIsUnknown: a customer calling an admin tool, or anyone
// calling an admin write that is not registered, gets exactly the answer
// for a tool that does not exist, and the gateway is never asked.
func TestHiddenToolIsUnknown(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	linus := connect(t, st, sessionSuper, nil)
	_, unknown := callRaw(t, ada, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if unknown == nil {
		t.Fatal("an unknown tool was not refused")
	}
	for _, tc := range []struct {
		cs   *mcp.ClientSession
		tool string
	}{
		{ada, "admin_list_users"},
		{ada, "admin_get_user"},
		{connect(t, st, sessionAdmin, nil), "admin_list_users"},
		{linus, "admin_set_price"}, // admin writes are not registered
	} {
		_, we := callRaw(t, tc.cs, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
		if we == nil {
			t.Fatalf("%s was not refused", tc.tool)
		}
		want := strings.ReplaceAll(unknown.Message, "no_such_tool", tc.tool)
		if we.Code != unknown.Code || we.Message != want || string(we.Data) != string(unknown.Data) {
			t.Errorf("%s: %d %q %s; want exactly the unknown tool's %d %q %s", tc.tool, we.Code, we.Message, we.Data, unknown.Code, want, unknown.Data)
		}
	}
	for _, r := range st.gw.recorded() {
		if strings.HasPrefix(r.Path, "/api/admin") {
			t.Errorf("a hidden tool reached the gateway: %s %s", r.Method, r.Path)
		}
	}
	// The tools that do exist for the super admin still work.
	if users := ok(t, linus, "admin_list_users", map[string]any{}); len(users["users"].([]any)) != 4 {
		t.Errorf("admin_list_users: %v", users)
	}
}

// TestSessionCheckedEveryCall: every call and every listing asks the
// gateway who the session is, with no cache; a session revoked between two
// calls fails on the second, and the gateway is not asked to run it.
func TestSessionCheckedEveryCall(t *testing.T) {
	st := newStack(t, nil, nil)
	bo := connect(t, st, sessionCustomer2, nil)
	before := st.gw.count("GET", "/api/auth/me")
	ok(t, bo, "get_cart", map[string]any{})
	ok(t, bo, "get_cart", map[string]any{})
	toolNames(t, bo)
	if n := st.gw.count("GET", "/api/auth/me") - before; n != 3 {
		t.Errorf("%d session checks for two calls and a listing, want 3", n)
	}
	carts := st.gw.count("GET", "/api/cart")
	st.gw.revoke(sessionCustomer2)
	e := toolErr(t, bo, "get_cart", map[string]any{})
	if e["code"] != "UNAUTHENTICATED" || e["retryable"] != false {
		t.Errorf("call after revocation: %v, want UNAUTHENTICATED", e)
	}
	if n := st.gw.count("GET", "/api/cart"); n != carts {
		t.Errorf("the revoked session's call reached the gateway")
	}
	if _, err := bo.ListTools(context.Background(), nil); err == nil {
		t.Error("tools/list with a revoked session was not refused")
	}
	// A made-up session, and none at all, are refused too.
	for _, s := range []string{"sess-made-up", ""} {
		e := toolErr(t, connect(t, st, s, nil), "list_categories", map[string]any{})
		if e["code"] != "UNAUTHENTICATED" {
			t.Errorf("session %q: %v, want UNAUTHENTICATED", s, e)
		}
	}
}

// TestNoClientHeaderLeaves: whatever the MCP client sends, the gateway
// receives only accept, the session cookie and, for a body, origin and
// content-type; the bearer token travels only as rs_auth.
func TestNoClientHeaderLeaves(t *testing.T) {
	st := newStack(t, nil, nil)
	extra := map[string]string{"X-Forwarded-For": "203.0.113.9", "Cookie": "rs_auth=sess-super-linus; other=1", "X-Api-Key": "client-secret", "User-Agent": "evil-agent"}
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	hc := httpClient(bearer{sessionCustomer, headerAdder{extra}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: st.mcpURL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ok(t, cs, "get_product", map[string]any{"sku": "RB-100"})
	ok(t, cs, "update_cart", map[string]any{"sku": "RB-500", "quantity": 1})
	reqs := st.gw.recorded()
	if len(reqs) < 4 {
		t.Fatalf("%d gateway requests, want at least 4", len(reqs))
	}
	for _, r := range reqs {
		var names []string
		for k := range r.Header {
			names = append(names, k)
		}
		slices.Sort(names)
		want := []string{"Accept", "Cookie"}
		if r.Method != "GET" {
			want = []string{"Accept", "Content-Length", "Content-Type", "Cookie", "Origin"}
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("%s %s: headers (-want +got):\n%s", r.Method, r.Path, diff)
		}
		if got := r.Header.Get("Cookie"); got != "rs_auth="+sessionCustomer {
			t.Errorf("%s %s: cookie %q, want only the caller's session", r.Method, r.Path, got)
		}
		if r.Method != "GET" && r.Header.Get("Origin") != st.gwURL {
			t.Errorf("%s %s: origin %q, want %q", r.Method, r.Path, r.Header.Get("Origin"), st.gwURL)
		}
	}
	if q := st.gw.quantity("u-1001", "RB-500"); q != 1 {
		t.Errorf("the cart change ran as someone else: ada has %d of RB-500", q)
	}
}

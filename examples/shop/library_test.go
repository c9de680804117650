package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
)

// TestSessionCheckUnavailable: a session check that cannot be completed
// (a 5xx, twice, or a 429) is UPSTREAM_UNAVAILABLE and retryable, not
// UNAUTHENTICATED; a session the gateway refuses (401, 403) stays
// UNAUTHENTICATED, not retryable.
func TestSessionCheckUnavailable(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct {
		status    int
		n         int
		code      string
		retryable bool
	}{
		{503, 2, "UPSTREAM_UNAVAILABLE", true},
		{500, 1, "UPSTREAM_UNAVAILABLE", true},
		{429, 1, "UPSTREAM_UNAVAILABLE", true},
		{401, 1, "UNAUTHENTICATED", false},
		{403, 1, "UNAUTHENTICATED", false},
	} {
		st.gw.fail("GET", "/api/auth/me", tc.status, `{}`, tc.n)
		before := st.gw.count("GET", "/api/cart")
		e := toolErr(t, ada, "get_cart", map[string]any{})
		if e["code"] != tc.code || e["retryable"] != tc.retryable {
			t.Errorf("session check answered %d: %v, want %s retryable %v", tc.status, e, tc.code, tc.retryable)
		}
		if st.gw.count("GET", "/api/cart") != before {
			t.Errorf("session check answered %d: the call reached the gateway", tc.status)
		}
	}
	ok(t, ada, "get_cart", map[string]any{}) // the faults are used up
}

// TestSessionCheckNetworkError: a gateway that does not answer at all
// makes the session check UPSTREAM_UNAVAILABLE (a *DenialError the guard
// passes on as such).
func TestSessionCheckNetworkError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	gw, err := newGatewayClient("http://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	a := &sessionAuth{gw: gw, stdio: true, launch: sessionCustomer}
	_, err = a.Authenticate(context.Background(), nil)
	var d *mcpguard.DenialError
	if !errors.As(err, &d) || d.Code != mcpguard.CodeUpstreamUnavailable {
		t.Errorf("gateway down: %v, want UPSTREAM_UNAVAILABLE", err)
	}
}

// TestAuditKey: with SHOP_MCP_AUDIT_KEY the records' args_sha256 is the
// HMAC-SHA256 of the arguments under that key (audit.ArgsHMAC), so that
// who holds the key can match records and nobody else can test guesses;
// a short or non-hex key is refused.
func TestAuditKey(t *testing.T) {
	key, err := parseAuditKey(strings.Repeat("a1", 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a1b2", strings.Repeat("zz", 32)} {
		if _, err := parseAuditKey(bad); err == nil {
			t.Errorf("audit key %q accepted", bad)
		}
	}
	path := t.TempDir() + "/audit.jsonl"
	st := newStack(t, func(c *config) { c.auditPath, c.auditKey = path, key }, nil)
	grace := connect(t, st, sessionAdmin, nil)
	ok(t, grace, "admin_get_user", map[string]any{"userId": "u-1002"})
	st.stop()
	want := audit.ArgsHMAC(key, json.RawMessage(`{"userId":"u-1002"}`))
	var got string
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		var ev audit.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Tool == "admin_get_user" {
			got = ev.ArgsSHA256
		}
	}
	if want == "" || got != want {
		t.Errorf("args_sha256 %q, want the HMAC under the audit key %q", got, want)
	}
}

// TestOversizeAnswerNotRetried: a gateway answer over the size cap is a
// malformed answer (INVALID_RESPONSE), not an unavailable gateway: a read
// is not retried.
func TestOversizeAnswerNotRetried(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	big := `{"categories":[],"pad":"` + strings.Repeat("x", maxGatewayBody) + `"}`
	st.gw.fail("GET", "/api/categories", 200, big, 2)
	before := st.gw.count("GET", "/api/categories")
	e := toolErr(t, ada, "list_categories", map[string]any{})
	if e["code"] != "INVALID_RESPONSE" {
		t.Errorf("oversize answer: %v, want INVALID_RESPONSE", e)
	}
	if n := st.gw.count("GET", "/api/categories") - before; n != 1 {
		t.Errorf("oversize answer: %d gateway requests, want 1 (no retry)", n)
	}
}

// TestNamesBounded: catalogue names are cut to maxName characters, as
// descriptions to maxDescription, and the output schemas say so.
func TestNamesBounded(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	long := strings.Repeat("n", maxName+50)
	body := mustJSON(t, map[string]any{"sku": "RB-100", "name": long, "description": strings.Repeat("d", maxDescription+1),
		"price": 1, "currency": "EUR", "category": "home", "stock": 1, "source": "catalogue"})
	st.gw.fail("GET", "/api/products/RB-100", 200, body, 1)
	got := ok(t, ada, "get_product", map[string]any{"sku": "RB-100"})
	if got["name"] != long[:maxName] || len(got["description"].(string)) != maxDescription {
		t.Errorf("name %d, description %d characters; want %d and %d",
			len(got["name"].(string)), len(got["description"].(string)), maxName, maxDescription)
	}
	if productSchema()["properties"].(map[string]any)["name"].(map[string]any)["maxLength"] != maxName {
		t.Error("the product schema does not bound names")
	}
}

// TestFormatCharactersRefused: free text refuses Unicode format
// characters (a bidi override, a zero-width space, a BOM), like tab and
// newline, before anything reaches the gateway; ordinary non-ASCII text
// passes.
func TestFormatCharactersRefused(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, c := range []string{`\u202e`, `\u200b`, `\ufeff`, `\t`} {
		before := st.gw.count("GET", "/api/recommendations")
		e := toolErr(t, ada, "search_products", json.RawMessage(`{"query":"robot`+c+`arm"}`))
		if e["code"] != "INVALID_ARGUMENTS" || st.gw.count("GET", "/api/recommendations") != before {
			t.Errorf("query with %s: %v, want INVALID_ARGUMENTS before the gateway", c, e)
		}
	}
	ok(t, ada, "search_products", map[string]any{"query": "Roboterarm für Anfänger"})
}

// TestIntegersForwardedPlain: an integer argument spelt 1e1 or 3.0 reaches
// the gateway as a plain integer, in a query and in a JSON body.
func TestIntegersForwardedPlain(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	n := len(st.gw.recorded())
	ok(t, ada, "update_cart", json.RawMessage(`{"sku":"RB-100","quantity":1e1}`))
	for _, r := range st.gw.recorded()[n:] {
		if r.Method != "POST" || r.Path != "/api/cart" {
			continue
		}
		var body map[string]any
		dec := json.NewDecoder(strings.NewReader(r.Body))
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil || body["quantity"] != json.Number("10") {
			t.Errorf("update_cart quantity 1e1: gateway body %s, want quantity 10", r.Body)
		}
	}
	if q := st.gw.quantity("u-1001", "RB-100"); q != 10 {
		t.Errorf("quantity %d, want 10", q)
	}
}

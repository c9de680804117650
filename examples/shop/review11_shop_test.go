package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview11CompareMalformedSKUIsInvalidResponse: a gateway answer to
// compare_products whose product sku is not a string (an object, an
// array) is a malformed upstream answer: INVALID_RESPONSE, as for every
// other tool, not a panic of the projection turned INTERNAL.
func TestReview11CompareMalformedSKUIsInvalidResponse(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct{ name, body string }{
		{"sku_object", `{"products":[{"sku":{"x":1},"name":"Robo"}]}`},
		{"sku_array", `{"products":[{"sku":["RB-100"],"name":"Robo"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.gw.fail("GET", "/api/products", 200, tc.body, 1)
			e := toolErr(t, ada, "compare_products", map[string]any{"skus": []string{"RB-100", "RB-200"}})
			if e["code"] != "INVALID_RESPONSE" {
				t.Errorf("compare_products with %s: %v, want INVALID_RESPONSE", tc.body, e)
			}
		})
	}
}

// TestReview11ToolsOnly: the server offers tools and nothing else; as in
// the seed, listing resources, resource templates and prompts answers
// empty lists.
func TestReview11ToolsOnly(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	ctx := context.Background()
	res, err := ada.ListResources(ctx, nil)
	if err != nil || len(res.Resources) != 0 {
		t.Errorf("ListResources: %v, %v; want an empty list", res, err)
	}
	tmpl, err := ada.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 0 {
		t.Errorf("ListResourceTemplates: %v, %v; want an empty list", tmpl, err)
	}
	pr, err := ada.ListPrompts(ctx, nil)
	if err != nil || len(pr.Prompts) != 0 {
		t.Errorf("ListPrompts: %v, %v; want an empty list", pr, err)
	}
}

// TestReview11CallDeadline: each call has one total deadline (10 s in the
// seed; shortened here), retries included. A read whose gateway never
// answers is UPSTREAM_UNAVAILABLE when it runs out; a write too, never
// retryable, and sent once.
func TestReview11CallDeadline(t *testing.T) {
	st := newStack(t, func(c *config) { c.timeout = 300 * time.Millisecond }, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct {
		tool, method, path string
		args               map[string]any
		retryable          bool
	}{
		{"get_cart", "GET", "/api/cart", map[string]any{}, true},
		{"update_cart", "POST", "/api/cart", map[string]any{"sku": "RB-100", "quantity": 1}, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			h := st.gw.hold(tc.method, tc.path)
			defer st.gw.unhold(tc.method, tc.path)
			before := st.gw.count(tc.method, tc.path)
			done := make(chan map[string]any, 1)
			go func() { done <- toolErr(t, ada, tc.tool, tc.args) }()
			recv(t, h.arrived, "the gateway request")
			e := recv(t, done, "the call to run out of time")
			if e["code"] != "UPSTREAM_UNAVAILABLE" || e["retryable"] != tc.retryable {
				t.Errorf("%s past its deadline: %v, want UPSTREAM_UNAVAILABLE, retryable %v", tc.tool, e, tc.retryable)
			}
			if tc.method == "POST" && !strings.Contains(e["message"].(string), "may or may not") {
				t.Errorf("a timed-out write does not say the change may have been made: %v", e)
			}
			if n := st.gw.count(tc.method, tc.path) - before; n != 1 {
				t.Errorf("%s: %d gateway requests within one deadline, want 1 (no retry once it has run out)", tc.tool, n)
			}
		})
	}
}

// TestReview11ConfirmationExpiresAfterTwoMinutes: the signed state of an
// admin write is valid for two minutes, as in the seed: answered after
// that, the write is refused and nothing runs; answered within, it runs.
func TestReview11ConfirmationExpiresAfterTwoMinutes(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	st := newStack(t, func(c *config) { c.adminWrites, c.now = true, clock }, nil)
	grace := connect(t, st, sessionAdmin, noMRTR())
	const path = "/api/admin/products/RB-100/price"
	args := `{"sku":"RB-100","price":12.5}`

	state := firstRound(t, st, grace, "admin_set_price", args)
	advance(2*time.Minute + time.Second)
	res, we := callRaw(t, grace, &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()})
	if we != nil {
		t.Fatal(we)
	}
	if e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any); !res.IsError || e["code"] != "CONFIRMATION_REQUIRED" {
		t.Errorf("confirmation answered after 2m1s: %s, want CONFIRMATION_REQUIRED", mustJSON(t, res))
	}
	if n := st.gw.count("PUT", path); n != 0 {
		t.Fatalf("an expired confirmation ran the write %d times", n)
	}

	state = firstRound(t, st, grace, "admin_set_price", args)
	advance(2*time.Minute - time.Second)
	res, we = callRaw(t, grace, &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()})
	if we != nil || res.IsError {
		t.Fatalf("confirmation answered after 1m59s: %v %s", we, mustJSON(t, res))
	}
	if n := st.gw.count("PUT", path); n != 1 {
		t.Errorf("the write confirmed in time ran %d times, want once", n)
	}
}

// TestReview11DisablePromptShowsReason: the human asked to confirm
// admin_disable_user sees the reason too. It is bound into the signed
// arguments, so a prompt without it had the human approve text they never
// saw. It is quoted, so that it reads as the caller's text.
func TestReview11DisablePromptShowsReason(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	var msg string
	cs := connect(t, st, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	toolErr(t, cs, "admin_disable_user", map[string]any{"userId": "u-1002", "reason": "chargeback fraud"})
	if !strings.Contains(msg, "u-1002") || !strings.Contains(msg, `"chargeback fraud"`) {
		t.Errorf("prompt %q does not show the quoted reason", msg)
	}
}

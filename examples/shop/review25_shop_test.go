package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatewayCalls returns the requests the gateway received after the first
// n, as "METHOD /path?query body", session checks left out.
func gatewayCalls(st *stack, n int) []string {
	var out []string
	for _, r := range st.gw.recorded()[n:] {
		if r.Path != "/api/auth/me" {
			out = append(out, strings.TrimSpace(r.Method+" "+r.Path+"?"+r.Query+" "+r.Body))
		}
	}
	return out
}

// TestReview25CustomerCannotNameAnotherUser: a model holding a customer's
// session cannot reach another user's cart or orders: no customer tool
// takes a user id, and one given (userId, user) is an unknown argument,
// refused before the gateway is asked; a SKU spelled another way (lower
// case, a Unicode hyphen, full-width or Arabic-Indic digits, path or query
// characters, a NUL) is refused too, and one with a leading zero goes to
// the gateway as written, as its own SKU.
func TestReview25CustomerCannotNameAnotherUser(t *testing.T) {
	st := newStack(t, func(c *config) { c.rate = 1000 }, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct{ tool, args string }{
		{"get_cart", `{"userId":"u-1002"}`},
		{"get_cart", `{"user":"u-1002"}`},
		{"get_order_history", `{"userId":"u-1002"}`},
		{"update_cart", `{"sku":"RB-100","quantity":1,"userId":"u-1002"}`},
		{"update_cart", `{"sku":"RB-100","quantity":1,"Quantity":20}`},
		{"update_cart", `{"sku":"RB-100","quantity":1,"quantity":20}`},
		{"update_cart", `{"sku":"RB-100","quantity":1,"confirm":true}`},
	} {
		n := len(st.gw.recorded())
		if e := toolErr(t, ada, tc.tool, json.RawMessage(tc.args)); e["code"] != "INVALID_ARGUMENTS" {
			t.Errorf("%s %s: %v, want INVALID_ARGUMENTS", tc.tool, tc.args, e)
		}
		if got := gatewayCalls(st, n); len(got) != 0 {
			t.Errorf("%s %s reached the gateway: %v", tc.tool, tc.args, got)
		}
	}
	for _, sku := range []string{"rb-100", "RB\u2010100", "RB-\uff11\uff10\uff10", "RB-\u0661\u0660\u0660", "RB-100/../x", "RB-100%2F",
		"RB-100?x=1", "RB-100#", "RB-100 ", "RB-100\n", "RB-100\x00", "\u0130B-100", ".."} {
		n := len(st.gw.recorded())
		if e := toolErr(t, ada, "get_product", map[string]any{"sku": sku}); e["code"] != "INVALID_ARGUMENTS" {
			t.Errorf("sku %q: %v, want INVALID_ARGUMENTS", sku, e)
		}
		if got := gatewayCalls(st, n); len(got) != 0 {
			t.Errorf("sku %q reached the gateway: %v", sku, got)
		}
	}
	n := len(st.gw.recorded())
	if e := toolErr(t, ada, "get_product", map[string]any{"sku": "RB-0100"}); e["code"] != "not_found" {
		t.Errorf("sku RB-0100: %v, want the gateway's not_found", e)
	}
	if got := gatewayCalls(st, n); len(got) != 1 || got[0] != "GET /api/products/RB-0100?" {
		t.Errorf("sku RB-0100: gateway asked %v, want GET /api/products/RB-0100", got)
	}
	if q := st.gw.quantity("u-1002", "RB-100"); q != 0 {
		t.Errorf("bo's cart changed: RB-100 x %d", q)
	}
}

// TestReview25QuantitySpellings: update_cart's quantity is an integer
// from 0 to 20 by value. A string, boolean, null, array, object, a
// fraction (however close to an integer), a value out of range or one
// with a huge exponent is refused before the gateway is asked; an
// integral value spelled 1e1, 2.0, 200e-2 or -0 reaches the gateway as the
// plain integer, and the cart holds it.
func TestReview25QuantitySpellings(t *testing.T) {
	st := newStack(t, func(c *config) { c.rate = 1000 }, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, q := range []string{`-1`, `21`, `2.5`, `"2"`, `true`, `null`, `[2]`, `{"n":2}`, `1e-400`, `-1e-400`,
		`20.0000000000000000001`, `19.999999999999999999999`, `1e-1000000000`, `-21`, `20.5`} {
		n := len(st.gw.recorded())
		args := json.RawMessage(`{"sku":"RB-100","quantity":` + q + `}`)
		if e := toolErr(t, ada, "update_cart", args); e["code"] != "INVALID_ARGUMENTS" {
			t.Errorf("quantity %s: %v, want INVALID_ARGUMENTS", q, e)
		}
		if got := gatewayCalls(st, n); len(got) != 0 {
			t.Errorf("quantity %s reached the gateway: %v", q, got)
		}
	}
	for _, tc := range []struct {
		q    string
		want int
	}{{`1e1`, 10}, {`1E1`, 10}, {`0.5e1`, 5}, {`2.0`, 2}, {`200e-2`, 2}, {`2e0`, 2}, {`12`, 12}, {`1.2e1`, 12}, {`-0`, 0}, {`0.0`, 0}, {`-0.0`, 0}} {
		st.gw.mu.Lock()
		st.gw.carts["u-1001"]["RB-100"] = 7
		st.gw.mu.Unlock()
		n := len(st.gw.recorded())
		ok(t, ada, "update_cart", json.RawMessage(`{"sku":"RB-100","quantity":`+tc.q+`}`))
		want := `POST /api/cart? {"quantity":` + strings.TrimSpace(jsonInt(tc.want)) + `,"sku":"RB-100"}`
		if got := gatewayCalls(st, n); len(got) != 1 || got[0] != want {
			t.Errorf("quantity %s: gateway asked %v, want %s", tc.q, got, want)
		}
		if q := st.gw.quantity("u-1001", "RB-100"); q != tc.want {
			t.Errorf("quantity %s: the cart holds %d, want %d", tc.q, q, tc.want)
		}
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestReview25DryRunFailsSafe: a client's dry run of update_cart reaches
// no gateway write whatever truthy spelling it uses ("true", 1) or the
// key's letter case; false, or a key that is not the library's, runs the
// write. Each dry run is audited with dry_run true and no write-ahead
// intent record.
func TestReview25DryRunFailsSafe(t *testing.T) {
	path := t.TempDir() + "/audit.jsonl"
	st := newStack(t, func(c *config) { c.rate = 1000; c.auditPath = path }, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for i, tc := range []struct {
		meta  mcp.Meta
		write bool
	}{
		{mcp.Meta{dryrun.MetaKey: true}, false},
		{mcp.Meta{dryrun.MetaKey: "true"}, false},
		{mcp.Meta{dryrun.MetaKey: 1}, false},
		{mcp.Meta{strings.ToLower(dryrun.MetaKey): true}, false},
		{mcp.Meta{dryrun.MetaKey: false}, true},
		{mcp.Meta{"dryRun": true}, true},
	} {
		n := len(st.gw.recorded())
		res, we := callRaw(t, ada, &mcp.CallToolParams{Name: "update_cart", Arguments: map[string]any{"sku": "RB-100", "quantity": i + 1}, Meta: tc.meta})
		if we != nil {
			t.Fatalf("%v: %v", tc.meta, we)
		}
		if got := len(gatewayCalls(st, n)); (got == 1) != tc.write || got > 1 {
			t.Errorf("_meta %v: %d gateway writes, want write=%v", tc.meta, got, tc.write)
		}
		if !tc.write && !strings.Contains(mustJSON(t, res.StructuredContent), `"dry_run":true`) {
			t.Errorf("_meta %v: %s, want the dry-run preview", tc.meta, mustJSON(t, res.StructuredContent))
		}
	}
	st.stop()
	var dry, intents int
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		var ev struct {
			Phase  string
			DryRun bool `json:"dry_run"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.DryRun {
			dry++
			if ev.Phase != "outcome" {
				t.Errorf("a dry run has a %s record: %s", ev.Phase, line)
			}
		}
		if ev.Phase == "intent" {
			intents++
		}
	}
	if dry != 4 || intents != 2 {
		t.Errorf("%d dry-run records and %d intent records, want 4 and 2", dry, intents)
	}
}

// TestReview25EveryCallDecisionAudited: each tools/call decision has its
// audit record, whoever decided it: a session the gateway refused, a
// revoked one, the per-user rate, the per-session request cap (the shop's
// session check) and a write whose 2xx answer was malformed (an intent
// and an outcome, INVALID_RESPONSE, not retryable: the change may have
// been made).
func TestReview25EveryCallDecisionAudited(t *testing.T) {
	path := t.TempDir() + "/audit.jsonl"
	st := newStack(t, func(c *config) { c.auditPath = path; c.rate = 2 }, nil)
	ada := connect(t, st, sessionCustomer, nil)
	st.gw.fail("POST", "/api/cart", 200, `not json`, 1)
	if e := toolErr(t, ada, "update_cart", map[string]any{"sku": "RB-100", "quantity": 2}); e["code"] != "INVALID_RESPONSE" || e["retryable"] != false ||
		!strings.Contains(e["message"].(string), "may have been made") {
		t.Errorf("malformed answer to a write: %v", e)
	}
	toolErr(t, connect(t, st, "sess-nope", nil), "get_cart", map[string]any{})
	ok(t, ada, "get_cart", map[string]any{})
	toolErr(t, ada, "get_cart", map[string]any{}) // the per-user rate (2)
	toolErr(t, ada, "get_cart", map[string]any{}) // the per-user rate
	toolErr(t, ada, "get_cart", map[string]any{}) // the session's cap (4)
	st.gw.revoke(sessionCustomer2)
	toolErr(t, connect(t, st, sessionCustomer2, nil), "update_cart", map[string]any{"sku": "RB-100", "quantity": 2})
	st.stop()
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		var ev struct{ Tool, Phase, Code, Detail string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimSpace(ev.Tool+" "+ev.Phase+" "+ev.Code))
	}
	want := []string{
		"update_cart intent", "update_cart outcome INVALID_RESPONSE",
		"get_cart outcome UNAUTHENTICATED",
		"get_cart outcome", "get_cart outcome RATE_LIMIT_EXCEEDED", "get_cart outcome RATE_LIMIT_EXCEEDED", "get_cart outcome RATE_LIMIT_EXCEEDED",
		"update_cart outcome UNAUTHENTICATED",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReview25AdminUserIDSpellings: admin_get_user's user id is u- and
// ASCII digits: full-width or Arabic-Indic digits, upper case, a sign, a
// trailing space or line break are refused before the gateway is asked;
// a leading zero is sent as written (the gateway says whose id it is).
func TestReview25AdminUserIDSpellings(t *testing.T) {
	st := newStack(t, func(c *config) { c.rate = 1000 }, nil)
	grace := connect(t, st, sessionAdmin, nil)
	for _, id := range []string{"u-\uff11\uff10\uff10\uff12", "u-\u0661\u0660\u0660\u0662", "U-1002", "u-+1002", "u-1002 ", "u-1002\n", "u-1e3", "u-1002/disable"} {
		n := len(st.gw.recorded())
		if e := toolErr(t, grace, "admin_get_user", map[string]any{"userId": id}); e["code"] != "INVALID_ARGUMENTS" {
			t.Errorf("userId %q: %v, want INVALID_ARGUMENTS", id, e)
		}
		if got := gatewayCalls(st, n); len(got) != 0 {
			t.Errorf("userId %q reached the gateway: %v", id, got)
		}
	}
	n := len(st.gw.recorded())
	if e := toolErr(t, grace, "admin_get_user", map[string]any{"userId": "u-01002"}); e["code"] != "not_found" {
		t.Errorf("userId u-01002: %v, want the gateway's not_found", e)
	}
	if got := gatewayCalls(st, n); len(got) != 1 || got[0] != "GET /api/admin/users/u-01002?" {
		t.Errorf("userId u-01002: gateway asked %v", got)
	}
}

// TestReview25ConcurrentCartUpdates: concurrent absolute updates of one
// cart line are each answered with a cart, none is retried, and the line
// ends at one of the quantities asked for (the last write wins; nothing
// adds up).
func TestReview25ConcurrentCartUpdates(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	// Connections dialed for the burst and never used would hold each
	// server's shutdown for its 5 s grace of new connections.
	t.Cleanup(func() {
		st.shop.gw.hc.CloseIdleConnections()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	n := len(st.gw.recorded())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, we := callRaw(t, ada, &mcp.CallToolParams{Name: "update_cart", Arguments: map[string]any{"sku": "RB-100", "quantity": i + 1}})
			if we != nil || res.IsError {
				t.Errorf("update_cart %d: %v %s", i+1, we, mustJSON(t, res))
			}
		}()
	}
	wg.Wait()
	if got := len(gatewayCalls(st, n)); got != 8 {
		t.Errorf("%d gateway writes, want 8 (one each, none retried)", got)
	}
	if q := st.gw.quantity("u-1001", "RB-100"); q < 1 || q > 8 {
		t.Errorf("RB-100 x %d after concurrent updates of 1 to 8", q)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// TestReview14SessionRequestsCapped: the per-user rate (60 calls a minute;
// 3 here) protects the one gateway that sees every MCP user from one
// address, but it counts only calls the guard admits: a tools/list, a call
// with bad arguments or a call of a hidden tool is refused before the
// limit step, yet each sends its session check (GET /api/auth/me) to the
// gateway. A signed-in shopper could send hundreds a minute. Each
// session's requests of any kind are now capped at twice the rate (6
// here) before the check leaves: the rest are RATE_LIMIT_EXCEEDED with the
// wait, and never reach the gateway. Another session keeps its own budget.
func TestReview14SessionRequestsCapped(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := newStack(t, func(c *config) { c.rate, c.now = 3, func() time.Time { return now } }, nil)
	bo := connect(t, st, sessionCustomer2, nil)
	before := st.gw.count("GET", "/api/auth/me")
	for range 10 {
		_, _ = bo.ListTools(context.Background(), nil)
	}
	for range 10 {
		call(t, bo, "update_cart", json.RawMessage(`{"sku":"RB-100","quantity":"2"}`))
	}
	for range 10 {
		_, _ = callRaw(t, bo, &mcp.CallToolParams{Name: "admin_list_users", Arguments: map[string]any{}})
	}
	if n := st.gw.count("GET", "/api/auth/me") - before; n > 6 {
		t.Errorf("30 refused requests of one session sent %d session checks to the gateway, want at most 6 (twice the rate)", n)
	}
	before = st.gw.count("GET", "/api/auth/me")
	e := toolErr(t, bo, "list_categories", map[string]any{})
	wait, _ := e["retry_after_seconds"].(float64)
	if e["code"] != "RATE_LIMIT_EXCEEDED" || e["retryable"] != true || wait <= 0 || wait > 10 {
		t.Errorf("a call past the session's request cap: %v, want RATE_LIMIT_EXCEEDED, retry within 10 s", e)
	}
	if _, err := bo.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "too many requests") {
		t.Errorf("tools/list past the session's request cap: %v, want refused", err)
	}
	if n := st.gw.count("GET", "/api/auth/me") - before; n != 0 {
		t.Errorf("refused requests sent %d session checks to the gateway", n)
	}
	ok(t, connect(t, st, sessionCustomer, nil), "list_categories", map[string]any{}) // ada is not bo
	now = now.Add(10 * time.Second)                                                  // one request's worth refilled
	ok(t, bo, "list_categories", map[string]any{})
}

// TestReview14SessionRequestsSharedOnRedis: with --redis the session's
// request cap, like the per-user rate, holds over every replica.
func TestReview14SessionRequestsSharedOnRedis(t *testing.T) {
	rd := testsvc.StartRedis(t)
	mod := onRedis(rd.Addr, func(c *config) { c.rate = 2 })
	a, b := newStack(t, mod, nil), newStack(t, mod, nil)
	boA, boB := connect(t, a, sessionCustomer2, nil), connect(t, b, sessionCustomer2, nil)
	for _, cs := range []*mcp.ClientSession{boA, boB, boA, boB} {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatalf("tools/list within the cap: %v", err)
		}
	}
	checks := a.gw.count("GET", "/api/auth/me") + b.gw.count("GET", "/api/auth/me")
	for name, cs := range map[string]*mcp.ClientSession{"a": boA, "b": boB} {
		if _, err := cs.ListTools(context.Background(), nil); err == nil {
			t.Errorf("bo's fifth request, on replica %s: allowed, want refused (4 a minute over both replicas)", name)
		}
	}
	if n := a.gw.count("GET", "/api/auth/me") + b.gw.count("GET", "/api/auth/me"); n != checks {
		t.Errorf("requests past the shared cap sent %d session checks", n-checks)
	}
	// The sessions are keys by their hash only: Redis never holds one.
	rdb := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, sessionCheck) }) {
		t.Errorf("no session-check key on Redis: %q", keys)
	}
	for _, k := range keys {
		if strings.Contains(k, "sess-") {
			t.Errorf("a Redis key holds a session: %q", k)
		}
	}
}

// TestReview14ConfirmKeyNeedsSharedNonces: the seed's limitation "the
// nonce store is per process and lost on restart" was lifted only with
// --redis. With SHOP_MCP_CONFIRM_KEY set and no --redis, two processes
// (replicas, or one restarted within the two minutes) verify each other's
// states but keep their own nonces, so a confirmation used on one was
// accepted again on the other: the write ran twice. The key without
// --redis is now refused at start (a usage error of the binary); with no
// key each process has a random one and refuses the other's states.
func TestReview14ConfirmKeyNeedsSharedNonces(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	cfg := defaultConfig()
	cfg.adminWrites, cfg.confirmKey = true, key
	_, gwURL := startGateway(t)
	cfg.gateway = gwURL
	if s, err := newShop(cfg, io.Discard, nil); err == nil {
		s.Close()
		// It started: then at least no confirmation may run twice.
		mod := func(c *config) { c.adminWrites, c.confirmKey = true, key }
		a, b := newStack(t, mod, nil), newStack(t, mod, nil)
		args := `{"sku":"RB-100","price":99.5}`
		state := firstRound(t, a, connect(t, a, sessionAdmin, noMRTR()), "admin_set_price", args)
		p := &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()}
		callRaw(t, connect(t, a, sessionAdmin, noMRTR()), p)
		callRaw(t, connect(t, b, sessionAdmin, noMRTR()), p)
		if n := a.gw.count("PUT", "/api/admin/products/RB-100/price") + b.gw.count("PUT", "/api/admin/products/RB-100/price"); n != 1 {
			t.Errorf("one confirmation ran the write %d times on two processes sharing %s without --redis", n, confirmKeyEnv)
		}
	} else if !strings.Contains(err.Error(), "--redis") {
		t.Errorf("refused to start with %v; want the message to name --redis", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--gateway", gwURL, "--transport", "http", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), confirmKeyEnv+"="+strings.Repeat("ab", 32))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out.String(), confirmKeyEnv) || !strings.Contains(out.String(), "--redis") {
		t.Errorf("%s without --redis: %v, output %q; want exit status 2 naming both", confirmKeyEnv, err, out.String())
	}
}

// TestReview14InvisibleCatalogueTextRemoved: the seed's catalogue text
// reaches the model unmodified, and the seed says the server cannot
// neutralise it. Visible text it cannot judge; but text a person reviewing
// the catalogue cannot see (terminal escapes, bidi overrides, zero-width
// characters, Unicode tag characters that spell hidden ASCII instructions,
// the supplementary variation selectors that can hide bytes) reached the
// model too. It is now removed from every string of a gateway answer;
// visible text, tabs and newlines are kept.
func TestReview14InvisibleCatalogueTextRemoved(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	// "\udb40\udc49\udb40\udc47\udb40\udc4e" is U+E0049 U+E0047 U+E004E: tag letters
	// "IGN"; "\udb40\udd00" is U+E0100, a supplementary variation selector.
	hidden := `\u001b\u009b\u202e\u200b\u2060\ufeff\u00ad\udb40\udc49\udb40\udc47\udb40\udc4e\udb40\udd00\u0085\u007f\r`
	body := `{"sku":"RB-100","name":"Robo` + hidden + ` Vacuum","description":"Quiet.` + hidden + `\nMaps two rooms;\tsmall flats. Für Anfänger 🤖.",` +
		`"price":1,"currency":"EUR` + hidden + `","category":"home","stock":1,"source":"catalogue` + hidden + `"}`
	st.gw.fail("GET", "/api/products/RB-100", 200, body, 1)
	got := ok(t, ada, "get_product", map[string]any{"sku": "RB-100"})
	want := map[string]any{"sku": "RB-100", "name": "Robo Vacuum", "description": "Quiet.\nMaps two rooms;\tsmall flats. Für Anfänger 🤖.",
		"price": float64(1), "currency": "EUR", "category": "home", "inStock": float64(1), "source": "catalogue"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get_product with invisible characters in the catalogue (-want +got):\n%s", diff)
	}
}

// TestReview14GatewayAnswerStrict: two malformed 2xx answers passed the
// output validation. A number beyond float64 (1e400) was passed on as it
// came, and no client can read it: the go-sdk client failed the whole
// call ("cannot unmarshal 1e400"), a JavaScript one reads Infinity. And an
// object with a key twice ("available": 5, then 0) was projected with the
// last value, while another reader of the same answer takes the first: a
// well-formed gateway never sends one, an answer built by pasting text
// into JSON does. Both are now INVALID_RESPONSE, as any malformed answer.
func TestReview14GatewayAnswerStrict(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct{ name, body string }{
		{"number_beyond_float64", `{"sku":"RB-100","available":1e400}`},
		{"negative_beyond_float64", `{"sku":"RB-100","available":-1e400}`},
		{"duplicate_key", `{"sku":"RB-100","available":5,"available":0}`},
		{"duplicate_nested_key", `{"sku":"RB-100","available":5,"x":{"a":1,"a":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.gw.fail("GET", "/api/products/RB-100/stock", 200, tc.body, 1)
			res, we := callRaw(t, ada, &mcp.CallToolParams{Name: "check_stock", Arguments: map[string]any{"sku": "RB-100"}})
			if we != nil {
				t.Fatalf("check_stock: %v", we)
			}
			e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any)
			if !res.IsError || e["code"] != "INVALID_RESPONSE" {
				t.Errorf("gateway answer %s: %s, want INVALID_RESPONSE", tc.body, mustJSON(t, res.StructuredContent))
			}
		})
	}
	// Large numbers that fit, and the same key in two objects, are fine.
	st.gw.fail("GET", "/api/products/RB-100/stock", 200, `{"sku":"RB-100","available":12345678901234567890,"x":{"sku":1}}`, 1)
	ok(t, ada, "check_stock", map[string]any{"sku": "RB-100"})
}

// TestReview14HTTPCancelStopsReadNotWrite: the seed's reads end when the
// client gives up, and its writes are shielded from cancellation. Over
// stateless HTTP the go-sdk server never told the handler (the README
// listed it as a deviation): a read the client abandoned still ran to its
// 10 s. The HTTP handler now ties a call's context to its request on
// 2026-07-28 (go-sdk's PropagateRequestCancellation), so an abandoned read
// stops, and a write, which the guard detaches from cancellation, runs to
// completion.
func TestReview14HTTPCancelStopsReadNotWrite(t *testing.T) {
	// A minute per call, so that a read ended by its deadline is told
	// apart from one ended by the client.
	st := newStack(t, func(c *config) { c.timeout = time.Minute }, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct {
		tool, method, path string
		args               map[string]any
		wantCancelled      bool
	}{
		{"get_cart", "GET", "/api/cart", map[string]any{}, true},
		{"update_cart", "POST", "/api/cart", map[string]any{"sku": "RB-500", "quantity": 3}, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			h := st.gw.hold(tc.method, tc.path)
			defer st.gw.unhold(tc.method, tc.path)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := ada.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				errc <- err
			}()
			recv(t, h.arrived, "the gateway request")
			cancel()
			if err := recv(t, errc, "the client call"); !errors.Is(err, context.Canceled) {
				t.Fatalf("client call: %v, want context.Canceled", err)
			}
			if !tc.wantCancelled {
				close(h.release)
			}
			select {
			case cancelled := <-h.done:
				if cancelled != tc.wantCancelled {
					t.Errorf("%s abandoned over HTTP: gateway request cancelled = %v, want %v", tc.tool, cancelled, tc.wantCancelled)
				}
			case <-time.After(15 * time.Second):
				close(h.release)
				t.Errorf("%s abandoned over HTTP: its gateway request still runs 15 s later", tc.tool)
				<-h.done
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.gw.quantity("u-1001", "RB-500") != 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if q := st.gw.quantity("u-1001", "RB-500"); q != 3 {
		t.Errorf("the write the client abandoned did not complete: quantity %d, want 3", q)
	}
}

// TestReview14UniqueKeys: keys are compared per object, once unescaped.
func TestReview14UniqueKeys(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{}`, true},
		{`[{"a":1},{"a":2}]`, true},
		{`{"a":{"a":{"a":[]}},"b":[{"a":1,"b":2}],"c":"a"}`, true},
		{`{"a":[1,{"b":{}}],"b":{"a":1}}`, true},
		{`{"a":"x","b":"a"}`, true},
		{`"a"`, true},
		{`{"a":1,"a":1}`, false},
		{`{"a":1,"\u0061":2}`, false},
		{`{"a":[{"b":1,"c":{},"b":2}]}`, false},
		{`{"a":{},"b":[],"a":null}`, false},
	} {
		if got := !duplicateKey([]byte(tc.body)); got != tc.want {
			t.Errorf("!duplicateKey(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

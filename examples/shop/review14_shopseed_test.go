package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The seed's behaviours that no earlier test showed at their own values or
// at all, one test each.

// TestReview14SeedRateKeyedByUser: the per-user limit exists because every
// MCP user reaches the gateway from one address; it is keyed by the user
// the gateway names, so a user's second session shares the first's budget.
func TestReview14SeedRateKeyedByUser(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := newStack(t, func(c *config) { c.rate, c.now = 3, func() time.Time { return now } }, nil)
	st.gw.mu.Lock()
	st.gw.sessions["sess-customer-ada-phone"] = "u-1001"
	st.gw.mu.Unlock()
	laptop, phone := connect(t, st, sessionCustomer, nil), connect(t, st, "sess-customer-ada-phone", nil)
	ok(t, laptop, "get_cart", map[string]any{})
	ok(t, phone, "get_cart", map[string]any{})
	ok(t, laptop, "get_cart", map[string]any{})
	if e := toolErr(t, phone, "get_cart", map[string]any{}); e["code"] != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("ada's fourth call, from her second session: %v, want RATE_LIMIT_EXCEEDED", e)
	}
}

// TestReview14SeedDefaultRate: the defaults are the seed's: 60 calls a
// minute per user; the 61st waits one second (a minute / 60).
func TestReview14SeedDefaultRate(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := newStack(t, func(c *config) { c.now = func() time.Time { return now } }, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for i := range 60 {
		if res := call(t, ada, "list_categories", map[string]any{}); res.IsError {
			t.Fatalf("call %d of 60: %s", i+1, mustJSON(t, res.StructuredContent))
		}
	}
	e := toolErr(t, ada, "list_categories", map[string]any{})
	if e["code"] != "RATE_LIMIT_EXCEEDED" || e["retry_after_seconds"] != float64(1) {
		t.Errorf("61st call in a minute: %v, want RATE_LIMIT_EXCEEDED, retry after 1 s", e)
	}
}

// TestReview14SeedDefaultInFlight: at the default settings, 32 calls in
// flight across the process; the 33rd is refused and reaches nothing.
func TestReview14SeedDefaultInFlight(t *testing.T) {
	st := newStack(t, nil, nil)
	h := st.gw.hold("GET", "/api/cart")
	sessions := []string{sessionCustomer, sessionCustomer2, sessionAdmin, sessionSuper}
	errc := make(chan error, 32)
	for i := range 32 {
		cs := connect(t, st, sessions[i%len(sessions)], nil)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_cart", Arguments: map[string]any{}})
			if err == nil && res.IsError {
				err = errors.New("error result")
			}
			errc <- err
		}()
	}
	for range 32 {
		recv(t, h.arrived, "a held call")
	}
	before := len(st.gw.recorded())
	e := toolErr(t, connect(t, st, sessionCustomer, nil), "list_categories", map[string]any{})
	if e["code"] != "CONCURRENCY_LIMIT_EXCEEDED" {
		t.Errorf("33rd call in flight: %v, want CONCURRENCY_LIMIT_EXCEEDED", e)
	}
	if n := len(st.gw.recorded()) - before; n != 0 {
		t.Errorf("33rd call in flight: %d gateway requests, want none", n)
	}
	close(h.release)
	for range 32 {
		if err := recv(t, errc, "a held call"); err != nil {
			t.Errorf("held call: %v", err)
		}
	}
}

// TestReview14SeedCartAbsolute: update_cart sets an absolute quantity, so
// repeating a call has no further effect, and 0 removes the item.
func TestReview14SeedCartAbsolute(t *testing.T) {
	st := newStack(t, nil, nil)
	bo := connect(t, st, sessionCustomer2, nil)
	for range 3 {
		ok(t, bo, "update_cart", map[string]any{"sku": "RB-500", "quantity": 2})
	}
	if q := st.gw.quantity("u-1002", "RB-500"); q != 2 {
		t.Errorf("three identical updates: quantity %d, want 2", q)
	}
	cart := ok(t, bo, "update_cart", map[string]any{"sku": "RB-500", "quantity": 0})
	want := map[string]any{"items": []any{}, "total": float64(0), "paymentPending": false}
	if diff := cmp.Diff(want, cart); diff != "" {
		t.Errorf("quantity 0 (-want +got):\n%s", diff)
	}
}

// TestReview14SeedSessionCheckRetry: the session check is retried once on
// a transient failure; the call then runs.
func TestReview14SeedSessionCheckRetry(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	st.gw.fail("GET", "/api/auth/me", 503, `{}`, 1)
	before := st.gw.count("GET", "/api/auth/me")
	ok(t, ada, "get_cart", map[string]any{})
	if n := st.gw.count("GET", "/api/auth/me") - before; n != 2 {
		t.Errorf("session check after one 503: %d requests, want 2", n)
	}
}

// TestReview14SeedSessionCheckDeadline: the session check has 3 s, its
// retry included (a real 3 s: the check runs outside the guard's clock).
func TestReview14SeedSessionCheckDeadline(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	h := st.gw.hold("GET", "/api/auth/me")
	defer st.gw.unhold("GET", "/api/auth/me")
	start := time.Now()
	done := make(chan map[string]any, 1)
	go func() { done <- toolErr(t, ada, "get_cart", map[string]any{}) }()
	recv(t, h.arrived, "the session check")
	e := recv(t, done, "the call")
	took := time.Since(start)
	if e["code"] != "UPSTREAM_UNAVAILABLE" || e["retryable"] != true {
		t.Errorf("session check past its deadline: %v, want UPSTREAM_UNAVAILABLE, retryable", e)
	}
	if took < authDeadline || took > authDeadline+5*time.Second {
		t.Errorf("the call ended after %v, want about %v", took, authDeadline)
	}
	if !recv(t, h.done, "the held check to end") {
		t.Error("the session check was not cancelled at its deadline")
	}
	if n := st.gw.count("GET", "/api/cart"); n != 0 {
		t.Errorf("an unchecked call reached the gateway %d times", n)
	}
}

// TestReview14SeedGatewayChecksAgain: the session is checked at the MCP
// server and again at the gateway: a session the gateway refuses after the
// check passed is a tool error, without the gateway's message.
func TestReview14SeedGatewayChecksAgain(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	st.gw.fail("GET", "/api/cart", 401, mustJSON(t, errBody("session sess-customer-ada expired")), 1)
	e := toolErr(t, ada, "get_cart", map[string]any{})
	want := map[string]any{"code": "unauthenticated", "message": "The RoboShop session is no longer valid; sign in again.",
		"retryable": false, "correlationId": e["correlationId"]}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("gateway 401 after the check (-want +got):\n%s", diff)
	}
}

// recorder records the requests a client sends and the responses it gets.
type recorder struct {
	mu    sync.Mutex
	reqs  []http.Header
	resps []http.Header
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req.Header.Clone())
	if err == nil {
		r.resps = append(r.resps, resp.Header.Clone())
	}
	return resp, err
}

// TestReview14SeedHTTPStatelessJSON: over HTTP the default client
// negotiates 2026-07-28, every answer is one JSON document (no event
// stream), and there is no protocol session.
func TestReview14SeedHTTPStatelessJSON(t *testing.T) {
	st := newStack(t, nil, nil)
	rec := &recorder{}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: st.mcpURL, HTTPClient: httpClient(bearer{sessionCustomer, rec})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	toolNames(t, cs)
	ok(t, cs, "get_cart", map[string]any{})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var versions []string
	for _, h := range rec.reqs {
		versions = append(versions, h.Get("Mcp-Protocol-Version"))
	}
	if len(versions) < 2 || slices.ContainsFunc(versions, func(v string) bool { return v != "2026-07-28" }) {
		t.Errorf("the client sent protocol versions %q, want 2026-07-28 on every request", versions)
	}
	for _, h := range rec.resps {
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("response Content-Type %q, want application/json", ct)
		}
		if id := h.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("stateless server gave a session id %q", id)
		}
	}
}

// TestReview14SeedTransportFromEnv: MCP_TRANSPORT selects the transport and
// SHOP_GATEWAY_URL the gateway; admin writes are registered for
// MCP_ENABLE_ADMIN_WRITES=true only, not for other spellings.
func TestReview14SeedTransportFromEnv(t *testing.T) {
	gw, gwURL := startGateway(t)
	for _, tc := range []struct {
		writes string
		tools  int
	}{{"TRUE", 12}, {"1", 12}, {"true", 15}} {
		cmd := exec.Command(bin, "--addr", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "MCP_TRANSPORT=http", "SHOP_GATEWAY_URL="+gwURL, adminWritesEnv+"="+tc.writes)
		pr, pw := io.Pipe()
		cmd.Stderr = pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		urls := make(chan string, 1)
		go func() {
			re := regexp.MustCompile(`url=(http://\S+/mcp)`)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					urls <- m[1]
				}
			}
		}()
		st := &stack{mcpURL: recv(t, urls, "the server's URL"), gw: gw}
		if n := len(toolNames(t, connect(t, st, sessionSuper, nil))); n != tc.tools {
			t.Errorf("%s=%s: the super admin sees %d tools, want %d", adminWritesEnv, tc.writes, n, tc.tools)
		}
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("shop exited: %v", err)
		}
		pw.Close()
	}
}

// TestReview14SeedCustomerCapability: a customer's only state change is
// the quantities of their own cart: of the tools a customer sees, one is a
// write, update_cart, and it names no user.
func TestReview14SeedCustomerCapability(t *testing.T) {
	var writes []string
	for _, s := range toolSpecs(true) {
		if slices.Equal(s.roles, customerRoles()) && s.write {
			writes = append(writes, s.name)
			if _, has := s.input["userId"]; has {
				t.Errorf("%s takes a user id", s.name)
			}
		}
	}
	if diff := cmp.Diff([]string{"update_cart"}, writes); diff != "" {
		t.Errorf("customer writes (-want +got):\n%s", diff)
	}
}

// TestReview14SpoofedSessions: the session is the one bearer token of the
// request and nothing else: two Authorization headers, another scheme, a
// token that would add a cookie, or a session in a Cookie header are
// refused as unauthenticated, and the gateway is asked nothing; a hidden
// tool and an unknown one are answered alike to such a caller.
func TestReview14SpoofedSessions(t *testing.T) {
	st := newStack(t, nil, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_cart","arguments":{}}}`
	for _, tc := range []struct {
		name string
		auth []string
		more map[string]string
	}{
		{"two_bearers", []string{"Bearer sess-customer-bo", "Bearer sess-customer-ada"}, nil},
		{"basic", []string{"Basic c2Vzcy1jdXN0b21lci1hZGE6"}, nil},
		{"cookie_in_token", []string{"Bearer sess-customer-bo;rs_auth=sess-customer-ada"}, nil},
		{"comma_in_token", []string{"Bearer sess-customer-bo,sess-customer-ada"}, nil},
		{"cookie_header_only", nil, map[string]string{"Cookie": "rs_auth=" + sessionCustomer}},
		{"forwarded_user", nil, map[string]string{"X-Forwarded-User": "u-1001", "X-Mcpguard-Subject": "u-1001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(st.gw.recorded())
			req, err := http.NewRequest("POST", st.mcpURL, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			for _, a := range tc.auth {
				req.Header.Add("Authorization", a)
			}
			for k, v := range tc.more {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), `"code":"UNAUTHENTICATED"`) {
				t.Errorf("answer %s, want UNAUTHENTICATED", b)
			}
			if n := len(st.gw.recorded()) - before; n != 0 {
				t.Errorf("%d gateway requests", n)
			}
		})
	}
	anon := connect(t, st, "sess-made-up", nil)
	hidden, _ := callRaw(t, anon, &mcp.CallToolParams{Name: "admin_list_users", Arguments: map[string]any{}})
	unknown, _ := callRaw(t, anon, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	h, u := toMap(t, hidden.StructuredContent)["error"].(map[string]any), toMap(t, unknown.StructuredContent)["error"].(map[string]any)
	delete(h, "correlation_id")
	delete(u, "correlation_id")
	if diff := cmp.Diff(u, h); diff != "" {
		t.Errorf("unauthenticated: hidden tool vs unknown tool (-unknown +hidden):\n%s", diff)
	}
}

// TestReview14StdioSessionNotLent: a stdio server's launching session is
// never lent to a request that came over HTTP (in-process wiring that
// mixed the two): such a request is refused before the gateway is asked.
func TestReview14StdioSessionNotLent(t *testing.T) {
	gw, gwURL := startGateway(t)
	c, err := newGatewayClient(gwURL, "")
	if err != nil {
		t.Fatal(err)
	}
	a := &sessionAuth{gw: c, stdio: true, launch: sessionSuper}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get_cart"}, Extra: &mcp.RequestExtra{Header: http.Header{}}}
	_, err = a.Authenticate(context.Background(), req)
	var d *mcpguard.DenialError
	if !errors.As(err, &d) || d.Code != mcpguard.CodeUnauthenticated {
		t.Errorf("stdio session for an HTTP request: %v, want UNAUTHENTICATED", err)
	}
	if n := len(gw.recorded()); n != 0 {
		t.Errorf("%d gateway requests", n)
	}
	if _, err := a.Authenticate(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get_cart"}}); err != nil {
		t.Errorf("stdio request: %v", err)
	}
}

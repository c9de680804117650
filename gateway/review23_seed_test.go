package gateway

// Items of shared/seeds/refund-mcp-server-and-gateway.txt (Task 2) that had
// no test of their own, or only an adjacent one.

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seedRig is a gateway with the token table tokens (MCP_GATEWAY_TOKENS
// syntax) and the policy built from cfg, in front of the recording
// downstream of rig_test.go.
func seedRig(t *testing.T, tokens string, cfg policy.Config) *rig {
	t.Helper()
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := ParseTokens([]byte(tokens))
	if err != nil {
		t.Fatal(err)
	}
	d := &downstream{}
	dsrv := newServer(t, d)
	g, err := New(dsrv.URL+"/mcp", ts, &Options{Policy: pol, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	return &rig{url: gw.URL, gw: gw, down: d, dsrv: dsrv}
}

// denialMessage returns the error message of a JSON-RPC error response.
func denialMessage(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`"message":"((?:[^"\\]|\\.)*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no error message in %s", body)
	}
	return m[1]
}

// TestReview23SeedRoleRuleIsData: design point 1, "adding finance_* ->
// {finance, admin} is a data change, not a code change": one more row of
// DefaultPolicyConfig guards the finance tools, the refusal names the roles
// as the seed's does, and a refused call never reaches the downstream.
func TestReview23SeedRoleRuleIsData(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: "finance_*", Roles: []string{"finance", "admin"}})
	rg := seedRig(t, `{"tok-v":"viewer","tok-f":{"sub":"fin","role":"finance"},"tok-a":{"sub":"root","role":"admin"}}`, cfg)
	tests := []struct {
		name, auth, tool string
		status           int
		message, role    string
		roles            []any
	}{
		{"viewer_finance_tool", "Bearer tok-v", "finance_payout", http.StatusForbidden,
			"Unauthorized Tool Call: tool 'finance_payout' requires role finance or admin, caller has role 'viewer'.",
			"viewer", []any{"finance", "admin"}},
		{"finance_finance_tool", "Bearer tok-f", "finance_payout", http.StatusOK, "", "", nil},
		{"admin_finance_tool", "Bearer tok-a", "finance_payout", http.StatusOK, "", "", nil},
		{"finance_admin_tool", "Bearer tok-f", "admin_reset_key", http.StatusForbidden,
			"Unauthorized Tool Call: tool 'admin_reset_key' requires role admin, caller has role 'finance'.",
			"finance", []any{"admin"}},
		{"viewer_plain_tool", "Bearer tok-v", "get_customer_record", http.StatusOK, "", "", nil},
	}
	var allowed []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := call(`1`, tt.tool, `{}`)
			got := rg.post(t, tt.auth, body)
			if got.status != tt.status {
				t.Fatalf("%s as %s: status %d, want %d: %s", tt.tool, tt.auth, got.status, tt.status, got.body)
			}
			if tt.status == http.StatusOK {
				allowed = append(allowed, body)
				return
			}
			if msg := denialMessage(t, got.body); msg != tt.message {
				t.Errorf("message = %q, want %q", msg, tt.message)
			}
			// The seed's data: tool, required_roles, role.
			_, code, data := rpcErr(t, got.body)
			want := map[string]any{"tool": tt.tool, "required_roles": tt.roles, "role": tt.role}
			for k, v := range want {
				if !cmp.Equal(v, data[k]) {
					t.Errorf("code %d, data.%s = %v, want %v", code, k, data[k], v)
				}
			}
		})
	}
	if diff := cmp.Diff(allowed, rg.down.bodies()); diff != "" {
		t.Errorf("downstream bodies (-want +got):\n%s", diff)
	}
}

// TestReview23SeedDenialNamesEveryRequiredRole: when two role rules match
// one tool, the caller needs a role of each (policy.RoleRule), and the
// refusal says so. It said "requires role admin or security, caller has
// role 'admin'", a requirement the caller met, and its data listed the
// roles as one set any of which would do.
func TestReview23SeedDenialNamesEveryRequiredRole(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.RoleRules = append(cfg.RoleRules,
		policy.RoleRule{Pattern: "admin_keys_*", Roles: []string{"security"}},
		policy.RoleRule{Pattern: "admin_keys_rotate", Roles: []string{"keys", "oncall"}})
	rg := seedRig(t, `{"tok-a":{"sub":"root","role":"admin"},"tok-s":{"sub":"sec","role":"security"},`+
		`"tok-as":{"sub":"both","roles":["admin","security"]},"tok-ask":{"sub":"all","roles":["admin","security","oncall"]}}`, cfg)
	const want = "Unauthorized Tool Call: tool 'admin_keys_rotate' requires role keys or oncall and role admin and role security"
	for _, tt := range []struct {
		name, auth, has string
	}{
		{"admin_only", "Bearer tok-a", "admin"},
		{"security_only", "Bearer tok-s", "security"},
		{"admin_and_security", "Bearer tok-as", "admin,security"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := rg.post(t, tt.auth, call(`1`, "admin_keys_rotate", `{}`))
			if got.status != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", got.status, got.body)
			}
			if msg, w := denialMessage(t, got.body), want+", caller has role '"+tt.has+"'."; msg != w {
				t.Errorf("message = %q, want %q", msg, w)
			}
			_, _, data := rpcErr(t, got.body)
			sets := []any{[]any{"keys", "oncall"}, []any{"admin"}, []any{"security"}}
			if diff := cmp.Diff(sets, data["required_role_sets"]); diff != "" {
				t.Errorf("data.required_role_sets (-want +got):\n%s", diff)
			}
			if r, ok := data["required_roles"]; ok {
				t.Errorf("data.required_roles = %v: one set, any role of which would do, for three that must all be met", r)
			}
		})
	}
	if got := rg.post(t, "Bearer tok-ask", call(`2`, "admin_keys_rotate", `{}`)); got.status != http.StatusOK {
		t.Errorf("caller with a role of every set: status %d: %s", got.status, got.body)
	}
	if n := len(rg.down.bodies()); n != 1 {
		t.Errorf("downstream received %d calls, want 1", n)
	}

	// A set that another one implies is not named: admin_audit needs admin
	// (admin_*) and admin or ops (its own rule), that is admin.
	cfg = DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "admin_audit", Class: policy.Read, Roles: []string{"admin", "ops"}}}
	rg = seedRig(t, `{"tok-o":{"sub":"op","role":"ops"}}`, cfg)
	got := rg.post(t, "Bearer tok-o", call(`3`, "admin_audit", `{}`))
	if msg, w := denialMessage(t, got.body), "Unauthorized Tool Call: tool 'admin_audit' requires role admin, caller has role 'ops'."; got.status != http.StatusForbidden || msg != w {
		t.Errorf("ops calling admin_audit: %d %q, want 403 %q", got.status, msg, w)
	}
	if _, _, data := rpcErr(t, got.body); !cmp.Equal(data["required_roles"], []any{"admin"}) {
		t.Errorf("data.required_roles = %v, want [admin]", data["required_roles"])
	}
}

// TestReview23SeedDownstreamVerdictRelayed: "everything else is relayed
// verbatim from the downstream (e.g. its own -32601 for an unknown tool) -
// the gateway does not invent verdicts that aren't its to make", and design
// point 4, "the downstream's status, body and headers are relayed as-is":
// an unknown tool's error from a go-sdk server reaches the client through
// the gateway with the status and body it has when asked directly, on both
// protocol versions.
func TestReview23SeedDownstreamVerdictRelayed(t *testing.T) {
	var resets atomic.Int64
	srv := sdkServer(&resets)
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	g, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	post := func(url, version, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", version)
		if version == "2026-07-28" {
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "delete_customer")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_customer","arguments":{}}}`
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ds, dt, db := post(down.URL, version, body)
			if !strings.Contains(db, `"error"`) {
				t.Fatalf("the downstream's own answer is not an error: %d %s", ds, db)
			}
			gs, gt, gb := post(gw.URL+"/mcp", version, body)
			if diff := cmp.Diff([]any{ds, dt, db}, []any{gs, gt, gb}); diff != "" {
				t.Errorf("through the gateway (-direct +gateway):\n%s", diff)
			}
		})
	}
}

// TestReview23SeedUpstreamLogLine: design point 12, the line after the
// decision: "[cid] upstream ... -> 200 (12.3 ms, 1 forwarded, 0
// intercepted)". A forwarded request's upstream line has the decision's
// correlation id, the downstream's status and the time taken; a batch's has
// how many members were forwarded and how many intercepted.
func TestReview23SeedUpstreamLogLine(t *testing.T) {
	d := &downstream{}
	dsrv := newServer(t, d)
	var mu sync.Mutex
	var logs bytes.Buffer
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	lines := func() []string {
		mu.Lock()
		defer mu.Unlock()
		s := logs.String()
		logs.Reset()
		return strings.Split(strings.TrimSpace(s), "\n")
	}
	cidOf := regexp.MustCompile(` cid=(\S+)`)

	rg.post(t, admin, call(`1`, "admin_reset_key", `{"key_id":"KEY-PRIMARY"}`))
	got := lines()
	if len(got) != 2 || !strings.Contains(got[0], "msg=allow") || !strings.Contains(got[1], "msg=upstream") {
		t.Fatalf("log lines of one forwarded call:\n%s\nwant an allow line, then an upstream line", strings.Join(got, "\n"))
	}
	c0, c1 := cidOf.FindStringSubmatch(got[0]), cidOf.FindStringSubmatch(got[1])
	if c0 == nil || c1 == nil || c0[1] != c1[1] {
		t.Errorf("correlation ids differ or are missing:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(got[1], " status=200 ") || !regexp.MustCompile(` ms=[0-9.]+`).MatchString(got[1]) {
		t.Errorf("upstream line %q lacks status=200 or ms=", got[1])
	}

	rg.post(t, viewer, `[`+call(`1`, "get_customer_record", `{}`)+`,`+call(`2`, "admin_reset_key", `{}`)+`,{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`)
	got = lines()
	last := got[len(got)-1]
	if !strings.Contains(last, "msg=upstream") || !strings.Contains(last, " forwarded=2 ") || !strings.Contains(last, " intercepted=1 ") {
		t.Errorf("batch's last log line %q, want an upstream line with forwarded=2 intercepted=1", last)
	}
}

// TestReview23SeedAnswerRelayedAsIs: design points 4 and 6. An answer to a
// request allowed whole is relayed with the downstream's status, body and
// headers, whatever its status, less the hop-by-hop headers (RFC 9110
// §7.6.1), those its Connection header names among them.
func TestReview23SeedAnswerRelayedAsIs(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"downstream broke"}}` + "\n"
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("X-Downstream", "kept")
		h.Set("Mcp-Session-Id", "s-1")
		h.Set("Connection", "X-Hop")
		h.Set("X-Hop", "dropped")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Authenticate", "Basic")
		h.Set("Upgrade", "h2c")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, answer)
	}))
	g, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	got := rg.post(t, viewer, call(`1`, "get_customer_record", `{}`))
	if got.status != http.StatusInternalServerError || got.body != answer {
		t.Errorf("answer = %d %q, want 500 %q", got.status, got.body, answer)
	}
	want := map[string]string{"Content-Type": "application/json; charset=utf-8", "X-Downstream": "kept", "Mcp-Session-Id": "s-1",
		"X-Hop": "", "Keep-Alive": "", "Proxy-Authenticate": "", "Upgrade": ""}
	for k, v := range want {
		if g := got.header.Get(k); g != v {
			t.Errorf("header %s = %q, want %q", k, g, v)
		}
	}
}

// TestReview23SeedDecisionLogsNameThePrincipalAlike: design point 12,
// "every decision is logged ... with the principal". A deny line gave the
// roles as a list (roles=[viewer], a JSON array) and an allow line as one
// string (roles=viewer): a search or alert on the one missed the other, and
// a JSON log store met one field with two types. Every line gives them as
// the comma-separated string the downstream's role header has.
func TestReview23SeedDecisionLogsNameThePrincipalAlike(t *testing.T) {
	ts, err := ParseTokens([]byte(`{"tok-sb":{"sub":"carol","roles":["support","billing"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := &downstream{}
	dsrv := newServer(t, d)
	var mu sync.Mutex
	var logs bytes.Buffer
	g, err := New(dsrv.URL+"/mcp", ts, &Options{Logger: slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	const auth = "Bearer tok-sb"
	rg.post(t, auth, call(`1`, "get_customer_record", `{}`))                              // allow
	rg.post(t, auth, call(`2`, "admin_reset_key", `{}`))                                  // deny, one message
	rg.post(t, auth, `[`+call(`3`, "admin_reset_key", `{}`)+`,`+call(`4`, "x", `{}`)+`]`) // deny and allow in a batch
	rg.post(t, auth, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get\u0000x"}}`)
	req, _ := http.NewRequest(http.MethodGet, rg.url+"/mcp", nil)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Mcp-Session-Id", "s-1")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}

	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		roles, ok := rec["roles"]
		if !ok {
			continue
		}
		seen[rec["msg"].(string)]++
		if roles != "support,billing" {
			t.Errorf("%s line has roles %#v, want \"support,billing\": %s", rec["msg"], roles, line)
		}
	}
	if seen["allow"] < 3 || seen["deny"] < 3 {
		t.Errorf("lines with roles: %v, want at least 3 allow and 3 deny", seen)
	}
}

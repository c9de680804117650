package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57RefusedTokenReasonLogged: a gateway verifying JWTs logged a
// refused token as "invalid bearer token" only, whether it had expired, was
// for another audience or named an unknown key: an operator could not tell
// a configuration mistake (a wrong --jwt-audience) from a stale token. The
// deny line now gives the token package's reason ("why"), never the token;
// the client is still told "invalid bearer token" alone.
func TestReview57RefusedTokenReasonLogged(t *testing.T) {
	idp := testsvc.StartJWKS(t, "a")
	v := idp.Verifier(t, nil)
	var mu sync.Mutex
	var logs bytes.Buffer
	down := httptest.NewServer(&downstream{})
	defer down.Close()
	g, err := New(down.URL+"/mcp", v, &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	for _, c := range []struct {
		name, tok, why string
	}{
		{"wrong audience", idp.Sign(t, "a", testsvc.Claims("ann", "viewer", "other", time.Now().Add(time.Hour))), "wrong audience"},
		{"expired", idp.Sign(t, "a", testsvc.Claims("ann", "viewer", testsvc.JWKSAudience, time.Now().Add(-time.Hour))), "expired"},
	} {
		mu.Lock()
		logs.Reset()
		mu.Unlock()
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			req, err := http.NewRequest(method, gw.URL+"/mcp", strings.NewReader(call(`1`, "get_customer_record", `{}`)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+c.tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), c.why) {
				t.Errorf("%s, %s: %d %s; want 401 without the reason", c.name, method, resp.StatusCode, body)
			}
		}
		mu.Lock()
		got := logs.String()
		mu.Unlock()
		if n := strings.Count(got, `why="token: invalid JWT: `+c.why); n != 2 {
			t.Errorf("%s: %d deny lines give the reason, want 2 (POST, GET); logs:\n%s", c.name, n, got)
		}
		if strings.Contains(got, c.tok) {
			t.Errorf("%s: the log holds the token", c.name)
		}
	}
}

// TestReview57ArgumentRefusalNamesNoRoles: a call refused for an argument
// limit, which comes once the caller's roles are met, listed the tool's
// required_roles, which read as roles the caller lacked (it held them).
func TestReview57ArgumentRefusalNamesNoRoles(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Roles: []string{"viewer"},
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Policy: pol})
	got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":500}`))
	if got.status != http.StatusForbidden {
		t.Fatalf("status %d, want 403: %s", got.status, got.body)
	}
	_, _, data := rpcErr(t, got.body)
	for _, k := range []string{"required_roles", "required_role_sets"} {
		if v, ok := data[k]; ok {
			t.Errorf("data.%s = %v for a caller refused for an argument", k, v)
		}
	}
}

// TestReview57MinLimitedToolListed: with FilterToolsList, whether a tool is
// listed was decided by a call with every argument at -Inf, which passes any
// max; a policy's "min" limit (policy.ArgLimit.Min) would then have hidden
// the tool from every caller it applies to, though their calls within the
// bounds pass. A listing is decided on everything but the arguments now.
func TestReview57MinLimitedToolListed(t *testing.T) {
	cfg := DefaultPolicyConfig()
	zero := 0.0
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Min: &zero, Max: 100}}}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Policy: pol, FilterToolsList: true})
	got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if !strings.Contains(got.body, `"trigger_refund"`) {
		t.Errorf("the listing a viewer gets: %s; want trigger_refund in it", got.body)
	}
	if got := rg.post(t, viewer, call(`2`, "trigger_refund", `{"amount":-5}`)); got.status != http.StatusForbidden || !strings.Contains(got.body, "below the limit") {
		t.Errorf("amount -5: %d %s; want 403, below the limit", got.status, got.body)
	}
	if got := rg.post(t, viewer, call(`3`, "trigger_refund", `{"amount":5}`)); got.status != http.StatusOK {
		t.Errorf("amount 5: %d %s; want 200", got.status, got.body)
	}
}

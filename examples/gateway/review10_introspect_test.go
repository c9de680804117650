package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/token"
)

const (
	// The introspection client's credentials: the id has a space, the
	// secret characters that HTTP Basic takes form-urlencoded.
	gwClientID = "mcp gateway"
	gwSecret   = "gw-s3cret+&=-Qz7"
	gwIssuer   = "https://idp.example/realms/mcp"
)

// gwEndpoint is an RFC 7662 introspection endpoint on 127.0.0.1: it
// checks each request (POST, form-urlencoded, token_type_hint, the
// client's Basic credentials, 401 otherwise) and answers each token with
// the principal in active ({"active": false} for any other), or with
// status when set. It counts the requests for each token.
type gwEndpoint struct {
	*httptest.Server
	mu     sync.Mutex
	active map[string]map[string]any // token: the answer's members
	status int
	hits   map[string]int
}

func newGWEndpoint(t *testing.T) *gwEndpoint {
	t.Helper()
	e := &gwEndpoint{active: map[string]map[string]any{}, hits: map[string]int{}}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, err := url.ParseQuery(string(body))
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" ||
			err != nil || form.Get("token_type_hint") != "access_token" || len(form["token"]) != 1 {
			t.Errorf("endpoint: %s %q %q, want an RFC 7662 request", r.Method, r.Header.Get("Content-Type"), body)
		}
		tok := form.Get("token")
		e.mu.Lock()
		e.hits[tok]++
		m, status := e.active[tok], e.status
		e.mu.Unlock()
		id, secret, _ := r.BasicAuth()
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		switch {
		case id != gwClientID || secret != gwSecret:
			http.Error(w, `{"error": "invalid_client"}`, http.StatusUnauthorized)
			return
		case status != 0:
			http.Error(w, "down", status)
			return
		case m == nil:
			m = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(m)
	}))
	t.Cleanup(e.Close)
	return e
}

// activate makes tok an active token of sub with scope, for aud.
func (e *gwEndpoint) activate(tok, sub, scope, aud string) {
	e.mu.Lock()
	e.active[tok] = map[string]any{
		"active": true, "sub": sub, "scope": scope, "aud": aud, "iss": gwIssuer,
		"token_type": "Bearer", "exp": time.Now().Add(time.Hour).Unix(),
	}
	e.mu.Unlock()
}

func (e *gwEndpoint) setStatus(status int) {
	e.mu.Lock()
	e.status = status
	e.mu.Unlock()
}

func (e *gwEndpoint) count(tok string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[tok]
}

// recorder is a downstream that records the subject header of every
// request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	d := &recorder{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		d.mu.Lock()
		d.seen = append(d.seen, r.Header.Get(token.HeaderSubject)+" "+strings.Join(r.Header.Values(token.HeaderRole), ","))
		d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *recorder) since(n int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen[n:]...)
}

func (d *recorder) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

// TestIntrospection runs the binary with --introspect against a real
// introspection endpoint, the client's credentials from the environment:
// at start it asks about a made-up token; an admin's active token is
// forwarded with the subject and role headers (and asked about once, then
// cached); a viewer's is refused by the policy; an inactive token and one
// for another audience are 401 and never forwarded; one that the endpoint
// cannot judge (500) is 502 (not judged: not 401, which would send the
// client to authorize again), never forwarded and logged as a warning; the
// logs never hold a token or the secret.
func TestIntrospection(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	t.Setenv(introspectIDEnv, gwClientID)
	t.Setenv(introspectSecretEnv, gwSecret)
	e := newGWEndpoint(t)
	e.activate("opq-admin-Hh38", "ann", "admin support", "mcp-gateway")
	e.activate("opq-viewer-Vq72", "vic", "viewer", "mcp-gateway")
	e.activate("opq-elsewhere-Ee11", "eve", "admin", "other-server")
	down := newRecorder(t)

	base, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--introspect", e.URL+"/oauth2/introspect", "--introspect-audience", "mcp-gateway", "--introspect-issuer", gwIssuer)
	if base == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()
	if n := e.count(introspectProbe); n != 1 {
		t.Errorf("the endpoint was asked about the probe %d times at start, want 1", n)
	}
	if l := logs.String(); !strings.Contains(l, "verifying bearer tokens by introspection") || !strings.Contains(l, "client_auth=basic") {
		t.Errorf("start logs: want the introspection and its client authentication:\n%s", l)
	}

	for _, step := range []struct {
		name, tok string
		status    int
		fwd       string // "subject roles" forwarded, if any
	}{
		{"admin", "opq-admin-Hh38", http.StatusOK, "ann admin,support"},
		{"admin_again", "opq-admin-Hh38", http.StatusOK, "ann admin,support"},
		{"viewer", "opq-viewer-Vq72", http.StatusForbidden, ""},
		{"inactive", "opq-nobody-Nn00", http.StatusUnauthorized, ""},
		{"other_audience", "opq-elsewhere-Ee11", http.StatusUnauthorized, ""},
		{"demo_static_token", "admin-token", http.StatusUnauthorized, ""},
	} {
		before := down.len()
		if got := callTool(t, base, "admin_reset_key", step.tok); got != step.status {
			t.Errorf("%s: status %d, want %d; logs:\n%s", step.name, got, step.status, logs)
		}
		got := down.since(before)
		switch {
		case step.fwd == "" && len(got) != 0:
			t.Errorf("%s: forwarded %q, want nothing", step.name, got)
		case step.fwd != "" && (len(got) != 1 || got[0] != step.fwd):
			t.Errorf("%s: forwarded %q, want [%s]", step.name, got, step.fwd)
		}
	}
	if n := e.count("opq-admin-Hh38"); n != 1 {
		t.Errorf("the admin's token was asked about %d times, want 1 (cached)", n)
	}

	e.setStatus(http.StatusInternalServerError)
	e.activate("opq-new-Nw55", "ann", "admin", "mcp-gateway")
	before := down.len()
	if got := callTool(t, base, "admin_reset_key", "opq-new-Nw55"); got != http.StatusBadGateway || down.len() != before {
		t.Errorf("endpoint failing: status %d, forwarded %d, want 502 (the token was not judged: not 401) and nothing", got, down.len()-before)
	}
	e.setStatus(0)
	if got := callTool(t, base, "admin_reset_key", "opq-new-Nw55"); got != http.StatusOK {
		t.Errorf("endpoint back: status %d, want 200 (the failure is not cached)", got)
	}
	l := logs.String()
	if !strings.Contains(l, "token introspection failed") || !strings.Contains(l, "status 500") {
		t.Errorf("logs: want a warning for the failed introspection:\n%s", l)
	}
	for _, secret := range []string{"opq-", gwSecret, url.QueryEscape(gwSecret)} {
		if strings.Contains(l, secret) {
			t.Errorf("logs contain %q:\n%s", secret, l)
		}
	}
}

// TestIntrospectionCacheTTLZero: --introspect-cache-ttl 0 asks the
// endpoint at every request.
func TestIntrospectionCacheTTLZero(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	t.Setenv(introspectIDEnv, gwClientID)
	t.Setenv(introspectSecretEnv, gwSecret)
	e := newGWEndpoint(t)
	e.activate("opq-admin-Hh38", "ann", "admin", "mcp-gateway")
	down := newRecorder(t)
	base, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--introspect", e.URL, "--introspect-audience", "mcp-gateway", "--introspect-cache-ttl", "0")
	if base == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()
	for range 3 {
		if got := callTool(t, base, "admin_reset_key", "opq-admin-Hh38"); got != http.StatusOK {
			t.Errorf("status %d, want 200", got)
		}
	}
	if n := e.count("opq-admin-Hh38"); n != 3 {
		t.Errorf("three requests asked the endpoint %d times, want 3", n)
	}
}

// TestIntrospectionResource: --jwt-resource works with --introspect: the
// resource metadata names --introspect-issuer as the authorization server,
// and without --introspect-audience the resource URL is the audience.
func TestIntrospectionResource(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	t.Setenv(introspectIDEnv, gwClientID)
	t.Setenv(introspectSecretEnv, gwSecret)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	resource := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	e := newGWEndpoint(t)
	e.activate("opq-resource-Rr01", "ann", "", resource)
	e.activate("opq-gateway-Gg02", "ann", "", "mcp-gateway")
	down := newRecorder(t)

	base, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--upstream", down.URL+"/mcp",
		"--introspect", e.URL, "--introspect-issuer", gwIssuer, "--jwt-resource", resource)
	if base == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), base+"/.well-known/oauth-protected-resource/mcp", resource, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{gwIssuer}, prm.AuthorizationServers); diff != "" {
		t.Errorf("authorization servers (-want +got):\n%s", diff)
	}
	if got := callTool(t, base, "get_customer_record", "opq-resource-Rr01"); got != http.StatusOK {
		t.Errorf("token for the resource: %d, want 200", got)
	}
	if got := callTool(t, base, "get_customer_record", "opq-gateway-Gg02"); got != http.StatusUnauthorized {
		t.Errorf("token for another audience: %d, want 401", got)
	}
}

// TestIntrospectionRefused: --introspect configurations that cannot work
// as written stop the binary at start, saying why, with neither the
// secret nor, when the endpoint is not to be asked, a request to it:
// together with JWT flags, without an audience, half the client's
// credentials, --introspect-* flags or credentials without --introspect,
// an endpoint in plain http off loopback or with user info, wrong
// credentials (the endpoint's 401 at the start probe), an endpoint that
// is not there, --jwt-resource without --introspect-issuer, a negative
// cache TTL.
func TestIntrospectionRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	e := newGWEndpoint(t)
	creds := map[string]string{introspectIDEnv: gwClientID, introspectSecretEnv: gwSecret}
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		want     string
		requests int // to the endpoint
	}{
		{"with_jwt_jwks", []string{"--introspect", e.URL, "--introspect-audience", "a", "--jwt-jwks", "keys.json"}, creds,
			"--jwt-jwks with --introspect: JWTs and introspection are two ways to verify tokens: choose one", 0},
		{"with_jwt_issuer", []string{"--introspect", e.URL, "--introspect-audience", "a", "--jwt-issuer", gwIssuer}, creds,
			"--jwt-issuer with --introspect", 0},
		{"with_jwt_audience", []string{"--introspect", e.URL, "--jwt-audience", "a"}, creds,
			"--jwt-audience with --introspect", 0},
		{"no_audience", []string{"--introspect", e.URL}, creds, "give --introspect-audience or --jwt-resource", 0},
		{"id_without_secret", []string{"--introspect", e.URL, "--introspect-audience", "a"}, map[string]string{introspectIDEnv: gwClientID},
			"set both " + introspectIDEnv + " and " + introspectSecretEnv, 0},
		{"secret_without_id", []string{"--introspect", e.URL, "--introspect-audience", "a"}, map[string]string{introspectSecretEnv: gwSecret},
			"set both", 0},
		{"empty_secret", []string{"--introspect", e.URL, "--introspect-audience", "a"}, map[string]string{introspectIDEnv: gwClientID, introspectSecretEnv: ""},
			"is empty", 0},
		{"introspect_flag_alone", []string{"--introspect-audience", "a"}, nil, "--introspect-audience: only with --introspect", 0},
		{"credentials_alone", nil, creds, introspectIDEnv + ", " + introspectSecretEnv + ": only with --introspect", 0},
		{"resource_alone", []string{"--jwt-resource", "https://gw.example/mcp"}, nil, "or with --introspect", 0},
		{"http_not_loopback", []string{"--introspect", "http://idp.example/introspect", "--introspect-audience", "a"}, creds, "loopback", 0},
		{"user_info", []string{"--introspect", "https://gw:" + url.QueryEscape(gwSecret) + "@idp.example/introspect", "--introspect-audience", "a"}, creds,
			"user info", 0},
		{"wrong_credentials", []string{"--introspect", e.URL, "--introspect-audience", "a"}, map[string]string{introspectIDEnv: gwClientID, introspectSecretEnv: "wrong-" + gwSecret},
			"status 401, want 200 (the endpoint refused the client's credentials)", 1},
		{"no_credentials", []string{"--introspect", e.URL, "--introspect-audience", "a"}, nil, "status 401", 1},
		{"unreachable", []string{"--introspect", "http://127.0.0.1:1/introspect", "--introspect-audience", "a"}, creds, "made-up token at start", 0},
		{"resource_without_issuer", []string{"--introspect", e.URL, "--jwt-resource", "https://gw.example/mcp"}, creds, "needs --introspect-issuer", 0},
		{"negative_cache_ttl", []string{"--introspect", e.URL, "--introspect-audience", "a", "--introspect-cache-ttl", "-1s"}, creds, "--introspect-cache-ttl", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, env := range []string{introspectIDEnv, introspectSecretEnv} {
				if v, ok := tc.env[env]; ok {
					t.Setenv(env, v)
				} else {
					t.Setenv(env, "") // restored after the test
					os.Unsetenv(env)
				}
			}
			before := e.count(introspectProbe)
			args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, tc.args...)
			base, err, stop, logs := startRun(t, args...)
			if base != "" {
				stop()
				t.Fatalf("gateway %v started", tc.args)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
			if err != nil && (strings.Contains(err.Error(), gwSecret) || strings.Contains(err.Error(), url.QueryEscape(gwSecret))) {
				t.Errorf("err %q holds the secret", err)
			}
			if l := logs.String(); strings.Contains(l, gwSecret) || strings.Contains(l, url.QueryEscape(gwSecret)) {
				t.Errorf("logs hold the secret:\n%s", l)
			}
			if n := e.count(introspectProbe) - before; n != tc.requests {
				t.Errorf("the endpoint got %d requests, want %d", n, tc.requests)
			}
		})
	}
}

// TestIntrospectionWithStaticTokensRefused: --introspect together with
// MCP_GATEWAY_TOKENS is two ways to verify tokens: refused, before the
// endpoint is asked anything.
func TestIntrospectionWithStaticTokensRefused(t *testing.T) {
	e := newGWEndpoint(t)
	t.Setenv(gateway.TokensEnv, `{"tok":"admin"}`)
	t.Setenv(introspectIDEnv, gwClientID)
	t.Setenv(introspectSecretEnv, gwSecret)
	_, err := introspector(context.Background(), quietLogger(), token.IntrospectionConfig{Endpoint: e.URL, Audience: "mcp-gateway"})
	if err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("--introspect and MCP_GATEWAY_TOKENS: err %v, want a refusal", err)
	}
	if n := e.count(introspectProbe); n != 0 {
		t.Errorf("the endpoint got %d requests, want none", n)
	}
}

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/token"
)

// TestJWTTokens runs the binary with --jwt-jwks against a recording
// downstream: a JWT signed by the set's key, for the right issuer and
// audience, is the principal its claims name (an admin's call of an admin_*
// tool is forwarded with the subject and role headers); a viewer's is
// refused there; an expired token, a token signed by another key and the
// demo static tokens are 401 and never forwarded.
func TestJWTTokens(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(t.TempDir(), "keys.json")
	set := `{"keys":[{"kty":"OKP","crv":"Ed25519","use":"sig","kid":"k1","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
	if err := os.WriteFile(jwks, []byte(set), 0o600); err != nil {
		t.Fatal(err)
	}
	sign := func(key ed25519.PrivateKey, sub string, roles []string, exp time.Time) string {
		return signEdDSA(t, key, "k1", jwt.MapClaims{
			"iss": "https://idp.example", "aud": "mcp-gateway", "sub": sub, "roles": roles,
			"iat": time.Now().Add(-time.Minute).Unix(), "exp": exp.Unix(),
		})
	}

	var mu sync.Mutex
	var seen []http.Header
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	defer down.Close()

	url, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--jwt-jwks", jwks, "--jwt-issuer", "https://idp.example", "--jwt-audience", "mcp-gateway")
	if url == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()

	post := func(tok string) int { return callTool(t, url, "admin_reset_key", tok) }
	forwarded := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}

	hour := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name, tok string
		status    int
		forwarded bool
	}{
		{"admin", sign(priv, "ann", []string{"admin"}, hour), http.StatusOK, true},
		{"viewer", sign(priv, "vic", []string{"viewer"}, hour), http.StatusForbidden, false},
		{"expired", sign(priv, "ann", []string{"admin"}, time.Now().Add(-time.Minute)), http.StatusUnauthorized, false},
		{"other_key", sign(otherPriv, "ann", []string{"admin"}, hour), http.StatusUnauthorized, false},
		{"demo_static_token", "admin-token", http.StatusUnauthorized, false},
	} {
		before := forwarded()
		if got := post(tc.tok); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.status)
		}
		if got := forwarded() > before; got != tc.forwarded {
			t.Errorf("%s: forwarded %v, want %v", tc.name, got, tc.forwarded)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("downstream saw %d requests, want 1", len(seen))
	}
	if seen[0].Get(token.HeaderSubject) != "ann" || !strings.Contains(strings.Join(seen[0].Values(token.HeaderRole), ","), "admin") {
		t.Errorf("downstream saw subject %q roles %q, want ann and admin", seen[0].Get(token.HeaderSubject), seen[0].Values(token.HeaderRole))
	}
}

// TestJWTFlagsRefused: JWT flags that cannot work as written stop the
// binary at start: an audience without a key set or an issuer, a key set
// without an issuer or audience, an unreadable or invalid key set, a key
// set URL in plain http to another host than loopback or that cannot be
// fetched, and a key set together with MCP_GATEWAY_TOKENS (two ways to
// verify tokens).
func TestJWTFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keys.json")
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(good, []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"`+base64.RawURLEncoding.EncodeToString(pub)+`"}]}`), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"keys":[{"kty":"oct","kid":"k1","k":"c2VjcmV0"}]}`), 0o600)
	cfg := token.JWTConfig{Issuer: "https://idp.example", Audience: "mcp-gateway"}
	for _, tc := range []struct {
		name string
		jwks string
		cfg  token.JWTConfig
	}{
		{"audience_without_keys_or_issuer", "", token.JWTConfig{Audience: "mcp-gateway"}},
		{"no_issuer", good, token.JWTConfig{Audience: "mcp-gateway"}},
		{"no_audience", good, token.JWTConfig{Issuer: "https://idp.example"}},
		{"missing_file", filepath.Join(dir, "none.json"), cfg},
		{"secret_key", bad, cfg},
		{"http_url_not_loopback", "http://idp.example/jwks.json", cfg},
		{"url_unreachable", "http://127.0.0.1:1/jwks.json", cfg},
	} {
		if _, err := authenticator(context.Background(), quietLogger(), tc.jwks, time.Minute, tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	t.Setenv(gateway.TokensEnv, `{"tok":"admin"}`)
	if _, err := authenticator(context.Background(), quietLogger(), good, time.Minute, cfg); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("keys and MCP_GATEWAY_TOKENS: err %v, want a refusal", err)
	}
	if a, err := authenticator(context.Background(), quietLogger(), "", time.Minute, token.JWTConfig{}); err != nil || a == nil {
		t.Errorf("MCP_GATEWAY_TOKENS alone: %v, %v", a, err)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestJWTFlagsWithoutKeysRefused: a --jwt-* flag without --jwt-jwks or
// --jwt-issuer (which discovers the key set) would be ignored (the gateway
// would verify static tokens): the binary refuses to start instead.
func TestJWTFlagsWithoutKeysRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, f := range [][]string{{"--jwt-leeway", "30s"}, {"--jwt-roles-claim", "scope"}, {"--jwt-audience", "mcp-gateway"}, {"--jwt-jwks-min-refresh", "1s"}} {
		args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, f...)
		url, err, stop, _ := startRun(t, args...)
		if url != "" {
			stop()
			t.Errorf("%v without --jwt-jwks: the gateway started", f)
		} else if err == nil || !strings.Contains(err.Error(), "only with --jwt-jwks or --jwt-issuer") {
			t.Errorf("%v without --jwt-jwks: err %v", f, err)
		}
	}
}

// TestJWTRemoteKeySetRotation runs the binary with --jwt-jwks naming the
// URL of a JWK Set served by a real HTTP server on 127.0.0.1: a token
// signed by the set's key A is forwarded; after the provider rotates its
// set to key B, a token signed by B is forwarded without restarting the
// gateway, and A's is refused; a token naming a kid the provider never
// published is 401 and never forwarded.
func TestJWTRemoteKeySetRotation(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })

	pubA, privA, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubB, privB, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	setOf := func(kid string, pub ed25519.PublicKey) string {
		return `{"keys":[{"kty":"OKP","crv":"Ed25519","use":"sig","kid":"` + kid + `","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
	}
	var setMu sync.Mutex
	set, fetches := setOf("key-a", pubA), 0
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setMu.Lock()
		defer setMu.Unlock()
		fetches++
		w.Header().Set("Content-Type", "application/jwk-set+json")
		io.WriteString(w, set)
	}))
	defer idp.Close()
	rotate := func(s string) {
		setMu.Lock()
		set = s
		setMu.Unlock()
	}
	fetched := func() int {
		setMu.Lock()
		defer setMu.Unlock()
		return fetches
	}

	var mu sync.Mutex
	var seen []string
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get(token.HeaderSubject))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	defer down.Close()

	// A minimum refresh interval of 1 ns lets the token signed by B, which
	// arrives right after the rotation, trigger the refetch.
	url, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--jwt-jwks", idp.URL+"/jwks.json", "--jwt-jwks-min-refresh", "1ns",
		"--jwt-issuer", "https://idp.example", "--jwt-audience", "mcp-gateway")
	if url == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()
	if n := fetched(); n != 1 {
		t.Errorf("the gateway fetched the set %d times at start, want 1", n)
	}

	sign := func(key ed25519.PrivateKey, kid, sub string) string {
		return signEdDSA(t, key, kid, jwt.MapClaims{
			"iss": "https://idp.example", "aud": "mcp-gateway", "sub": sub, "roles": []string{"admin"},
			"exp": time.Now().Add(time.Hour).Unix(),
		})
	}
	post := func(tok string) int { return callTool(t, url, "admin_reset_key", tok) }

	for _, step := range []struct {
		name   string
		rotate string // the set the provider publishes from this step on, if any
		tok    string
		status int
		fwd    string // the subject forwarded, if any
	}{
		{"key_a", "", sign(privA, "key-a", "ann"), http.StatusOK, "ann"},
		{"key_b_after_rotation", setOf("key-b", pubB), sign(privB, "key-b", "bob"), http.StatusOK, "bob"},
		{"key_a_after_rotation", "", sign(privA, "key-a", "ann"), http.StatusUnauthorized, ""},
		{"unknown_kid", "", sign(privB, "key-z", "zed"), http.StatusUnauthorized, ""},
	} {
		if step.rotate != "" {
			rotate(step.rotate)
		}
		mu.Lock()
		before := len(seen)
		mu.Unlock()
		if got := post(step.tok); got != step.status {
			t.Errorf("%s: status %d, want %d; logs:\n%s", step.name, got, step.status, logs)
		}
		mu.Lock()
		got := seen[before:]
		mu.Unlock()
		switch {
		case step.fwd == "" && len(got) != 0:
			t.Errorf("%s: forwarded %q, want nothing", step.name, got)
		case step.fwd != "" && (len(got) != 1 || got[0] != step.fwd):
			t.Errorf("%s: forwarded %q, want [%s]", step.name, got, step.fwd)
		}
	}
	if n := fetched(); n < 2 {
		t.Errorf("the gateway fetched the set %d times, want a refetch after the rotation", n)
	}
}

// TestJWTMinRefreshRefused: --jwt-jwks-min-refresh with a key set file
// (read once: the flag would do nothing), a duration that is not positive
// or one over the set's lifetime (1h) stops the binary at start.
func TestJWTMinRefreshRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "keys.json")
	os.WriteFile(file, []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"`+base64.RawURLEncoding.EncodeToString(pub)+`"}]}`), 0o600)
	for _, tc := range []struct {
		jwks, refresh, want string
	}{
		{file, "1s", "only with a --jwt-jwks URL"},
		{"https://idp.example/jwks.json", "0s", "want a positive duration"},
		{"https://idp.example/jwks.json", "-1m", "want a positive duration"},
		// Over the set's lifetime it would hold back the hourly refresh:
		// refused by the flag's own check, before any fetch.
		{"https://idp.example/jwks.json", "2h", "at most 1h"},
	} {
		url, err, stop, _ := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp",
			"--jwt-jwks", tc.jwks, "--jwt-jwks-min-refresh", tc.refresh, "--jwt-issuer", "https://idp.example", "--jwt-audience", "mcp-gateway")
		if url != "" {
			stop()
			t.Errorf("--jwt-jwks %s --jwt-jwks-min-refresh %s: the gateway started", tc.jwks, tc.refresh)
		} else if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--jwt-jwks %s --jwt-jwks-min-refresh %s: err %v, want %q", tc.jwks, tc.refresh, err, tc.want)
		}
	}
}

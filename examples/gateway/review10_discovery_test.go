package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/token"
)

// discoveryIDP is an identity provider on 127.0.0.1: it publishes, under
// the issuer path /realms/mcp, an OpenID Connect discovery document naming
// its JWK Set, and the set, which rotate can change. It counts the
// requests for each path.
type discoveryIDP struct {
	*httptest.Server
	issuer string
	mu     sync.Mutex
	set    string
	doc    func(issuer string) string // the document; nil: the right one; "": status 500
	seen   map[string]int
}

const discoverySecret = "s3cret-jwks-key"

func newDiscoveryIDP(t *testing.T, set string) *discoveryIDP {
	t.Helper()
	p := &discoveryIDP{set: set, seen: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.seen[r.URL.Path]++
		switch {
		case r.URL.Path == "/realms/mcp/.well-known/openid-configuration":
			w.Header().Set("Content-Type", "application/json")
			if p.doc != nil {
				if doc := p.doc(p.issuer); doc != "" {
					io.WriteString(w, doc)
				} else {
					http.Error(w, "down", http.StatusInternalServerError)
				}
				return
			}
			// The jwks_uri carries a credential in its query, which the
			// logs must not show.
			fmt.Fprintf(w, `{"issuer": %q, "jwks_uri": %q}`, p.issuer, p.issuer+"/certs?api_key="+discoverySecret)
		case r.URL.Path == "/realms/mcp/certs" && r.URL.Query().Get("api_key") == discoverySecret:
			w.Header().Set("Content-Type", "application/jwk-set+json")
			io.WriteString(w, p.set)
		default:
			http.NotFound(w, r)
		}
	}))
	p.issuer = p.URL + "/realms/mcp"
	t.Cleanup(p.Close)
	return p
}

func (p *discoveryIDP) rotate(set string) {
	p.mu.Lock()
	p.set = set
	p.mu.Unlock()
}

func (p *discoveryIDP) requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[path]
}

func (p *discoveryIDP) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.seen {
		n += c
	}
	return n
}

func edSet(kid string, pub ed25519.PublicKey) string {
	return `{"keys":[{"kty":"OKP","crv":"Ed25519","use":"sig","kid":"` + kid + `","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
}

// TestJWTDiscovery runs the binary with --jwt-issuer and --jwt-audience
// only: it reads the issuer's discovery document once, logs the jwks_uri
// without its query credential, and verifies tokens with the set found
// there: an admin's token signed by the issuer's key is forwarded with its
// subject, one signed by another key or naming another issuer is 401 and
// never forwarded. --jwt-jwks-min-refresh applies to the discovered set:
// at 1 ns, the provider's rotation to key B is picked up at B's first
// token, without a new read of the document.
func TestJWTDiscovery(t *testing.T) {
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
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := newDiscoveryIDP(t, edSet("key-a", pubA))

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

	url, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--jwt-issuer", idp.issuer, "--jwt-audience", "mcp-gateway", "--jwt-jwks-min-refresh", "1ns")
	if url == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()
	if l := logs.String(); !strings.Contains(l, "jwks_uri="+idp.issuer+"/certs?…") || strings.Contains(l, discoverySecret) {
		t.Errorf("start logs: want the discovered jwks_uri %s/certs without its query:\n%s", idp.issuer, l)
	}

	sign := func(key ed25519.PrivateKey, kid, iss, sub string) string {
		return signEdDSA(t, key, kid, jwt.MapClaims{
			"iss": iss, "aud": "mcp-gateway", "sub": sub, "roles": []string{"admin"},
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
		{"key_a", "", sign(privA, "key-a", idp.issuer, "ann"), http.StatusOK, "ann"},
		{"other_key", "", sign(other, "key-a", idp.issuer, "eve"), http.StatusUnauthorized, ""},
		{"other_issuer", "", sign(privA, "key-a", idp.issuer+"/", "eve"), http.StatusUnauthorized, ""},
		{"key_b_after_rotation", edSet("key-b", pubB), sign(privB, "key-b", idp.issuer, "bob"), http.StatusOK, "bob"},
		{"key_a_after_rotation", "", sign(privA, "key-a", idp.issuer, "ann"), http.StatusUnauthorized, ""},
	} {
		if step.rotate != "" {
			idp.rotate(step.rotate)
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
	// Read at start, and again once when the refetch after the rotation
	// still lacked key-a's kid (the set may have moved).
	if n := idp.requests("/realms/mcp/.well-known/openid-configuration"); n != 2 {
		t.Errorf("the discovery document was read %d times, want 2 (at start, and after the rotation)", n)
	}
	if n := idp.requests("/realms/mcp/certs"); n < 2 {
		t.Errorf("the discovered set was fetched %d times, want a refetch after the rotation", n)
	}
}

// TestJWTDiscoveryRefused: --jwt-issuer without --jwt-jwks that cannot be
// discovered stops the binary at start, saying why: an issuer that is not
// an https URL (http only to a loopback host) or has a query, refused
// before any request, with a message that discovery needs https or
// --jwt-jwks; no audience, refused before any request; a document naming
// another issuer (the same URL with a trailing "/"), or no jwks_uri; and a
// discovery document that answers 500.
func TestJWTDiscoveryRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		issuer   func(p *discoveryIDP) string
		audience string
		doc      func(issuer string) string
		want     []string
		requests int // to the provider
	}{
		{"issuer_not_url", func(*discoveryIDP) string { return "idp" }, "mcp-gateway", nil,
			[]string{"https", "or give --jwt-jwks"}, 0},
		{"issuer_http_not_loopback", func(*discoveryIDP) string { return "http://idp.example/realms/mcp" }, "mcp-gateway", nil,
			[]string{"https", "or give --jwt-jwks"}, 0},
		{"issuer_query", func(p *discoveryIDP) string { return p.issuer + "?tenant=a" }, "mcp-gateway", nil,
			[]string{"https", "query", "or give --jwt-jwks"}, 0},
		{"no_audience", func(p *discoveryIDP) string { return p.issuer }, "", nil,
			[]string{"--jwt-audience or --jwt-resource"}, 0},
		{"document_names_other_issuer", func(p *discoveryIDP) string { return p.issuer }, "mcp-gateway",
			func(iss string) string { return fmt.Sprintf(`{"issuer": %q, "jwks_uri": %q}`, iss+"/", iss+"/certs") },
			[]string{`"issuer"`, "exactly"}, 1},
		{"document_without_jwks_uri", func(p *discoveryIDP) string { return p.issuer }, "mcp-gateway",
			func(iss string) string { return fmt.Sprintf(`{"issuer": %q}`, iss) },
			[]string{`no "jwks_uri"`}, 1},
		{"document_500", func(p *discoveryIDP) string { return p.issuer }, "mcp-gateway",
			func(string) string { return "" },
			[]string{"openid-configuration: status 500"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idp := newDiscoveryIDP(t, edSet("k1", pub))
			idp.doc = tc.doc
			args := []string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--jwt-issuer", tc.issuer(idp)}
			if tc.audience != "" {
				args = append(args, "--jwt-audience", tc.audience)
			}
			url, err, stop, _ := startRun(t, args...)
			if url != "" {
				stop()
				t.Fatalf("gateway %v started", args)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err %v, want one containing %q", err, w)
				}
			}
			if n := idp.total(); n != tc.requests {
				t.Errorf("the provider saw %d requests, want %d", n, tc.requests)
			}
		})
	}
}

// TestJWTDiscoveryWithStaticTokensRefused: --jwt-issuer alone (discovery)
// together with MCP_GATEWAY_TOKENS is two ways to verify tokens: refused,
// before the provider is asked anything.
func TestJWTDiscoveryWithStaticTokensRefused(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := newDiscoveryIDP(t, edSet("k1", pub))
	t.Setenv(gateway.TokensEnv, `{"tok":"admin"}`)
	_, err = authenticator(context.Background(), quietLogger(), "", time.Minute, token.JWTConfig{Issuer: idp.issuer, Audience: "mcp-gateway"})
	if err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("discovery and MCP_GATEWAY_TOKENS: err %v, want a refusal", err)
	}
	if n := idp.total(); n != 0 {
		t.Errorf("the provider saw %d requests, want none", n)
	}
}

package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	review55Issuer   = "https://idp.example"
	review55Audience = "ticket-mcp"
)

// review55IdP is an identity provider's signing key and its JWK Set.
type review55IdP struct {
	key  *rsa.PrivateKey
	jwks []byte
}

func newReview55IdP(t *testing.T) *review55IdP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	set, err := json.Marshal(map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return &review55IdP{key: key, jwks: set}
}

// file writes the JWK Set to a file and returns its path.
func (p *review55IdP) file(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, p.jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// token signs a token for sub with roles (none when nil) and claims
// (team, ...), valid for an hour unless claims says otherwise.
func (p *review55IdP) token(t *testing.T, sub string, roles []string, claims jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"iss": review55Issuer, "aud": review55Audience, "sub": sub,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	if roles != nil {
		c["roles"] = roles
	}
	for k, v := range claims {
		c[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(p.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// review55DocIDs returns the ids of a search_docs result.
func review55DocIDs(t *testing.T, result any) []string {
	t.Helper()
	var out []string
	m, _ := result.(map[string]any)
	rs, _ := m["results"].([]any)
	for _, d := range rs {
		out = append(out, d.(map[string]any)["id"].(string))
	}
	return out
}

// TestReview55ServeHTTPVerifiesJWTs: the seed's identity provider is a
// static dev-only table, and its "deviations" list the missing OAuth/JWT
// verification as one to lift; this example kept it. serve-http's --jwt-*
// flags now verify bearer tokens as JWTs of an identity provider (its JWK
// Set from a file or its jwks_uri), over MCP and REST alike: the caller is
// the token's "sub", its roles the roles claim and its team, which
// search_docs filters by, the team claim (here nested: --jwt-team-claim
// org.team). The dev tokens no longer work, a token of another key, an
// expired one or one for another audience is refused, and an MCP session
// stays its opener's.
func TestReview55ServeHTTPVerifiesJWTs(t *testing.T) {
	idp := newReview55IdP(t)
	keys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(idp.jwks)
	}))
	t.Cleanup(keys.Close)
	for _, source := range []struct{ name, jwks string }{{"file", idp.file(t)}, {"url", keys.URL + "/jwks.json"}} {
		t.Run(source.name, func(t *testing.T) {
			dir := t.TempDir()
			s := startServeHTTP(t, "--audit-dir", dir, "--jwt-jwks", source.jwks, "--jwt-issuer", review55Issuer,
				"--jwt-audience", review55Audience, "--jwt-team-claim", "org.team")
			ann := idp.token(t, "ann", []string{"engineering"}, jwt.MapClaims{"org": map[string]any{"team": "engineering"}})
			sam := idp.token(t, "sam", []string{"sales"}, jwt.MapClaims{"org": map[string]any{"team": "sales"}})
			search := `{"arguments": {"query": ""}}`

			// REST.
			for _, c := range []struct {
				tok  string
				want []string
			}{
				{ann, []string{"eng-001", "eng-002", "all-001"}},
				{sam, []string{"sales-001", "sales-002", "all-001"}},
				{idp.token(t, "nobody", nil, nil), []string{"all-001"}}, // no team claim: company-wide only
			} {
				r := restPost(t, s.base, "search_docs", c.tok, "j1", search)
				if r.status != http.StatusOK {
					t.Fatalf("REST search_docs: %d %v", r.status, r.body)
				}
				if diff := cmp.Diff(c.want, review55DocIDs(t, r.body["result"])); diff != "" {
					t.Errorf("REST search_docs (-want +got):\n%s", diff)
				}
			}
			other := newReview55IdP(t)
			for name, tok := range map[string]string{
				"dev_token":      "token-alice",
				"other_key":      other.token(t, "ann", []string{"engineering"}, nil),
				"expired":        idp.token(t, "ann", nil, jwt.MapClaims{"exp": time.Now().Add(-time.Hour).Unix()}),
				"other_audience": idp.token(t, "ann", nil, jwt.MapClaims{"aud": "another-server"}),
				"team_not_text":  idp.token(t, "ann", nil, jwt.MapClaims{"org": map[string]any{"team": 7}}),
			} {
				if r := restPost(t, s.base, "search_docs", tok, "j2", search); r.status != http.StatusUnauthorized || r.code() != "UNAUTHENTICATED" {
					t.Errorf("REST with %s: %d %s, want 401 UNAUTHENTICATED", name, r.status, r.code())
				}
			}

			// MCP, through the go-sdk's client.
			cs := connectHTTP(t, s.base, sam)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
			if code := toolCode(t, res, err); code != "" {
				t.Fatalf("MCP search_docs as sam: %s", code)
			}
			if diff := cmp.Diff([]string{"sales-001", "sales-002", "all-001"}, review55DocIDs(t, res.StructuredContent)); diff != "" {
				t.Errorf("MCP search_docs as sam (-want +got):\n%s", diff)
			}
			// sam's session is sam's: ann's valid token on it is refused.
			req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", cs.ID())
			req.Header.Set("Authorization", "Bearer "+ann)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("ann on sam's session: %d, want 403", resp.StatusCode)
			}
			// A dev token over MCP: the guard refuses the call.
			dev := connectHTTP(t, s.base, "token-alice")
			res, err = dev.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
			if code := toolCode(t, res, err); code != "UNAUTHENTICATED" {
				t.Errorf("MCP with a dev token: %q, want UNAUTHENTICATED", code)
			}
			// The refusals are audited, the accepted calls under the
			// tokens' subjects (read once the server has stopped and
			// written every record).
			cs.Close()
			dev.Close()
			if code := s.stop(); code != 0 {
				t.Fatalf("serve-http: exit %d; stderr:\n%s", code, s.stderr)
			}
			trail, err := os.ReadFile(filepath.Join(dir, auditJSONL))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"code":"UNAUTHENTICATED"`, `"subject":"ann"`, `"subject":"sam"`} {
				if !strings.Contains(string(trail), want) {
					t.Errorf("audit.jsonl holds no %s:\n%s", want, trail)
				}
			}
			if !strings.Contains(s.stderr.String(), "verifying bearer tokens as JWTs") {
				t.Errorf("stderr does not say the tokens are JWTs:\n%s", s.stderr)
			}
		})
	}
}

// TestReview55JWTFlagErrors: --jwt-* flags are checked before anything
// is opened (exit 2), a JWK Set that cannot be read fails the start
// before it listens (exit 1), and serve-stdio takes none of them.
func TestReview55JWTFlagErrors(t *testing.T) {
	idp := newReview55IdP(t)
	jwks := idp.file(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"keys": "no"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(t.TempDir(), "huge.json") // sparse: a wrong path, a dump
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, maxJWKSFile+1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a server that does start stops at once
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"issuer_alone", []string{"serve-http", "--port", "0", "--jwt-issuer", review55Issuer}, 2, "--jwt-jwks: required"},
		{"no_issuer", []string{"serve-http", "--port", "0", "--jwt-jwks", jwks, "--jwt-audience", review55Audience}, 2, "--jwt-issuer: required"},
		{"no_audience", []string{"serve-http", "--port", "0", "--jwt-jwks", jwks, "--jwt-issuer", review55Issuer}, 2, "--jwt-audience: required"},
		{"empty_team_claim", []string{"serve-http", "--port", "0", "--jwt-jwks", jwks, "--jwt-issuer", review55Issuer, "--jwt-audience", review55Audience, "--jwt-team-claim", ""}, 2, "--jwt-team-claim"},
		{"stdio", []string{"serve-stdio", "--jwt-jwks", jwks}, 2, "jwt-jwks"},
		{"missing_file", []string{"serve-http", "--port", "0", "--jwt-jwks", filepath.Join(t.TempDir(), "none.json"), "--jwt-issuer", review55Issuer, "--jwt-audience", review55Audience}, 1, "--jwt-jwks"},
		{"bad_file", []string{"serve-http", "--port", "0", "--jwt-jwks", bad, "--jwt-issuer", review55Issuer, "--jwt-audience", review55Audience}, 1, "--jwt-jwks"},
		{"huge_file", []string{"serve-http", "--port", "0", "--jwt-jwks", huge, "--jwt-issuer", review55Issuer, "--jwt-audience", review55Audience}, 1, "--jwt-jwks " + huge + ": the file is over 16 MiB"},
		{"plain_http_elsewhere", []string{"serve-http", "--port", "0", "--jwt-jwks", "http://idp.example/jwks.json", "--jwt-issuer", review55Issuer, "--jwt-audience", review55Audience}, 1, "--jwt-jwks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "audit")
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			code := run(ctx, append(slices.Clip(c.args), "--audit-dir", dir), stdout, stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("run(%q) = exit %d, stderr %q; want exit %d naming %q", c.args, code, stderr, c.code, c.want)
			}
			if strings.Contains(stdout.String(), "serving") {
				t.Errorf("run(%q) listened:\n%s", c.args, stdout)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("run(%q) created the audit directory (stat: %v)", c.args, err)
			}
		})
	}
}

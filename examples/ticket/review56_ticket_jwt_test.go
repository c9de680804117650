package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestReview56RESTInvalidTokenChallenge: /mcp answers a bearer token that
// does not verify (a JWT that expired, one for another audience, a revoked
// dev token) with 401 and WWW-Authenticate: Bearer error="invalid_token"
// (RFC 6750), so that a client gets a new token; the REST adapter answered
// it with the challenge of a request without credentials (Bearer
// realm="ticket"), so that a REST client could not tell a token to
// refresh from a token missing. The REST 401 of a presented bearer token
// now says error="invalid_token" too; one without a token keeps the bare
// challenge (RFC 6750 section 3.1), in both identity modes.
func TestReview56RESTInvalidTokenChallenge(t *testing.T) {
	idp := newReview55IdP(t)
	jwtServer := startServeHTTP(t, "--audit-dir", t.TempDir(), "--jwt-jwks", idp.file(t),
		"--jwt-issuer", review55Issuer, "--jwt-audience", review55Audience)
	tableServer := startServeHTTP(t, "--audit-dir", t.TempDir())
	const bare, invalid = `Bearer realm="ticket"`, `Bearer realm="ticket", error="invalid_token"`
	for _, c := range []struct {
		name string
		base string
		tok  string
		want string
	}{
		{"jwt_expired", jwtServer.base, idp.token(t, "ann", nil, jwt.MapClaims{"exp": time.Now().Add(-time.Hour).Unix()}), invalid},
		{"jwt_other_audience", jwtServer.base, idp.token(t, "ann", nil, jwt.MapClaims{"aud": "another-server"}), invalid},
		{"jwt_dev_token", jwtServer.base, "token-alice", invalid},
		{"jwt_none", jwtServer.base, "", bare},
		{"table_unknown", tableServer.base, "token-mallory", invalid},
		{"table_none", tableServer.base, "", bare},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := restPost(t, c.base, "search_docs", c.tok, "s1", searchBody)
			if r.status != http.StatusUnauthorized || r.code() != "UNAUTHENTICATED" {
				t.Fatalf("%d %s, want 401 UNAUTHENTICATED", r.status, r.code())
			}
			if got := strings.Join(r.header.Values("WWW-Authenticate"), "; "); got != c.want {
				t.Errorf("WWW-Authenticate %q, want %q", got, c.want)
			}
		})
	}
	// Another scheme is no bearer token: the bare challenge.
	req, _ := http.NewRequest(http.MethodPost, tableServer.base+"/tools/search_docs/call", strings.NewReader(searchBody))
	req.Header.Set("Authorization", "Basic YWxpY2U6c2VjcmV0")
	req.Header.Set("X-Session-Id", "s1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != bare {
		t.Errorf("Basic credentials: %d, WWW-Authenticate %q; want 401 %q", resp.StatusCode, got, bare)
	}
}

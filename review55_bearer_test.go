package mcpguard_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TestReview55BearerAuthenticator: BearerTokens takes a static table only;
// a server verifying JWTs or asking an introspection endpoint wrote the
// header reading itself (examples/ticket did). Bearer reads the bearer
// token as BearerTokens does and asks any TokenAuthenticator: the
// principal (its Attrs too) and the credential of a token it accepts;
// UNAUTHENTICATED without a token or for one it refuses; and
// UPSTREAM_UNAVAILABLE, which a client may retry, when the identity
// provider could not judge the token.
func TestReview55BearerAuthenticator(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	v, err := token.NewJWT(token.JWTConfig{Keys: map[string]crypto.PublicKey{"k": &key.PublicKey},
		Issuer: "https://idp.example", Audience: "mcp", AttrClaims: map[string]string{"team": "team"}})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
		tok.Header["kid"] = "k"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := sign(jwt.MapClaims{"iss": "https://idp.example", "aud": "mcp", "sub": "ann", "roles": []string{"support"},
		"team": "eng", "exp": time.Now().Add(time.Hour).Unix()})
	expired := sign(jwt.MapClaims{"iss": "https://idp.example", "aud": "mcp", "sub": "ann", "exp": time.Now().Add(-time.Hour).Unix()})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(down.Close)
	in, err := token.NewIntrospector(token.IntrospectionConfig{Endpoint: down.URL, Audience: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	req := func(h string) mcp.Request {
		hdr := http.Header{}
		if h != "" {
			hdr.Set("Authorization", h)
		}
		return &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: hdr}}
	}

	id, err := mcpguard.Bearer(v).Authenticate(context.Background(), req("bearer "+good))
	if err != nil {
		t.Fatalf("a valid JWT: %v", err)
	}
	want := &policy.Principal{Subject: "ann", Roles: []string{"support"}, Attrs: map[string]string{"team": "eng"}}
	if diff := cmp.Diff(want, id.Principal); diff != "" {
		t.Errorf("principal (-want +got):\n%s", diff)
	}
	if id.Credential.Reveal() != good {
		t.Error("the credential is not the token")
	}
	for _, c := range []struct {
		name string
		a    mcpguard.TokenAuthenticator
		req  mcp.Request
		code mcpguard.Code
	}{
		{"no_header", v, req(""), mcpguard.CodeUnauthenticated},
		{"no_extra", v, &mcp.CallToolRequest{}, mcpguard.CodeUnauthenticated},
		{"basic", v, req("Basic YWxhZGRpbjpvcGVuc2VzYW1l"), mcpguard.CodeUnauthenticated},
		{"expired", v, req("Bearer " + expired), mcpguard.CodeUnauthenticated},
		{"garbage", v, req("Bearer abc.def.ghi"), mcpguard.CodeUnauthenticated},
		{"provider_down", in, req("Bearer opaque-token-1"), mcpguard.CodeUpstreamUnavailable},
	} {
		_, err := mcpguard.Bearer(c.a).Authenticate(context.Background(), c.req)
		var d *mcpguard.DenialError
		if !errors.As(err, &d) || d.Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}

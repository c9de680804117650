package mcpguard_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// tokenAuthFunc adapts a function to mcpguard.TokenAuthenticator.
type tokenAuthFunc func(ctx context.Context, tok string) (*policy.Principal, error)

func (f tokenAuthFunc) Authenticate(ctx context.Context, tok string) (*policy.Principal, error) {
	return f(ctx, tok)
}

// review56IdP returns a JWT verifier (issuer https://idp.example, audience
// mcp) and a function signing claims, their "iss" added, with its key.
func review56IdP(t *testing.T) (*token.JWT, func(jwt.MapClaims) string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	v, err := token.NewJWT(token.JWTConfig{Keys: map[string]crypto.PublicKey{"k": &key.PublicKey},
		Issuer: "https://idp.example", Audience: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	return v, func(c jwt.MapClaims) string {
		c["iss"] = "https://idp.example"
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
		tok.Header["kid"] = "k"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestReview56BearerRefusalReasonAudited: with Bearer over a JWT verifier,
// a token refused for its audience, its issuer or its expiry was told the
// client as "invalid bearer token" (rightly) and recorded with no detail,
// nor logged anywhere: an operator could not tell a configuration mistake
// (a wrong audience) from a stale token. The audit record's detail now
// gives the token package's reason, which never quotes the token; another
// authenticator's error text, which may hold anything, is not recorded.
func TestReview56BearerRefusalReasonAudited(t *testing.T) {
	v, signClaims := review56IdP(t)
	sign := func(aud string, exp time.Time) string {
		return signClaims(jwt.MapClaims{"aud": aud, "sub": "ann", "exp": exp.Unix()})
	}
	table, err := token.New(map[string]*policy.Principal{"tok-ann": {Subject: "ann"}})
	if err != nil {
		t.Fatal(err)
	}
	leaky := tokenAuthFunc(func(_ context.Context, tok string) (*policy.Principal, error) {
		return nil, errors.New("no such token " + tok)
	})
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		authn  mcpguard.Authenticator
		tok    string
		detail string
	}{
		{"wrong_audience", mcpguard.Bearer(v), sign("other", time.Now().Add(time.Hour)), "bearer token refused: token: invalid JWT: wrong audience"},
		{"expired", mcpguard.Bearer(v), sign("mcp", time.Now().Add(-time.Hour)), "bearer token refused: token: invalid JWT: expired"},
		{"unknown_static", mcpguard.BearerTokens(table), "tok-bob", "unknown bearer token"},
		{"other_authenticator", mcpguard.Bearer(leaky), "secret-token-value", "bearer token refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := &memSink{}
			g, err := mcpguard.New(pol, c.authn, &mcpguard.Options{Audit: sink})
			if err != nil {
				t.Fatal(err)
			}
			h, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return textResult("ran"), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			hdr := http.Header{"Authorization": {"Bearer " + c.tok}}
			res, err := h(context.Background(), &mcp.CallToolRequest{
				Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)},
				Extra:  &mcp.RequestExtra{Header: hdr},
			})
			if err != nil || res == nil || !res.IsError {
				t.Fatalf("call: %v %+v, want a refusal", err, res)
			}
			js, _ := json.Marshal(res)
			if d, ok := mcpguard.DenialOf(res, nil); !ok || d.Code != mcpguard.CodeUnauthenticated || d.Message != "invalid bearer token" {
				t.Errorf("the client was told %s, want UNAUTHENTICATED \"invalid bearer token\" alone", js)
			}
			if strings.Contains(string(js), "audience") || strings.Contains(string(js), "expired") {
				t.Errorf("the client was told the reason: %s", js)
			}
			evs := sink.all()
			if len(evs) != 1 {
				t.Fatalf("%d audit records, want 1", len(evs))
			}
			if evs[0].Detail != c.detail {
				t.Errorf("audit detail %q, want %q", evs[0].Detail, c.detail)
			}
			if strings.Contains(evs[0].Detail, c.tok) {
				t.Errorf("the audit detail quotes the token: %q", evs[0].Detail)
			}
		})
	}
}

// TestReview56ChainAuthenticateRecordsWhy: the stand-alone Authenticate
// step (examples/ticket's REST adapter uses it) recorded a refused bearer
// token with no detail, while a Guard records the reason: over REST an
// operator could not tell an expired token from one for another audience.
func TestReview56ChainAuthenticateRecordsWhy(t *testing.T) {
	v, signClaims := review56IdP(t)
	tok := signClaims(jwt.MapClaims{"aud": "other", "sub": "ann", "exp": time.Now().Add(time.Hour).Unix()})
	sink := &memSink{}
	h := mcpguard.Chain(mustAudit(t, sink, nil), mcpguard.Authenticate(mcpguard.Bearer(v)))(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("ran"), nil
		})
	res, err := h(context.Background(), &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)},
		Extra:  &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer " + tok}}},
	})
	if err != nil || res == nil || !res.IsError {
		t.Fatalf("call: %v %+v, want a refusal", err, res)
	}
	evs := sink.all()
	if len(evs) != 1 || evs[0].Detail != "bearer token refused: token: invalid JWT: wrong audience" {
		t.Errorf("records %+v, want one whose detail gives the reason", evs)
	}
}

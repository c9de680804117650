package mcpguard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TestReview57BearerKeySetDown: with Bearer over a JWT whose keys come from
// a JWK Set URL, a token signed with a key the provider has just rotated in
// (its kid not in the set) while the URL is down was refused
// UNAUTHENTICATED "invalid bearer token": the client got a new token,
// naming the same kid, and was refused again for the whole outage. The
// token package now says it could not judge such a token; Bearer refuses it
// UPSTREAM_UNAVAILABLE, retryable, the audit record saying why, and accepts
// it once the set can be fetched again.
func TestReview57BearerKeySetDown(t *testing.T) {
	idp := testsvc.StartJWKS(t, "a")
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	ks, err := token.NewRemoteKeySet(context.Background(), idp.URL, &token.RemoteKeySetOptions{Now: clock, ErrorHandler: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := token.NewJWT(token.JWTConfig{KeySet: ks, Issuer: "https://idp.example", Audience: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, mcpguard.Bearer(v), &mcpguard.Options{Audit: sink, Logger: quiet})
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
	tokB := idp.Sign(t, "b", jwt.MapClaims{"iss": "https://idp.example", "aud": "mcp", "sub": "ann",
		"exp": time.Now().Add(time.Hour).Unix()})
	callWith := func(tok string) (*mcp.CallToolResult, error) {
		return h(context.Background(), &mcp.CallToolRequest{
			Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)},
			Extra:  &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer " + tok}}},
		})
	}

	// The provider rotates b in while its JWK Set URL is down.
	idp.Publish(t, "a", "b")
	idp.SetDown(true)
	advance(2 * time.Minute) // past MinRefreshInterval: the miss fetches, and fails
	res, err := callWith(tokB)
	d, ok := mcpguard.DenialOf(res, err)
	if !ok || d.Code != mcpguard.CodeUpstreamUnavailable || d.RetryAfter < 0 {
		js, _ := json.Marshal(res)
		t.Errorf("a token of a key rotated in while the set is down: %s %v; want UPSTREAM_UNAVAILABLE, retryable", js, err)
	}
	evs := sink.all()
	if len(evs) != 1 || evs[0].Code != string(mcpguard.CodeUpstreamUnavailable) ||
		evs[0].Detail != "the token's key is not in the JWK Set, which could not be fetched" {
		t.Errorf("records %+v; want one UPSTREAM_UNAVAILABLE saying the set could not be fetched", evs)
	}

	idp.SetDown(false)
	advance(2 * time.Minute)
	res, err = callWith(tokB)
	if _, refused := mcpguard.DenialOf(res, err); refused || err != nil {
		js, _ := json.Marshal(res)
		t.Errorf("the same token once the set is back: %s %v; want it accepted", js, err)
	}
}

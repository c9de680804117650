package mcpguard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
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
	clock := testsvc.NewClock()
	v := idp.Verifier(t, clock.Now)
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
	tokB := idp.Sign(t, "b", testsvc.Claims("ann", "", testsvc.JWKSAudience, time.Now().Add(time.Hour)))
	callWith := func(tok string) (*mcp.CallToolResult, error) {
		return h(context.Background(), &mcp.CallToolRequest{
			Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)},
			Extra:  &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer " + tok}}},
		})
	}

	// The provider rotates b in while its JWK Set URL is down.
	idp.Publish(t, "a", "b")
	idp.SetDown(true)
	clock.Advance(2 * time.Minute) // past MinRefreshInterval: the miss fetches, and fails
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
	clock.Advance(2 * time.Minute)
	res, err = callWith(tokB)
	if _, refused := mcpguard.DenialOf(res, err); refused || err != nil {
		js, _ := json.Marshal(res)
		t.Errorf("the same token once the set is back: %s %v; want it accepted", js, err)
	}
}

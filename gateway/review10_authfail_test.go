package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestAuthenticatorUnavailable: an authenticator that could not judge a
// token (its error wraps ErrAuthenticatorUnavailable, or
// token.ErrIntrospectionFailed) gets -32003 with 502, or 504 for a timeout,
// not 401: a 401 with error="invalid_token" would send a client with a
// good token to authorize again against a failing authorization server.
// The answer carries no WWW-Authenticate (with resource metadata on, no
// stray parameters either), the request is not forwarded, and a refusal
// (any other error) is still 401.
func TestAuthenticatorUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		status    int
		code      int
		challenge bool
	}{
		{"gateway_sentinel", fmt.Errorf("idp: %w", ErrAuthenticatorUnavailable), http.StatusBadGateway, CodeUpstreamUnavailable, false},
		{"introspection_failed", fmt.Errorf("%w: endpoint x: status 500", token.ErrIntrospectionFailed), http.StatusBadGateway, CodeUpstreamUnavailable, false},
		{"introspection_timeout", fmt.Errorf("%w: endpoint x: %w", token.ErrIntrospectionFailed, context.DeadlineExceeded), http.StatusGatewayTimeout, CodeUpstreamUnavailable, false},
		{"refusal", fmt.Errorf("%w: inactive", token.ErrInvalidToken), http.StatusUnauthorized, CodeUnauthenticated, true},
		{"plain_timeout_is_a_refusal", context.DeadlineExceeded, http.StatusUnauthorized, CodeUnauthenticated, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &downstream{}
			dsrv := newServer(t, d)
			auth := AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) { return nil, tc.err })
			md := &oauthex.ProtectedResourceMetadata{Resource: "https://gw.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com"}}
			g, err := New(dsrv.URL+"/mcp", auth, &Options{Logger: discardLogger(), ResourceMetadata: md})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			got := rg.post(t, viewer, call("5", "get_customer_record", ""))
			if got.status != tc.status {
				t.Fatalf("status %d, want %d: %s", got.status, tc.status, got.body)
			}
			id, code, data := rpcErr(t, got.body)
			if code != tc.code || string(id) != "5" || data["correlation_id"] == "" {
				t.Errorf("code %d id %s data %v, want %d, 5 and a correlation id", code, id, data, tc.code)
			}
			wa := got.header.Values("WWW-Authenticate")
			switch {
			case tc.challenge && (len(wa) != 1 || !strings.HasPrefix(wa[0], `Bearer realm="mcp-gateway", error="invalid_token", resource_metadata=`)):
				t.Errorf("WWW-Authenticate %q, want the invalid_token challenge naming the metadata", wa)
			case !tc.challenge && len(wa) != 0:
				t.Errorf("WWW-Authenticate %q on a %d: the token was not judged", wa, got.status)
			}
			if n := len(d.log()); n != 0 {
				t.Errorf("the downstream received %d requests, want none", n)
			}
		})
	}
	if errors.Is(ErrAuthenticatorUnavailable, token.ErrInvalidToken) {
		t.Error("ErrAuthenticatorUnavailable unwraps to a refusal")
	}
}

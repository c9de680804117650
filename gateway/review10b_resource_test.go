package gateway

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestResourceMetadataRefusesDotSegments: a Resource whose path has a "."
// or ".." segment names a well-known URI that the gateway serves
// verbatim (".../oauth-protected-resource/a/../mcp") but that a client
// resolving the URL as RFC 3986 says (section 5.2.4: browsers, most HTTP
// libraries) requests without them, and gets 404: discovery fails for
// every such client. New refuses it, as it refuses a path in another
// escaping; the same path without dot segments is accepted.
func TestResourceMetadataRefusesDotSegments(t *testing.T) {
	for _, resource := range []string{
		"https://gw.example.com/a/../mcp",
		"https://gw.example.com/./mcp",
		"https://gw.example.com/mcp/..",
		"https://gw.example.com/mcp/.",
	} {
		md := &oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{"https://idp.example.com"}}
		_, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{ResourceMetadata: md})
		if err == nil || !strings.Contains(err.Error(), "dot segment") {
			t.Errorf("Resource %q: New returned %v, want an error about its dot segment", resource, err)
		}
	}
	for _, resource := range []string{"https://gw.example.com/mcp", "https://gw.example.com/a.b/..c/mcp."} {
		md := &oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{"https://idp.example.com"}}
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{ResourceMetadata: md}); err != nil {
			t.Errorf("Resource %q: %v", resource, err)
		}
	}
}

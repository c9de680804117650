package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestReview50ResourceWithoutScopes: metadata without ScopesSupported puts
// no scope parameter in a 401's challenge, not even an empty one, and none
// in the document.
func TestReview50ResourceWithoutScopes(t *testing.T) {
	rg := newMetadataRig(t, "/mcp", func(m *oauthex.ProtectedResourceMetadata) { m.ScopesSupported = nil })
	r := &rig{url: rg.url}
	ch := challenge401(t, r.post(t, "", call("1", "get_customer_record", "")))
	want := map[string]string{
		"realm":             "mcp-gateway",
		"resource_metadata": rg.url + "/.well-known/oauth-protected-resource/mcp",
	}
	if diff := cmp.Diff(want, ch.Params); diff != "" {
		t.Errorf("challenge parameters (-want +got):\n%s", diff)
	}
	resp, err := http.Get(rg.url + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if v, ok := doc["scopes_supported"]; ok {
		t.Errorf("the document has scopes_supported %v, want none", v)
	}
}

// TestReview50ResourceUnparsable: a Resource or an authorization server
// url.Parse refuses is refused by New with an error naming the field, not a
// panic on the nil URL.
func TestReview50ResourceUnparsable(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   oauthex.ProtectedResourceMetadata
		want string
	}{
		{"resource_bad_escape", oauthex.ProtectedResourceMetadata{Resource: "https://gw.example.com/%zz", AuthorizationServers: []string{"https://idp.example.com"}}, "ResourceMetadata.Resource: \"https://gw.example.com/%zz\": want an absolute https URL"},
		{"resource_bad_host", oauthex.ProtectedResourceMetadata{Resource: "https://[::1/mcp", AuthorizationServers: []string{"https://idp.example.com"}}, "ResourceMetadata.Resource: \"https://[::1/mcp\": want an absolute https URL"},
		{"issuer_bad_escape", oauthex.ProtectedResourceMetadata{Resource: "https://gw.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com/%zz"}}, "ResourceMetadata.AuthorizationServers[0]: \"https://idp.example.com/%zz\": want an absolute https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := tc.md
			_, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger(), ResourceMetadata: &md})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestReview50ScopeTokenEdges: a scope token (RFC 6749, section 3.3) is
// %x21 / %x23-5B / %x5D-7E, one or more, its first character checked like
// the rest; the metadata's scopes and URLs are held to it.
func TestReview50ScopeTokenEdges(t *testing.T) {
	var all []byte
	for c := byte(0x21); c <= 0x7e; c++ {
		if c != '"' && c != '\\' {
			all = append(all, c)
		}
	}
	for _, s := range []string{"!", "~", "!~", string(all)} {
		if !isScopeToken(s) {
			t.Errorf("isScopeToken(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", " ", " x", "x ", "\"x", "\\x", "x\"", "\x7fx", "x\x7f", "\x20", "\x00", "x\x80", "é"} {
		if isScopeToken(s) {
			t.Errorf("isScopeToken(%q) = true, want false", s)
		}
	}
	base := func() *oauthex.ProtectedResourceMetadata {
		return &oauthex.ProtectedResourceMetadata{Resource: "https://gw.example.com/~me/mcp", AuthorizationServers: []string{"https://idp.example.com"}}
	}
	md := base()
	md.ScopesSupported = []string{"!", "~"}
	rm, err := newResourceMetadata(md)
	if err != nil {
		t.Fatalf("Resource with ~ and scopes ! and ~: %v", err)
	}
	if want := `, resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/~me/mcp", scope="! ~"`; rm.challenge != want {
		t.Errorf("challenge %s, want %s", rm.challenge, want)
	}
	md = base()
	md.ScopesSupported = []string{"x\x7f"}
	if _, err := newResourceMetadata(md); err == nil || !strings.Contains(err.Error(), "not an OAuth scope token") {
		t.Errorf("a scope ending in DEL: %v, want a scope token error", err)
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// metadataRig is a gateway with resource metadata whose Resource is its own
// loopback URL plus path, in front of a recording downstream.
type metadataRig struct {
	url, resource string
	down          *downstream
}

func newMetadataRig(t *testing.T, path string, edit func(*oauthex.ProtectedResourceMetadata)) *metadataRig {
	t.Helper()
	d := &downstream{}
	dsrv := newServer(t, d)
	var h http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	base := "http://" + srv.Listener.Addr().String()
	md := &oauthex.ProtectedResourceMetadata{
		Resource:             base + path,
		AuthorizationServers: []string{"https://idp.example.com/realms/mcp"},
		ScopesSupported:      []string{"mcp:tools", "offline_access"},
		ResourceName:         "refunds",
	}
	if edit != nil {
		edit(md)
	}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), ResourceMetadata: md})
	if err != nil {
		t.Fatal(err)
	}
	h = g
	srv.Start()
	t.Cleanup(srv.Close)
	return &metadataRig{url: srv.URL, resource: md.Resource, down: d}
}

// challenge401 returns the one challenge of got, a 401 whose
// WWW-Authenticate the go-sdk's client parses (oauthex.ParseWWWAuthenticate).
func challenge401(t *testing.T, got reply) oauthex.Challenge {
	t.Helper()
	if got.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401: %s", got.status, got.body)
	}
	chs, err := oauthex.ParseWWWAuthenticate(got.header.Values("WWW-Authenticate"))
	if err != nil || len(chs) != 1 {
		t.Fatalf("WWW-Authenticate %q: %v, %d challenges", got.header.Values("WWW-Authenticate"), err, len(chs))
	}
	return chs[0]
}

// TestResourceMetadataDiscovery follows the MCP authorization
// specification's discovery as the go-sdk's own client code does it: a
// request without a token gets 401 whose challenge names the metadata
// (oauthex.ParseWWWAuthenticate), and oauthex.GetProtectedResourceMetadata
// fetches and checks it (resource equal to the gateway's, authorization
// servers well-formed). The 401 for a bad token names it too, with
// error="invalid_token", and nothing reaches the downstream.
func TestResourceMetadataDiscovery(t *testing.T) {
	rg := newMetadataRig(t, "/mcp", nil)
	r := &rig{url: rg.url}
	for _, tc := range []struct {
		name, auth   string
		invalidToken bool
	}{
		{name: "no_token"},
		{name: "bad_token", auth: "Bearer nope", invalidToken: true},
		{name: "wrong_scheme", auth: "Basic dmlld2VyOng="}, // another method: no error code (RFC 6750, 3.1)
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := challenge401(t, r.post(t, tc.auth, call("1", "get_customer_record", "")))
			want := map[string]string{
				"realm":             "mcp-gateway",
				"resource_metadata": rg.url + "/.well-known/oauth-protected-resource/mcp",
				"scope":             "mcp:tools offline_access",
			}
			if tc.invalidToken {
				want["error"] = "invalid_token"
			}
			if ch.Scheme != "bearer" {
				t.Errorf("scheme %q, want bearer", ch.Scheme)
			}
			if diff := cmp.Diff(want, ch.Params); diff != "" {
				t.Errorf("challenge parameters (-want +got):\n%s", diff)
			}
			prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), ch.Params["resource_metadata"], rg.resource, http.DefaultClient)
			if err != nil {
				t.Fatal(err)
			}
			wantMD := &oauthex.ProtectedResourceMetadata{
				Resource:               rg.resource,
				AuthorizationServers:   []string{"https://idp.example.com/realms/mcp"},
				ScopesSupported:        []string{"mcp:tools", "offline_access"},
				BearerMethodsSupported: []string{"header"},
				ResourceName:           "refunds",
			}
			if diff := cmp.Diff(wantMD, prm); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
	if got := rg.down.log(); len(got) != 0 {
		t.Errorf("the downstream received %d requests, want none", len(got))
	}
}

// TestResourceMetadataEndpoint checks the metadata document's own answers:
// public (no token), GET and HEAD with its length, a CORS preflight, 405
// for other methods; and that the well-known path of a Resource without a
// path, or with "/" alone, is the bare suffix.
func TestResourceMetadataEndpoint(t *testing.T) {
	do := func(t *testing.T, method, url string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	rg := newMetadataRig(t, "/mcp", nil)
	wk := rg.url + "/.well-known/oauth-protected-resource/mcp"

	resp, body := do(t, http.MethodGet, wk)
	var doc map[string]any
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &doc) != nil {
		t.Fatalf("GET: %s, %q, %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if doc["resource"] != rg.resource || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET: resource %v, CORS %q", doc["resource"], resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, head := do(t, http.MethodHead, wk)
	if resp.StatusCode != http.StatusOK || head != "" || resp.ContentLength != int64(len(body)) {
		t.Errorf("HEAD: %s, body %q, length %d want %d", resp.Status, head, resp.ContentLength, len(body))
	}
	resp, _ = do(t, http.MethodOptions, wk)
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "GET") {
		t.Errorf("OPTIONS: %s, allow methods %q", resp.Status, resp.Header.Get("Access-Control-Allow-Methods"))
	}
	resp, _ = do(t, http.MethodPost, wk)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("POST: %s, Allow %q", resp.Status, resp.Header.Get("Allow"))
	}
	for _, other := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp/", "/.well-known/oauth-protected-resource/other"} {
		if resp, _ := do(t, http.MethodGet, rg.url+other); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", other, resp.Status)
		}
	}
	if got := rg.down.log(); len(got) != 0 {
		t.Errorf("the downstream received %d requests, want none", len(got))
	}

	for _, path := range []string{"", "/"} {
		rg := newMetadataRig(t, path, nil)
		if resp, body := do(t, http.MethodGet, rg.url+"/.well-known/oauth-protected-resource"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"resource":"`+rg.resource+`"`) {
			t.Errorf("Resource %q: GET the bare suffix: %s %s", rg.resource, resp.Status, body)
		}
	}
}

// TestResourceMetadataOff checks that without ResourceMetadata the
// challenge names no metadata and the well-known path is not found.
func TestResourceMetadataOff(t *testing.T) {
	rg := newRig(t, nil)
	got := rg.post(t, "", call("1", "get_customer_record", ""))
	if wa := got.header.Get("WWW-Authenticate"); wa != `Bearer realm="mcp-gateway"` {
		t.Errorf("WWW-Authenticate %q", wa)
	}
	resp, err := http.Get(rg.url + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("well-known path without metadata: %s, want 404", resp.Status)
	}
}

// TestResourceMetadataRefused checks every refusal of New for a
// ResourceMetadata the gateway could not serve truthfully.
func TestResourceMetadataRefused(t *testing.T) {
	ok := func() *oauthex.ProtectedResourceMetadata {
		return &oauthex.ProtectedResourceMetadata{Resource: "https://gw.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com"}}
	}
	tests := []struct {
		name string
		edit func(*oauthex.ProtectedResourceMetadata)
		opts Options
		want string
	}{
		{"no_resource", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "" }, Options{}, "Resource: empty"},
		{"relative", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "/mcp" }, Options{}, "absolute https URL"},
		{"no_host", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https:///mcp" }, Options{}, "absolute https URL"},
		{"opaque", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https:gw.example.com" }, Options{}, "absolute https URL"},
		{"http_remote", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "http://gw.example.com/mcp" }, Options{}, "http only on a loopback host"},
		{"other_scheme", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "ftp://gw.example.com/mcp" }, Options{}, "want https"},
		{"userinfo", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://u:p@gw.example.com/mcp" }, Options{}, "no user information"},
		{"fragment", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://gw.example.com/mcp#x" }, Options{}, "no fragment"},
		{"empty_fragment", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://gw.example.com/mcp#" }, Options{}, "no fragment"},
		{"query", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://gw.example.com/mcp?x=1" }, Options{}, "no query"},
		{"empty_query", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://gw.example.com/mcp?" }, Options{}, "no query"},
		{"odd_escaping", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://gw.example.com/a%2Fb" }, Options{}, "plain escaping"},
		{"unicode_host", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://gätewäy.example/mcp" }, Options{}, "printable ASCII"},
		{"space", func(m *oauthex.ProtectedResourceMetadata) {
			m.AuthorizationServers = []string{"https://idp.example/a b"}
		}, Options{}, "printable ASCII"},
		{"no_issuer", func(m *oauthex.ProtectedResourceMetadata) { m.AuthorizationServers = nil }, Options{}, "at least one"},
		{"script_issuer", func(m *oauthex.ProtectedResourceMetadata) { m.AuthorizationServers = []string{"javascript:alert(1)"} }, Options{}, "AuthorizationServers[0]"},
		{"http_issuer", func(m *oauthex.ProtectedResourceMetadata) {
			m.AuthorizationServers = []string{"https://a.example.com", "http://idp.example.com"}
		}, Options{}, "AuthorizationServers[1]"},
		{"query_bearer", func(m *oauthex.ProtectedResourceMetadata) { m.BearerMethodsSupported = []string{"header", "query"} }, Options{}, "BearerMethodsSupported"},
		{"scope_space", func(m *oauthex.ProtectedResourceMetadata) { m.ScopesSupported = []string{"a b"} }, Options{}, "scope token"},
		{"scope_quote", func(m *oauthex.ProtectedResourceMetadata) { m.ScopesSupported = []string{`a"`} }, Options{}, "scope token"},
		{"scope_empty", func(m *oauthex.ProtectedResourceMetadata) { m.ScopesSupported = []string{""} }, Options{}, "scope token"},
		{"path_collision", func(m *oauthex.ProtectedResourceMetadata) {}, Options{Path: "/.well-known/oauth-protected-resource/mcp"}, "also the gateway's Path"},
		{"health_collision", func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://gw.example.com" }, Options{HealthPath: "/.well-known/oauth-protected-resource"}, "also the gateway's Path or HealthPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := ok()
			tt.edit(md)
			o := tt.opts
			o.ResourceMetadata = md
			_, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	for _, good := range []string{"https://gw.example.com/mcp", "http://localhost:8080/mcp", "http://127.0.0.1/mcp", "http://[::1]:9/x/y"} {
		md := ok()
		md.Resource = good
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{ResourceMetadata: md}); err != nil {
			t.Errorf("Resource %q: %v", good, err)
		}
	}
}

// TestResourceMetadataCopied checks that New copies the metadata: the
// caller's later changes to it, or to its slices, are not served.
func TestResourceMetadataCopied(t *testing.T) {
	d := &downstream{}
	dsrv := newServer(t, d)
	md := &oauthex.ProtectedResourceMetadata{
		Resource:             "https://gw.example.com/mcp",
		AuthorizationServers: []string{"https://idp.example.com"},
		ScopesSupported:      []string{"mcp"},
	}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), ResourceMetadata: md})
	if err != nil {
		t.Fatal(err)
	}
	md.Resource = "https://evil.example.com/mcp"
	md.AuthorizationServers[0] = "https://evil.example.com"
	md.ScopesSupported[0] = "evil"
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	if body := w.Body.String(); w.Code != http.StatusOK || strings.Contains(body, "evil") {
		t.Errorf("served %d %s after the caller changed its struct", w.Code, body)
	}
	w = httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(call("1", "x", ""))))
	if wa := w.Header().Get("WWW-Authenticate"); strings.Contains(wa, "evil") || !strings.Contains(wa, `scope="mcp"`) {
		t.Errorf("WWW-Authenticate %q after the caller changed its struct", wa)
	}
}

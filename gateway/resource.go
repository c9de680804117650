package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// wellKnownResource is the well-known URI suffix of OAuth 2.0 protected
// resource metadata (RFC 9728, section 3).
const wellKnownResource = "/.well-known/oauth-protected-resource"

// resourceMetadata is Options.ResourceMetadata as the gateway serves it.
type resourceMetadata struct {
	path      string // the path of the well-known URI, which the gateway serves
	body      []byte // the metadata document
	challenge string // the auth-params added to every 401's challenge
}

// newResourceMetadata checks m (see Options.ResourceMetadata) and returns
// what the gateway serves and says for it; nil for a nil m.
func newResourceMetadata(m *oauthex.ProtectedResourceMetadata) (*resourceMetadata, error) {
	if m == nil {
		return nil, nil
	}
	md := *m
	u, err := checkMetadataURL(md.Resource)
	if err != nil {
		return nil, fmt.Errorf("gateway: ResourceMetadata.Resource: %v", err)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, fmt.Errorf("gateway: ResourceMetadata.Resource %q: want no query", md.Resource)
	}
	if u.RawPath != "" {
		// The well-known URI is served and named from the decoded path:
		// an escaping url.URL would not reproduce is refused.
		return nil, fmt.Errorf("gateway: ResourceMetadata.Resource %q: want a path in its plain escaping", md.Resource)
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			// A client resolving the URL (RFC 3986, section 5.2.4)
			// would ask for a well-known URI without it, which is not
			// the one served.
			return nil, fmt.Errorf("gateway: ResourceMetadata.Resource %q: want a path without a dot segment (. or ..)", md.Resource)
		}
	}
	if len(md.AuthorizationServers) == 0 {
		return nil, errors.New("gateway: ResourceMetadata.AuthorizationServers: want at least one, the issuers of the tokens the gateway accepts")
	}
	for i, as := range md.AuthorizationServers {
		if _, err := checkMetadataURL(as); err != nil {
			return nil, fmt.Errorf("gateway: ResourceMetadata.AuthorizationServers[%d]: %v", i, err)
		}
	}
	switch {
	case len(md.BearerMethodsSupported) == 0:
		md.BearerMethodsSupported = []string{"header"}
	case !slices.Equal(md.BearerMethodsSupported, []string{"header"}):
		return nil, fmt.Errorf("gateway: ResourceMetadata.BearerMethodsSupported %q: the gateway reads a token only from the Authorization header; want [\"header\"] or none", md.BearerMethodsSupported)
	}
	for _, s := range md.ScopesSupported {
		if !isScopeToken(s) {
			return nil, fmt.Errorf("gateway: ResourceMetadata.ScopesSupported: %q is not an OAuth scope token (RFC 6749, section 3.3)", s)
		}
	}
	md.AuthorizationServers = slices.Clone(md.AuthorizationServers)
	md.ScopesSupported = slices.Clone(md.ScopesSupported)
	body, err := json.Marshal(&md)
	if err != nil {
		return nil, fmt.Errorf("gateway: ResourceMetadata: %v", err)
	}
	// RFC 9728, section 3.1: the well-known suffix goes between the host
	// and the path, a path of "/" alone counting as none.
	path := wellKnownResource
	if u.Path != "" && u.Path != "/" {
		path += u.Path
	}
	where := url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}
	challenge := ", resource_metadata=" + strconv.Quote(where.String())
	if len(md.ScopesSupported) > 0 {
		challenge += ", scope=" + strconv.Quote(strings.Join(md.ScopesSupported, " "))
	}
	return &resourceMetadata{path: path, body: body, challenge: challenge}, nil
}

// checkMetadataURL parses s, a URL of protected resource metadata: absolute,
// https, or http on a loopback host (for development), with a host, of
// printable ASCII, without user information or fragment.
func checkMetadataURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return nil, errors.New("empty; want an absolute https URL")
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("%q: want an absolute https URL", s)
	case !isScopeToken(s):
		// The challenge quotes the URL as it is: printable ASCII, no
		// space, quote or backslash (a punycode host, an escaped path).
		return nil, fmt.Errorf("%q: want a URL of printable ASCII (a punycode host, a percent-escaped path)", s)
	case u.User != nil:
		return nil, fmt.Errorf("%q: want no user information", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return nil, fmt.Errorf("%q: want no fragment", s)
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback.IsHost(u.Host):
	default:
		return nil, fmt.Errorf("%q: want https (http only on a loopback host)", s)
	}
	return u, nil
}

// isScopeToken reports whether s is a scope-token of RFC 6749, section
// 3.3: one or more of %x21 / %x23-5B / %x5D-7E (printable ASCII but space,
// quote and backslash), so it needs no escaping in a quoted challenge
// parameter.
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// serveResourceMetadata answers a request for the metadata document. It is
// public (no token), and readable from any origin, as browser-based MCP
// clients need it before they hold a token.
func (g *Gateway) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(g.resource.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			g.writeOwn(w, g.resource.body)
		}
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, Mcp-Protocol-Version")
		w.WriteHeader(http.StatusNoContent)
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpguard/mcpguard/internal/loopback"
)

// origins is Options.AllowedOrigins as the gateway checks them.
type origins struct {
	any     bool
	allowed map[string]bool // "scheme://host[:port]", lower case
}

// newOrigins checks list (see Options.AllowedOrigins).
func newOrigins(list []string) (origins, error) {
	o := origins{allowed: map[string]bool{}}
	for _, s := range list {
		if s == "*" {
			o.any = true
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") || u.Opaque != "" {
			return o, fmt.Errorf("gateway: AllowedOrigins: %q is not an origin (scheme://host[:port], http or https, nothing after) or \"*\"", s)
		}
		o.allowed[strings.ToLower(s)] = true
	}
	return o, nil
}

// checkOrigin refuses a request that a web page may have sent without the
// user's say, before anything else is read of it (the MCP Streamable HTTP
// transport: servers must validate Origin, against DNS rebinding): see
// Options.AllowedOrigins and Options.DisableLocalhostProtection.
func (g *Gateway) checkOrigin(r *http.Request) *rpcError {
	if !g.noLocalhostGuard && loopback.Rebound(r) {
		return errOrigin("Host not allowed: the request came to a loopback address under another name (DNS rebinding)")
	}
	vals, ok := r.Header["Origin"]
	if !ok || g.origins.any {
		return nil
	}
	if len(vals) != 1 {
		return errOrigin("more than one Origin header")
	}
	origin := vals[0]
	if g.origins.allowed[strings.ToLower(origin)] {
		return nil
	}
	// The request's own origin: a page the gateway's host serves.
	if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") &&
		u.Path == "" && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return errOrigin("Origin not allowed")
}

func errOrigin(why string) *rpcError {
	return &rpcError{code: CodeForbidden, status: http.StatusForbidden, contract: "FORBIDDEN", message: "Forbidden: " + why}
}

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
// Options.AllowedOrigins and Options.DisableLocalhostProtection. For a
// request from another origin that is allowed, it returns that origin,
// which the answer names in its CORS headers.
func (g *Gateway) checkOrigin(r *http.Request) (cors string, e *rpcError) {
	if !g.noLocalhostGuard && loopback.Rebound(r) {
		return "", errOrigin("Host not allowed: the request came to a loopback address under another name (DNS rebinding)")
	}
	vals, ok := r.Header["Origin"]
	if !ok {
		return "", nil
	}
	if len(vals) != 1 {
		return "", errOrigin("more than one Origin header")
	}
	origin := vals[0]
	// The request's own origin: a page the gateway's host serves, which
	// needs no CORS.
	if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") &&
		u.Path == "" && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return "", nil
	}
	if g.origins.any || g.origins.allowed[strings.ToLower(origin)] {
		return origin, nil
	}
	return "", errOrigin("Origin not allowed")
}

// The CORS answer to a page of an allowed origin: the request headers it
// may send (a preflight's), and the answer's headers it may read.
const (
	corsAllowMethods  = "GET, POST, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
	corsExposeHeaders = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After"
)

// preflight answers a CORS preflight (OPTIONS) from an allowed origin.
// It needs no token: a browser sends none with it.
func preflight(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", "600")
	h.Add("Vary", "Origin")
	w.WriteHeader(http.StatusNoContent)
}

// A corsWriter adds, once, before the answer's header is written, the CORS
// headers that let a page of origin read it, in place of any the
// downstream sent (the gateway decides which origins may call it).
type corsWriter struct {
	http.ResponseWriter
	origin string
	done   bool
}

func (w *corsWriter) set() {
	if w.done {
		return
	}
	w.done = true
	h := w.ResponseWriter.Header()
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			delete(h, k)
		}
	}
	h.Set("Access-Control-Allow-Origin", w.origin)
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	h.Add("Vary", "Origin")
}

func (w *corsWriter) WriteHeader(code int) {
	w.set()
	w.ResponseWriter.WriteHeader(code)
}

func (w *corsWriter) Write(b []byte) (int, error) {
	w.set()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer (to
// flush an event stream).
func (w *corsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func errOrigin(why string) *rpcError {
	return &rpcError{code: CodeForbidden, status: http.StatusForbidden, contract: "FORBIDDEN", message: "Forbidden: " + why}
}

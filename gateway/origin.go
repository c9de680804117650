package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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
		if strings.Contains(s, "*") {
			// Browsers send an origin whole: a pattern would match none.
			return o, fmt.Errorf("gateway: AllowedOrigins: %q: a pattern matches no origin a browser sends; list each origin (or \"*\" alone for any)", s)
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") || u.Opaque != "" {
			return o, fmt.Errorf("gateway: AllowedOrigins: %q is not an origin (scheme://host[:port], http or https, nothing after) or \"*\"", s)
		}
		// Browsers send an origin's host in ASCII (a name's punycode form)
		// and its port in decimal without leading zeros, left out when it
		// is the scheme's: an entry spelled otherwise would never match.
		if !isASCII(u.Host) || strings.Contains(s, "%") {
			return o, fmt.Errorf("gateway: AllowedOrigins: %q: write the host as browsers send it: ASCII, an internationalized name in its xn-- form, no %%-escapes", s)
		}
		if p := u.Port(); strings.HasSuffix(u.Host, ":") || p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
				return o, fmt.Errorf("gateway: AllowedOrigins: %q: not a port browsers send (1-65535, no leading zero)", s)
			}
		}
		o.allowed[u.Scheme+"://"+withoutDefaultPort(u.Scheme, u.Host)] = true
	}
	return o, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// withoutDefaultPort returns hostport (an origin's host, or a Host header)
// in lower case and without scheme's default port, which browsers leave
// out of Origin and Host.
func withoutDefaultPort(scheme, hostport string) string {
	hostport = strings.ToLower(hostport)
	def := ":80"
	if scheme == "https" {
		def = ":443"
	}
	if h, ok := strings.CutSuffix(hostport, def); ok && (!strings.Contains(h, ":") || strings.HasSuffix(h, "]")) {
		return h
	}
	return hostport
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
		u.Path == "" && u.Host != "" && withoutDefaultPort(u.Scheme, u.Host) == withoutDefaultPort(u.Scheme, r.Host) {
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
	corsAllowHeaders  = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"
	paramPrefix       = "Mcp-Param-"
	corsExposeHeaders = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After"
)

// preflight answers a CORS preflight (OPTIONS) from an allowed origin.
// It needs no token: a browser sends none with it. The headers allowed are
// corsAllowHeaders and the Mcp-Param-* ones the preflight asks for (their
// names come from the tools' input schemas, so no list can hold them).
func preflight(w http.ResponseWriter, r *http.Request, origin string) {
	allow := corsAllowHeaders
	for _, v := range r.Header["Access-Control-Request-Headers"] {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if len(name) > len(paramPrefix) && strings.EqualFold(name[:len(paramPrefix)], paramPrefix) && isHeaderName(name) {
				allow += ", " + name
			}
		}
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", allow)
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

// isHeaderName reports whether s is a field name (RFC 9110 token).
func isHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

func errOrigin(why string) *rpcError {
	return &rpcError{code: CodeForbidden, status: http.StatusForbidden, contract: "FORBIDDEN", message: "Forbidden: " + why}
}

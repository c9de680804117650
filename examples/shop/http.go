package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/mcpguard/mcpguard/internal/streamstop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpOptions are the Streamable HTTP settings.
type httpOptions struct {
	allowedHosts   []string // Host header values, "host:port" or "host:*"
	allowedOrigins []string // Origin header values, exact or "scheme://host:*"
}

// defaultHosts are the Host values accepted by default: loopback names on
// any port.
func defaultHosts() []string { return []string{"127.0.0.1:*", "localhost:*", "[::1]:*"} }

// mcpHandler serves server at /mcp: Streamable HTTP, stateless, with JSON
// responses, behind Host and Origin protection. hostOrigin's Host
// allowlist is the DNS rebinding protection: by default it holds the
// loopback names only, which is what the go-sdk's own check (a loopback
// connection with a non-loopback Host) would allow, so that check is
// turned off: left on, it refused every name --allowed-hosts adds on a
// loopback address (a proxy on the same machine passing on its own name),
// whatever the allowlist said. A call's context ends with its HTTP
// request (on 2026-07-28, where the request is the call's whole life), so
// a read the client abandons stops; the guard detaches writes from that
// cancellation, so a started change still runs to its end.
func mcpHandler(server *mcp.Server, o httpOptions, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", hostOrigin(o, mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, PropagateRequestCancellation: true,
			DisableLocalhostProtection: true, Logger: log})))
	return mux
}

// hostOrigin refuses with 403 a request whose Host is not allowed (DNS
// rebinding: a page on another name that resolves here), or that carries
// an Origin (a browser page) that is not allowed, or several (readers
// differ on which counts). Requests without an Origin, as non-browser MCP
// clients send, pass.
func hostOrigin(o httpOptions, next http.Handler) http.Handler {
	hosts := o.allowedHosts
	if len(hosts) == 0 {
		hosts = defaultHosts()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !matchAny(hosts, strings.ToLower(r.Host)) {
			http.Error(w, "forbidden: host not allowed", http.StatusForbidden)
			return
		}
		if origin := r.Header.Values("Origin"); len(origin) > 1 || len(origin) == 1 && !matchAny(o.allowedOrigins, strings.ToLower(origin[0])) {
			http.Error(w, "forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// matchAny reports whether v equals a pattern, where a pattern ending in
// ":*" matches any port (and no port).
func matchAny(patterns []string, v string) bool {
	for _, p := range patterns {
		p = strings.ToLower(p)
		if p == v {
			return true
		}
		if base, ok := strings.CutSuffix(p, ":*"); ok {
			if v == base {
				return true
			}
			if rest, ok := strings.CutPrefix(v, base+":"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
				return true
			}
		}
	}
	return false
}

// checkAllowedHosts refuses an --allowed-hosts entry that no Host header
// can equal, which would silently refuse every request it was meant to
// let through: one that is not host, host:port or host:* as a client
// sends it in Host (a scheme or a path, as an origin or URL has them; user
// information; a wildcard name such as * or *.example; an IPv6 address
// without its brackets; a port outside 1 to 65535).
func checkAllowedHosts(hosts []string) error {
	for _, h := range hosts {
		if !hostPattern(h) {
			return fmt.Errorf("--allowed-hosts %s: want host, host:port or host:* (host:* is any port), as a client sends it in Host: no scheme, path or wildcard name; an IPv6 address in brackets", cliarg.Shown(h))
		}
	}
	return nil
}

// hostPattern reports whether h is an --allowed-hosts entry a Host header
// can match (see checkAllowedHosts).
func hostPattern(h string) bool {
	host, anyPort := strings.CutSuffix(h, ":*")
	if !anyPort {
		if hp, port, err := net.SplitHostPort(h); err == nil {
			n, err := strconv.Atoi(port)
			if err != nil || n < 1 || n > 65535 || strings.Trim(port, "0123456789") != "" {
				return false
			}
			host = hp
			if strings.Contains(host, ":") {
				host = "[" + host + "]" // SplitHostPort took the brackets off
			}
		}
	}
	if inner, ok := strings.CutPrefix(host, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		ip, err := netip.ParseAddr(inner)
		return ok && err == nil && ip.Is6()
	}
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// listenAddr checks addr: host:port with a numeric port; a non-loopback
// host needs allowRemote, since the session passthrough is not an OAuth
// profile and must not face the internet.
func listenAddr(addr string, allowRemote bool) (string, error) {
	// The value as cliarg shows it: a URL with its user information put
	// here by mistake is not echoed.
	hostport, local, err := loopback.ListenAddr(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %s: %v", cliarg.Shown(addr), err)
	}
	if !local && !allowRemote {
		return "", fmt.Errorf("--addr %s is not a loopback address; /mcp must not be exposed publicly without OAuth (add --allow-remote to insist)", cliarg.Shown(addr))
	}
	return hostport, nil
}

// Timeouts of the HTTP server. No session check, cap or limit applies
// before a request has been read, so a connection that stalls in its
// headers or body, or idles between requests, is closed: a request (at
// most 4 MiB, the go-sdk's cap) must arrive within httpReadTimeout. There
// is no write timeout: each call has its own deadline (10 s), and a write
// timeout would cut its answer.
const (
	httpReadHeaderTimeout = 10 * time.Second
	httpReadTimeout       = 30 * time.Second
	httpIdleTimeout       = 2 * time.Minute
)

// newHTTPServer returns the HTTP server of h, with the timeouts above.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout, IdleTimeout: httpIdleTimeout}
}

// serveHTTP serves h on ln until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	// Ended when the server stops: the MCP event streams (a go-sdk client
	// on protocol 2026-07-28 holds a subscriptions/listen open), which
	// would hold Shutdown for its whole wait, and then fail it.
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	srv := newHTTPServer(streamstop.Handler(streams, "/mcp", h))
	srv.RegisterOnShutdown(endStreams)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			// Still open after the wait (a client that stopped reading
			// its answer, or stalled in its body): closed now, as refund,
			// ticket and the gateway close theirs; not a failed stop.
			srv.Close()
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

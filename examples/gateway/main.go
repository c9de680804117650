// Command gateway is the mcpguard HTTP JSON-RPC security gateway: it puts
// mcpguard's policy in front of an MCP Streamable HTTP server written in any
// language. It turns a bearer token into a principal (tokens from
// MCP_GATEWAY_TOKENS, the demo tokens admin-token and viewer-token when
// unset; or, with --jwt-jwks, signed JWTs verified against a JWK Set, read
// from a file or fetched from the provider's URL and fetched again when the
// provider rotates its keys, the roles from a claim; or, with --jwt-issuer
// alone, the same with the JWK Set URL found at start in the issuer's
// discovery document), refuses admin_*
// tools/call requests from callers without the role admin before they reach
// the downstream, and forwards everything else.
//
//	gateway --host 127.0.0.1 --port 8080 --upstream http://127.0.0.1:8081/mcp \
//	        --path /mcp --timeout 30 [--filter-tools-list] [--rate 60/1m] [--inflight 8] \
//	        [--audit audit.jsonl | audit.db] [--std-transport] \
//	        [[--jwt-jwks keys.json|https://idp.example/jwks.json] --jwt-issuer URL
//	         (--jwt-audience NAME | --jwt-resource https://gw.example/mcp | both)
//	         [--jwt-roles-claim roles] [--jwt-leeway 30s] [--jwt-jwks-min-refresh 1m]]
//
// Without --jwt-jwks, --jwt-issuer must be an https URL (http only to a
// loopback host): the gateway reads its OpenID Connect discovery document,
// or its RFC 8414 metadata when that answers 404, once at start (a changed
// jwks_uri needs a restart), and uses the "jwks_uri" it names; the
// document's "issuer" must be --jwt-issuer exactly.
//
// Logs go to stderr. GET /healthz reports liveness and the upstream. With
// --jwt-resource, the gateway serves its OAuth protected resource metadata
// (RFC 9728) for MCP clients to discover --jwt-issuer, and names it in
// every 401.
//
// At start the binary re-executes itself with GODEBUG=schedtrace set to its
// largest interval, which keeps the Go runtime's monitor thread from being
// woken by every proxied request (see sysmon_unix.go); GODEBUG=schedtrace=0
// in the environment keeps the runtime's default.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func main() {
	execQuietSysmon()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("gateway failed", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	host := flag.String("host", "127.0.0.1", "address to listen on (loopback by default)")
	port := flag.Int("port", 8080, "port to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:8081/mcp", "downstream MCP Streamable HTTP endpoint")
	path := flag.String("path", "/mcp", "path the gateway serves MCP on")
	timeout := flag.Float64("timeout", 30, "downstream timeout in seconds")
	filter := flag.Bool("filter-tools-list", false, "remove tools the caller may not call from tools/list")
	rate := flag.String("rate", "", `per-user call rate for tools/call, as "N/duration" (e.g. 60/1m); empty: none`)
	inflight := flag.Int("inflight", 0, "per-user tools/call calls in flight; 0: no cap")
	maxBody := flag.Int64("max-body", 4<<20, "largest request body in bytes")
	stdTransport := flag.Bool("std-transport", false, "send downstream through net/http's Transport instead of the gateway's own HTTP/1.1 client")
	auditPath := flag.String("audit", "", "append audit events to this JSONL file (SQLite when it ends in .db); empty: none")
	jwks := flag.String("jwt-jwks", "", "verify bearer tokens as JWTs signed by the keys of this JWK Set, a file or an https:// URL (the provider's jwks_uri), instead of MCP_GATEWAY_TOKENS")
	issuer := flag.String("jwt-issuer", "", `the JWTs' required "iss"; without --jwt-jwks, an https URL whose discovery document (OpenID Connect, or RFC 8414) names the JWK Set, read at start`)
	audience := flag.String("jwt-audience", "", `the audience the JWTs' "aud" must hold (with --jwt-jwks or --jwt-issuer)`)
	rolesClaim := flag.String("jwt-roles-claim", "roles", "the JWT claim holding the roles: an array of strings or a space-separated string; a dotted path (realm_access.roles) reads nested objects")
	leeway := flag.Duration("jwt-leeway", 0, `clock skew allowed for the JWTs' "exp", "nbf" and "iat"`)
	minRefresh := flag.Duration("jwt-jwks-min-refresh", time.Minute, "with a --jwt-jwks URL or a discovered JWK Set: least time between two fetches of the set caused by tokens naming unknown keys")
	resource := flag.String("jwt-resource", "", "the URL clients use for this gateway's MCP endpoint: serve its OAuth protected resource metadata (RFC 9728) naming --jwt-issuer as the authorization server, name it in every 401, and require it as the audience when --jwt-audience is unset")
	flag.Parse()

	switch {
	case math.IsNaN(*timeout) || *timeout <= 0 || *timeout > float64(math.MaxInt64/int64(time.Second)):
		return fmt.Errorf("--timeout %v: want a positive number of seconds", *timeout)
	case *maxBody <= 0:
		return fmt.Errorf("--max-body %d: want a positive number of bytes", *maxBody)
	case *inflight < 0:
		return fmt.Errorf("--inflight %d: want 0 (no cap) or more", *inflight)
	case !strings.HasPrefix(*path, "/"):
		return fmt.Errorf("--path %q: want a path beginning with /", *path)
	case *port < 0 || *port > 65535:
		return fmt.Errorf("--port %d: want 0 to 65535", *port)
	}
	if *jwks == "" && *issuer == "" {
		var stray []string
		flag.Visit(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "jwt-") {
				stray = append(stray, "--"+f.Name)
			}
		})
		if len(stray) > 0 {
			return fmt.Errorf("%s: only with --jwt-jwks or --jwt-issuer", strings.Join(stray, ", "))
		}
	}
	refreshSet := false
	flag.Visit(func(f *flag.Flag) { refreshSet = refreshSet || f.Name == "jwt-jwks-min-refresh" })
	switch {
	case *minRefresh <= 0:
		return fmt.Errorf("--jwt-jwks-min-refresh %v: want a positive duration", *minRefresh)
	case refreshSet && *jwks != "" && !isURL(*jwks):
		return errors.New("--jwt-jwks-min-refresh: only with a --jwt-jwks URL or a discovered JWK Set (a file is read once)")
	}
	if *audience == "" {
		// The MCP authorization specification binds tokens to the
		// resource's URL (RFC 8707).
		*audience = *resource
	}
	auth, err := authenticator(logger, *jwks, *minRefresh, token.JWTConfig{Issuer: *issuer, Audience: *audience, RolesClaim: *rolesClaim, Leeway: *leeway})
	if err != nil {
		return err
	}
	var limits []limiter.Limit
	if *rate != "" {
		n, per, ok := strings.Cut(*rate, "/")
		max, err1 := strconv.ParseFloat(n, 64)
		window, err2 := time.ParseDuration(per)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("--rate %q: want N/duration, e.g. 60/1m", *rate)
		}
		limits = append(limits, limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: max, Window: window})
	}
	if *inflight > 0 {
		limits = append(limits, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: float64(*inflight)})
	}
	opts := &gateway.Options{
		Path: *path, FilterToolsList: *filter, MaxBodyBytes: *maxBody,
		Timeout: time.Duration(*timeout * float64(time.Second)), Logger: logger,
	}
	if *stdTransport {
		opts.Transport = gateway.NewTransport()
	}
	if *resource != "" {
		opts.ResourceMetadata = &oauthex.ProtectedResourceMetadata{
			Resource:             *resource,
			AuthorizationServers: []string{*issuer},
			ResourceName:         "mcpguard gateway",
		}
	}
	if len(limits) > 0 {
		lim, err := limiter.New(limits, nil)
		if err != nil {
			return err
		}
		opts.Limiter = lim
	}
	if *auditPath != "" {
		sink, closeSink, err := openAudit(*auditPath)
		if err != nil {
			return err
		}
		defer closeSink()
		opts.Audit = sink
	}
	g, err := gateway.New(*upstream, auth, opts)
	if err != nil {
		if *resource != "" && strings.Contains(err.Error(), "ResourceMetadata") {
			return fmt.Errorf("--jwt-resource %q, --jwt-issuer %q: %w", *resource, *issuer, err)
		}
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	logger.Info("gateway listening", "addr", "http://"+ln.Addr().String()+*path, "upstream", *upstream, "filter_tools_list", *filter)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// Serve returns as soon as Shutdown starts: wait for the calls in
	// flight to end (and record their outcome) before the audit sink is
	// closed and the process exits.
	<-shut
	return nil
}

// isURL reports whether --jwt-jwks names a URL rather than a file.
func isURL(jwks string) bool {
	return strings.HasPrefix(jwks, "https://") || strings.HasPrefix(jwks, "http://")
}

// authenticator returns the gateway's authenticator: JWTs verified with cfg
// and the keys of the JWK Set jwks, or, without one, of the JWK Set that
// the discovery document of cfg.Issuer names; or, without either, the
// token table of MCP_GATEWAY_TOKENS (the demo tokens when it is unset).
// JWTs and MCP_GATEWAY_TOKENS at once is an error: an operator who set
// both meant one of them. A jwks that is an http(s) URL, like a discovered
// one, is fetched now and refreshed as token.RemoteKeySet does, its fetches
// caused by unknown kids at least minRefresh apart; any other is a file,
// read once. The issuer and audience are checked before anything is
// fetched.
func authenticator(logger *slog.Logger, jwks string, minRefresh time.Duration, cfg token.JWTConfig) (gateway.Authenticator, error) {
	if jwks == "" && cfg.Issuer == "" {
		if cfg.Audience != "" {
			return nil, errors.New("--jwt-audience needs --jwt-jwks or --jwt-issuer")
		}
		return gateway.TokensFromEnv(logger)
	}
	if _, set := os.LookupEnv(gateway.TokensEnv); set {
		return nil, fmt.Errorf("JWTs (--jwt-jwks or --jwt-issuer) and %s are both set: choose one way to verify tokens", gateway.TokensEnv)
	}
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("--jwt-jwks needs --jwt-issuer")
	case cfg.Audience == "":
		return nil, errors.New("JWTs need an audience: give --jwt-audience or --jwt-resource")
	}
	keySetOpts := &token.RemoteKeySetOptions{
		MinRefreshInterval: minRefresh,
		ErrorHandler: func(err error) {
			logger.Warn("JWK Set refresh failed; keeping the last good set", "err", err)
		},
	}
	switch {
	case jwks == "":
		set, err := token.DiscoverKeySet(context.Background(), cfg.Issuer, keySetOpts)
		if err != nil {
			return nil, fmt.Errorf("--jwt-issuer without --jwt-jwks: finding the JWK Set from the issuer's discovery document (or give --jwt-jwks): %w", err)
		}
		logger.Info("found the JWK Set in the issuer's discovery document; a changed jwks_uri needs a restart", "issuer", cfg.Issuer, "jwks_uri", set.String())
		cfg.KeySet = set
	case isURL(jwks):
		set, err := token.NewRemoteKeySet(context.Background(), jwks, keySetOpts)
		if err != nil {
			return nil, fmt.Errorf("--jwt-jwks: %w", err)
		}
		cfg.KeySet = set
	default:
		data, err := os.ReadFile(jwks)
		if err != nil {
			return nil, fmt.Errorf("--jwt-jwks: %w", err)
		}
		if cfg.Keys, err = token.ParseJWKS(data); err != nil {
			return nil, fmt.Errorf("--jwt-jwks %s: %w", jwks, err)
		}
	}
	v, err := token.NewJWT(cfg)
	if err != nil {
		return nil, fmt.Errorf("--jwt-* flags: %w", err)
	}
	shown := jwks
	if cfg.KeySet != nil {
		shown = cfg.KeySet.String() // without what may be a credential
	}
	logger.Info("verifying bearer tokens as JWTs", "jwks", shown, "issuer", cfg.Issuer, "audience", cfg.Audience, "roles_claim", cfg.RolesClaim)
	return v, nil
}

// openAudit opens the audit sink at path: SQLite for a .db file, JSONL
// otherwise. The returned func closes it, flushing what it buffered.
func openAudit(path string) (audit.Sink, func(), error) {
	if strings.HasSuffix(path, ".db") {
		db, err := audit.OpenSQLite(path)
		if err != nil {
			return nil, nil, err
		}
		sink, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
		if err != nil {
			db.Close()
			return nil, nil, err
		}
		return sink, func() { sink.Close(); db.Close() }, nil
	}
	sink, err := audit.OpenJSONL(path, nil)
	if err != nil {
		return nil, nil, err
	}
	return sink, func() { sink.Close() }, nil
}

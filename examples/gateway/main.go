// Command gateway is the mcpguard HTTP JSON-RPC security gateway: it puts
// mcpguard's policy in front of an MCP Streamable HTTP server written in any
// language. It turns a bearer token into a principal (tokens from
// MCP_GATEWAY_TOKENS, each of at least 16 characters on an address that is
// not loopback; the demo tokens admin-token and viewer-token when unset;
// or, with --jwt-jwks, signed JWTs verified against a JWK Set, read
// from a file or fetched from the provider's URL and fetched again when the
// provider rotates its keys, the roles from a claim; or, with --jwt-issuer
// alone, the same with the JWK Set URL found at start in the issuer's
// discovery document; or, with --introspect, any token, opaque ones
// included, judged by the authorization server's token introspection
// endpoint), refuses admin_*
// tools/call requests from callers without the role admin before they reach
// the downstream, and forwards everything else; or, with --policy FILE,
// decides every tools/call by the rules of that file instead.
//
//	gateway --host 127.0.0.1 --port 8080 --upstream http://127.0.0.1:8081/mcp \
//	        --path /mcp --timeout 30 [--policy policy.json] \
//	        [--filter-tools-list] [--rate 60/1m] [--inflight 8] [--max-streams 32] \
//	        [--max-body 4194304] \
//	        [--upstream-ca ca.pem] [--upstream-cert cert.pem --upstream-key key.pem] \
//	        [--audit audit.jsonl | audit.db] [--std-transport] [--allowed-origins URL,...] \
//	        [--pin-tools | --tool-pins pins.json] \
//	        [[--jwt-jwks keys.json|https://idp.example/jwks.json] --jwt-issuer URL
//	         (--jwt-audience NAME | --jwt-resource https://gw.example/mcp | both)
//	         [--jwt-roles-claim roles] [--jwt-leeway 30s] [--jwt-jwks-min-refresh 1m]]
//	        [--introspect https://idp.example/oauth2/introspect
//	         (--introspect-audience NAME | --jwt-resource URL --introspect-issuer URL | both)
//	         [--introspect-issuer URL] [--introspect-roles-claim scope]
//	         [--introspect-leeway 30s] [--introspect-cache-ttl 1m]]
//
// Without --jwt-jwks, --jwt-issuer must be an https URL (http only to a
// loopback host): the gateway reads its OpenID Connect discovery document,
// or its RFC 8414 metadata when that answers 404, at start, and uses the
// "jwks_uri" it names; the document's "issuer" must be --jwt-issuer
// exactly. It reads the document again when a refresh of the set fails or
// lacks a token's kid (at most once per --jwt-jwks-min-refresh), so a
// provider that moves its jwks_uri is followed without a restart.
//
// With --introspect (RFC 7662; token.Introspector in the library), every
// token not in the cache is POSTed to the endpoint, with HTTP Basic client
// credentials from MCP_GATEWAY_INTROSPECT_CLIENT_ID and
// MCP_GATEWAY_INTROSPECT_CLIENT_SECRET (never flags, which ps shows); the
// answer must say "active": true, hold --introspect-audience in "aud"
// (and --introspect-issuer in "iss", when given), and name the subject in
// "sub"; the roles are its "scope" unless --introspect-roles-claim says
// otherwise. Answers are cached (acceptances for --introspect-cache-ttl,
// refusals for 10 s); an endpoint that fails leaves the token unjudged:
// the request gets 502 (504 on a timeout), not 401, a warning is logged,
// and the endpoint is asked again at the next request. At start the
// gateway asks the endpoint about a made-up token: a wrong URL, wrong
// credentials, or an endpoint that accepts that token stop it there.
// --introspect excludes the other --jwt-* flags but --jwt-resource, and
// MCP_GATEWAY_TOKENS.
//
// With --pin-tools or --tool-pins, the gateway holds the downstream's tool
// definitions to those approved (gateway.Pins): a tool whose description,
// schemas or annotations change after approval (a "rug pull") is withheld
// from tools/list and its calls are refused (-32001, 403), logged and
// recorded (TOOL_CHANGED; TOOL_NOT_PINNED for a tool --tool-pins does not
// name). Before it serves, the gateway lists the downstream's tools once
// (as below), so that a tool changed while it was down is refused from
// the first call, not from the first listing a client makes; a downstream
// it cannot list then is logged. --print-pins lists the downstream's tools
// as the caller gateway-print-pins with the role admin, prints the file
// --tool-pins reads (refusing one over the 16 MiB it reads), and exits; it
// takes no flag but --upstream, --timeout, the --upstream-* TLS flags and
// --log-format (another stops it with exit status 2):
//
//	gateway --upstream http://127.0.0.1:8081/mcp --print-pins > pins.json
//
// --policy reads rules as data, the JSON of policy.ParseConfig (tools with
// their class, roles, cost and argument limits; role rules by name
// pattern; the write allowlist; a default rule; show_forbidden), in place
// of gateway.DefaultPolicy: a tool the file gives no rule, without a
// "default", is unknown (-32601, 404). A file that cannot be read, does
// not parse, whose rules policy.New refuses, or with a rule asking for a
// confirmation (which the gateway cannot ask a human for), and --policy
// "", stop the start with exit status 2.
//
// Requests to the MCP path with an Origin header other than their own or
// one of --allowed-origins are refused (403), and so are requests that
// came to a loopback address under another name (DNS rebinding).
//
// On SIGINT or SIGTERM the gateway logs that it is shutting down, stops
// taking requests, ends the event streams it relays (their clients
// reconnect) and gives the requests under way --timeout, at least 5 s;
// then it closes their connections (a forwarded POST's answer is still
// read from the downstream, for at most --timeout more) and waits, at most
// --timeout and 5 s, for their handlers to record their outcome before it closes the
// --audit sink, writing the records it buffered. It then logs "gateway
// stopped" and exits with status 0; with status 1 if the wait ran out with
// requests still running, or the --audit sink failed to write its records
// (a full disk): either may have lost audit events, and the error says so.
// A signal during the start (the token verifier's first fetch, the pin
// check of --pin-tools or --tool-pins: each may wait on the network for
// seconds) stops it there: the gateway logs "stopped by a signal before
// serving", closes the --audit sink and exits with status 0 (1 if the
// sink failed), never listening.
//
// A JSONL --audit file is reopened on SIGHUP: once a log rotator has
// renamed it, records go to a new file at the path (logrotate:
// postrotate "kill -HUP <pid>"; copytruncate is not needed). SIGHUP also
// reads the --policy file again: the requests that come after are decided
// by it (those under way finish as they were allowed; clients keep their
// connections, sessions and streams, and see the new listing at their
// next tools/list). A file that cannot be read, or that the start would
// refuse, or a path that names no regular file then (a named pipe), is
// logged ("--policy not reloaded") and the gateway keeps the policy it
// has; a reload is logged with the file's SHA-256, as the start is. A
// SIGHUP during the start, before the gateway is made (the token
// verifier's first fetch may take seconds), has the file read again once
// it is. Without either (and, without --policy, during the start before
// the --audit sink is open), SIGHUP is logged and ignored. --tool-pins
// and the environment are read at the start only.
//
// A mistake in the flags (a value out of range or malformed, a --path no
// request can match, a file of --policy, --tool-pins or --jwt-jwks that
// cannot be read or does not parse (or, for the last two, is over 16 MiB),
// an invalid MCP_GATEWAY_TOKENS or MCP_GATEWAY_SIGN_KEY, flags that
// exclude each other (any but --upstream, --timeout, the --upstream-* TLS
// flags and --log-format with --print-pins;
// --upstream-ca, --upstream-cert or --upstream-key with an http --upstream;
// one of the last two without the other), a file of theirs that cannot be
// read or parsed, a client certificate expired or not yet valid, a flag
// given twice, an
// argument after the flags, a flag given as "", a --host with a port or
// brackets, an --upstream or URL flag without a host, or with a port not
// in 1 to 65535) stops the start with exit
// status 2, before anything is fetched, opened or listened on; other
// failures exit with status 1, their message naming the flag too. An
// --upstream that is plain http to a host other than loopback is warned
// about. --help describes the environment variables and exit statuses.
//
// For an https --upstream, --upstream-ca names the PEM file of the CA
// certificates that verify the downstream (in place of the system's
// roots), and --upstream-cert and --upstream-key the client certificate
// the gateway presents (mutual TLS) and its key (one every user may read
// is warned about); --std-transport, --print-pins and the pin check use
// them too. Before it serves, the gateway makes one TLS connection to the
// downstream: a handshake that fails, or a TLS 1.3 downstream that closes
// the connection within half a second of it (a refused client
// certificate), stops the start with status 1; a downstream that cannot
// be reached is warned about.
//
// A request must arrive, its body included, within --timeout (its headers
// within 10 s), and a kept-alive connection idle for 2 minutes is closed.
//
// Logs go to stderr. GET /healthz reports liveness and the upstream. With
// --jwt-resource, the gateway serves its OAuth protected resource metadata
// (RFC 9728) for MCP clients to discover --jwt-issuer (with --introspect,
// --introspect-issuer), and names it in every 401.
//
// At start the binary re-executes itself with GODEBUG=schedtrace set to its
// largest interval, which keeps the Go runtime's monitor thread from being
// woken by every proxied request (see sysmon_unix.go); GODEBUG=schedtrace=0
// in the environment keeps the runtime's default.
package main

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func main() {
	execQuietSysmon()
	logger := slog.New(newLogHandler(os.Stderr))
	if err := run(logger); err != nil {
		logger.Error("gateway failed", "err", err)
		os.Exit(exitCode(err))
	}
}

func run(logger *slog.Logger) (runErr error) {
	host := flag.String("host", "127.0.0.1", "address to listen on (loopback by default): a host name or IP address, without port or brackets")
	port := flag.Int("port", 8080, "port to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:8081/mcp", "downstream MCP Streamable HTTP endpoint")
	upstreamCA := flag.String("upstream-ca", "", "with an https --upstream: a PEM file of the CA certificates that verify the downstream's certificate, in place of the system's roots")
	upstreamCert := flag.String("upstream-cert", "", "with an https --upstream: a PEM file of the client certificate the gateway presents to the downstream (mutual TLS); with --upstream-key")
	upstreamKey := flag.String("upstream-key", "", "the PEM file of --upstream-cert's private key (make it readable by the gateway's user only: one every user can read is warned about)")
	path := flag.String("path", "/mcp", "path the gateway serves MCP on: a plain path (no query, fragment or %-escape), not /healthz")
	timeout := flag.Float64("timeout", 30, "downstream timeout in seconds; also the time a request, its body included, may take to arrive")
	filter := flag.Bool("filter-tools-list", false, "remove tools the caller may not call from tools/list")
	rate := flag.String("rate", "", `per-user call rate for tools/call, as "N/duration" (e.g. 60/1m); empty: none`)
	inflight := flag.Int("inflight", 0, "per-user tools/call calls in flight; 0: no cap")
	maxStreams := flag.Int("max-streams", 32, "per-user GET and subscriptions/listen event streams open at once; one more is refused (429); 0: no cap")
	maxBody := flag.Int64("max-body", 4<<20, "largest request body in bytes")
	stdTransport := flag.Bool("std-transport", false, "send downstream through net/http's Transport instead of the gateway's own HTTP/1.1 client (slower; ignores a downstream's Keep-Alive timeout)")
	auditPath := flag.String("audit", "", "append audit events to this JSONL file (SQLite when it ends in .db, .sqlite or .sqlite3); empty: none")
	jwks := flag.String("jwt-jwks", "", "verify bearer tokens as JWTs signed by the keys of this JWK Set, a file (at most 16 MiB) or an https:// URL (the provider's jwks_uri), instead of MCP_GATEWAY_TOKENS")
	issuer := flag.String("jwt-issuer", "", `the JWTs' required "iss"; without --jwt-jwks, an https URL whose discovery document (OpenID Connect, or RFC 8414) names the JWK Set, read at start`)
	audience := flag.String("jwt-audience", "", `the audience the JWTs' "aud" must hold (with --jwt-jwks or --jwt-issuer)`)
	rolesClaim := flag.String("jwt-roles-claim", "roles", "the JWT claim holding the roles: an array of strings or a space-separated string; a dotted path (realm_access.roles) reads nested objects, \\. is a dot inside a name (resource_access.mcp\\.example\\.com.roles)")
	leeway := flag.Duration("jwt-leeway", 0, `clock skew allowed for the JWTs' "exp", "nbf" and "iat" (at most 5m)`)
	minRefresh := flag.Duration("jwt-jwks-min-refresh", time.Minute, "with a --jwt-jwks URL or a discovered JWK Set: least time between two fetches of the set caused by tokens naming unknown keys (at most 1h, the set's lifetime)")
	resource := flag.String("jwt-resource", "", "the URL clients use for this gateway's MCP endpoint: serve its OAuth protected resource metadata (RFC 9728) naming --jwt-issuer (with --introspect, --introspect-issuer) as the authorization server, name it in every 401, and require it as the audience when --jwt-audience (--introspect-audience) is unset")
	introspect := flag.String("introspect", "", "verify bearer tokens (opaque ones included) by asking this OAuth 2.0 token introspection endpoint (RFC 7662), an https URL, instead of MCP_GATEWAY_TOKENS or JWTs; client credentials from "+introspectIDEnv+" and "+introspectSecretEnv)
	inAudience := flag.String("introspect-audience", "", `with --introspect: the audience the answer's "aud" must hold (default --jwt-resource)`)
	inIssuer := flag.String("introspect-issuer", "", `with --introspect: the answer's required "iss", not checked when empty; the authorization server the --jwt-resource metadata names (required then)`)
	inRoles := flag.String("introspect-roles-claim", "scope", "with --introspect: the member of the answer holding the roles: a space-separated string or an array of strings; a dotted path reads nested objects, \\. is a dot inside a name")
	inLeeway := flag.Duration("introspect-leeway", 0, `with --introspect: clock skew allowed for the answer's "exp" and "nbf" (at most 5m)`)
	allowedOrigins := flag.String("allowed-origins", "", `comma-separated web origins (https://app.example.com) whose pages may call the gateway, with CORS, or "*"; a request with another Origin than its own is refused (403)`)
	inCacheTTL := flag.Duration("introspect-cache-ttl", time.Minute, `with --introspect: how long an answer accepting a token is reused (never past its "exp"); a revoked token is accepted for up to this long; 0: not reused (refusals are still reused for 10 s)`)
	pinTools := flag.Bool("pin-tools", false, "approve each tool's definition when a tools/list answer first shows it; a tool listed later with another definition is withheld from tools/list and its calls refused, until its approved definition is listed again (once another spelling of its name was listed, until the gateway restarts)")
	toolPins := flag.String("tool-pins", "", "approve only the tool definitions in this file (JSON from tool name to SHA-256, as --print-pins writes it; at most 16 MiB): any other tool, or definition, is withheld from tools/list and its calls refused")
	printPinsFlag := flag.Bool("print-pins", false, "list the --upstream's tools, write the --tool-pins file they make to stdout, and exit; no flag but --upstream, --timeout, --upstream-ca, --upstream-cert, --upstream-key and --log-format may be given with it")
	policyFile := flag.String("policy", "", "decide tools/call with the rules of this JSON file (tools, role_rules, write_allowlist, default, show_forbidden: see README.md) instead of the default policy (every tool a read, admin_* tools need the role admin); a file that does not parse, whose rules are refused or ask for a confirmation, or an empty --policy, stops the start (exit status 2); SIGHUP reads it again (a file refused then is logged, and the policy the gateway has stays)")
	transientOK := flag.Bool("transient-status-ok", false, "answer the gateway's refusals of a call that would be 429, 500, 502, 503 or 504 (a cap, a call it cannot price, the downstream down or timed out, the audit sink down) with status 200, the JSON-RPC error unchanged, for clients that read no body of those statuses (the go-sdk's: its caller sees \"Too Many Requests\" alone, not the error's code or retry_after_seconds)")
	logFormat := flag.String("log-format", "text", "the log's format on stderr: text (key=value lines) or json (a JSON object a line)")
	flag.CommandLine.Usage = usage
	// flag.CommandLine is ExitOnError: Parse exits (2 on an error, 0 after
	// -h); a test's ContinueOnError FlagSet gets the error back.
	if err := cliarg.Parse(flag.CommandLine, os.Args[1:]); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return usageError{err}
	}

	// Every check of the flags, and of the files and variables they
	// name, comes first: a mistake stops the start with exit status 2
	// before a JWK Set is fetched, an endpoint asked, the --audit file
	// opened or the port listened on.
	if err := checkArgs(flag.CommandLine, os.Args[1:]); err != nil {
		return usageError{err}
	}
	switch *logFormat {
	case "text":
	case "json":
		if h, ok := logger.Handler().(*logHandler); ok {
			h.useJSON()
			// The library's own lines (slog.Default, the log package's)
			// too: every line of the log a JSON object.
			slog.SetDefault(logger)
		}
	default:
		return usagef("--log-format %q: want text or json", *logFormat)
	}
	switch {
	case *timeout > float64(maxTimeoutSeconds):
		return usagef("--timeout %v: want at most %d seconds", *timeout, maxTimeoutSeconds)
	case math.IsNaN(*timeout) || *timeout <= 0 ||
		time.Duration(*timeout*float64(time.Second)) <= 0: // under a nanosecond: gateway.New's 30 s
		return usagef("--timeout %v: want a positive number of seconds", *timeout)
	case *maxBody <= 0:
		return usagef("--max-body %d: want a positive number of bytes", *maxBody)
	case *inflight < 0:
		return usagef("--inflight %d: want 0 (no cap) or more", *inflight)
	case *maxStreams < 0:
		return usagef("--max-streams %d: want 0 (no cap) or more", *maxStreams)
	case checkPath(*path) != nil:
		return usageError{checkPath(*path)}
	case checkHost(*host) != nil:
		return usageError{checkHost(*host)}
	case *port < 0 || *port > 65535:
		return usagef("--port %d: want 0 to 65535", *port)
	case *leeway < 0 || *leeway > token.MaxLeeway:
		// Checked here, before the issuer is asked for its keys.
		return usagef("--jwt-leeway %v: want 0 to %v (a wider window accepts tokens that long after they expired; set the clocks right instead)", *leeway, token.MaxLeeway)
	case *inLeeway < 0 || *inLeeway > token.MaxLeeway:
		return usagef("--introspect-leeway %v: want 0 to %v (a wider window accepts tokens that long after they expired; set the clocks right instead)", *inLeeway, token.MaxLeeway)
	case *pinTools && *toolPins != "":
		return usagef("--pin-tools and --tool-pins: choose one (--pin-tools approves definitions as they are first listed, --tool-pins only those of the file)")
	}
	up, err := checkUpstream(*upstream)
	if err != nil {
		return usageError{err}
	}
	if *printPinsFlag {
		if err := checkPrintPinsFlags(flag.CommandLine); err != nil {
			return usageError{err}
		}
	} else if upstreamIsListen(up, *host, *port) {
		// Every request would come back to the gateway without its
		// Authorization (never forwarded), and every client, whatever
		// its token, would get the gateway's own 401.
		return usagef("--upstream %s is the gateway's own address (--host %s --port %d): it would forward every request to itself, and answer every one 401; give the downstream's address", shownUpstream(*upstream), *host, *port)
	}
	tlsCfg, err := upstreamTLS(logger, up, *upstreamCA, *upstreamCert, *upstreamKey, time.Now())
	if err != nil {
		return err
	}
	// Read before --print-pins, whose listing a downstream that checks
	// signatures refuses unsigned.
	signer, err := signerFromEnv()
	if err != nil {
		return err
	}
	argsKey, err := auditKeyFromEnv()
	if err != nil {
		return err
	}
	if argsKey != nil && *auditPath == "" && !*printPinsFlag {
		return usagef("%s is set without --audit: there is no trail to key", auditKeyEnv)
	}
	if *printPinsFlag {
		return printPinsWith(context.Background(), logger, *upstream, time.Duration(*timeout*float64(time.Second)), downstreamAccess{tlsCfg, signer}, stdout)
	}
	var pol *policy.Policy // nil: gateway.DefaultPolicy
	var facts policyFacts  // of the --policy file, for the logs
	if *policyFile != "" {
		if pol, facts, err = loadPolicy(*policyFile); err != nil {
			return err
		}
		if facts.hidesBeside {
			logger.Warn(hiddenToldApart, "policy", *policyFile)
		}
	}
	if err := checkTokenFlags(*jwks != "" || *issuer != "", *introspect != ""); err != nil {
		return usageError{err}
	}
	var urlErr error // the URLs the token package fetches
	switch {
	case isURL(*jwks):
		urlErr = checkServerURL("--jwt-jwks", *jwks, false)
	case *jwks == "" && *issuer != "":
		if urlErr = checkServerURL("--jwt-issuer", *issuer, true); urlErr != nil {
			urlErr = fmt.Errorf("%w (the discovery document is read from it; or give --jwt-jwks)", urlErr)
		}
	case *introspect != "":
		// Asked at start, with the client's credentials: a port no
		// server has (0, empty, beyond 65535) is the flag's mistake.
		urlErr = checkServerURL("--introspect", *introspect, false)
	}
	if urlErr != nil {
		return usageError{urlErr}
	}
	refreshSet := false
	flag.Visit(func(f *flag.Flag) { refreshSet = refreshSet || f.Name == "jwt-jwks-min-refresh" })
	switch {
	case refreshSet && *jwks != "" && !isURL(*jwks):
		// First: with a file the flag does nothing, whatever its value.
		return usagef("--jwt-jwks-min-refresh: only with a --jwt-jwks URL or a discovered JWK Set (a file is read once)")
	case *minRefresh <= 0:
		return usagef("--jwt-jwks-min-refresh %v: want a positive duration", *minRefresh)
	case *minRefresh > time.Hour:
		// The set is fetched again after an hour (token's default
		// MaxAge), and the interval holds that fetch back too.
		return usagef("--jwt-jwks-min-refresh %v: at most 1h, the JWK Set's lifetime (a longer one would keep a key the provider removed that long)", *minRefresh)
	case *introspect != "" && *inCacheTTL < 0:
		return usagef("--introspect-cache-ttl %v: want 0 (no caching) or more", *inCacheTTL)
	case *introspect != "" && *resource != "" && *inIssuer == "":
		return usagef("--jwt-resource with --introspect needs --introspect-issuer: the authorization server its metadata names")
	}
	_, tokensSet := os.LookupEnv(gateway.TokensEnv)
	demoTokens := !tokensSet && *jwks == "" && *issuer == "" && *introspect == ""
	switch {
	case demoTokens && !loopback.IsHost(*host):
		// The demo tokens are in the source: on an address others
		// reach, anyone would be admin.
		return usagef("--host %s is not a loopback address, and the built-in demo tokens (admin-token, viewer-token) are public: set %s, or verify JWTs or use --introspect", *host, gateway.TokensEnv)
	case demoTokens && anyOrigin(*allowedOrigins):
		// So would any web page the operator's browser opens: "*" lets
		// every page send the public admin-token and read the answer.
		return usagef("--allowed-origins *: with the built-in demo tokens (admin-token, viewer-token), which are public, every web page would be admin: list the origins, or set %s, or verify JWTs or use --introspect", gateway.TokensEnv)
	}
	if tokensSet && *jwks == "" && *issuer == "" && *introspect == "" {
		// A short token is guessed: the gateway does not limit the
		// requests of those who hold none.
		if n := shortestToken(os.Getenv(gateway.TokensEnv)); n > 0 && n < minTokenLen {
			if !loopback.IsHost(*host) {
				return usagef("%s holds a token of %d characters: on an address others reach (--host %s) each must have at least %d, or it can be guessed (make them with openssl rand -hex 16)", gateway.TokensEnv, n, *host, minTokenLen)
			}
			logger.Warn(gateway.TokensEnv+" holds a token shorter than "+strconv.Itoa(minTokenLen)+" characters, which can be guessed: the gateway refuses it on an address that is not loopback (make them with openssl rand -hex 16)", "length", n)
		}
	}
	if *audience == "" {
		// The MCP authorization specification binds tokens to the
		// resource's URL (RFC 8707).
		*audience = *resource
	}
	if *inAudience == "" {
		*inAudience = *resource
	}
	var limits []limiter.Limit
	if *rate != "" {
		n, per, ok := strings.Cut(*rate, "/")
		max, err1 := strconv.ParseFloat(n, 64)
		window, err2 := time.ParseDuration(per)
		if !ok || err1 != nil || err2 != nil || !plainDecimal(n) {
			return usagef("--rate %s: want N/duration, e.g. 60/1m", cliarg.Shown(*rate))
		}
		limits = append(limits, limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: max, Window: window})
	}
	if *inflight > 0 {
		limits = append(limits, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: float64(*inflight)})
	}
	opts := &gateway.Options{
		Policy: pol, Path: *path, FilterToolsList: *filter, MaxBodyBytes: *maxBody,
		Timeout: time.Duration(*timeout * float64(time.Second)), Logger: logger,
		MaxStreams: *maxStreams, TransientStatusOK: *transientOK,
	}
	if *maxStreams == 0 {
		opts.MaxStreams = -1 // gateway.Options: zero is the default cap, negative none
	}
	if len(limits) > 0 {
		lim, err := limiter.New(limits, nil)
		if err != nil {
			return usagef("--rate %s: %w", cliarg.Shown(*rate), err)
		}
		opts.Limiter = lim
	}
	switch {
	case *pinTools:
		opts.Pins = gateway.TrustOnFirstUse()
	case *toolPins != "":
		if opts.Pins, err = loadPins(*toolPins); err != nil {
			return usageError{err}
		}
	}
	if *allowedOrigins != "" {
		for o := range strings.SplitSeq(*allowedOrigins, ",") {
			opts.AllowedOrigins = append(opts.AllowedOrigins, strings.TrimSpace(o))
		}
	}
	switch {
	case *stdTransport:
		t := gateway.NewTransport()
		t.TLSClientConfig = tlsCfg // nil: the zero configuration, as gateway.Options.TLSConfig
		opts.Transport = t
	default:
		opts.TLSConfig = tlsCfg
	}
	opts.Signer = signer
	// The authorization server that the resource metadata names.
	asFlag, asURL := "--jwt-issuer", *issuer
	if *introspect != "" {
		asFlag, asURL = "--introspect-issuer", *inIssuer
	}
	if *resource != "" {
		opts.ResourceMetadata = &oauthex.ProtectedResourceMetadata{
			Resource:             *resource,
			AuthorizationServers: []string{asURL},
			ResourceName:         "mcpguard gateway",
		}
	}
	// gateway.New checks the options (the origins, the resource
	// metadata) and opens nothing: a trial now names a mistake before
	// the authenticator asks the network anything.
	if _, err := gateway.New(*upstream, gateway.AuthenticatorFunc(notServed), opts); err != nil {
		switch {
		case *resource != "" && strings.Contains(err.Error(), "ResourceMetadata"):
			if cliarg.URLMayHoldSecret(*resource) || cliarg.URLMayHoldSecret(asURL) {
				return usagef("--jwt-resource %s, %s %s: not a resource and authorization server the gateway can name (want https URLs without user information, query or fragment)", shownUpstream(*resource), asFlag, shownUpstream(asURL))
			}
			return usagef("--jwt-resource %q, %s %q: %w", *resource, asFlag, asURL, err)
		case strings.Contains(err.Error(), "AllowedOrigins"):
			if cliarg.URLMayHoldSecret(*allowedOrigins) {
				return usagef("--allowed-origins %s: want origins, scheme://host[:port] (http or https, nothing after), or \"*\"", cliarg.Shown(*allowedOrigins))
			}
			return usagef("--allowed-origins %q: %w", *allowedOrigins, err)
		case pol != nil && strings.Contains(err.Error(), "the policy's rules"):
			// Two rules whose names differ only in case (see
			// gateway.Options.Policy): the file's mistake.
			return usagef("--policy %s: %w", *policyFile, err)
		}
		return usageError{err}
	}
	switch {
	case plainOffLoopback(up) && signer != nil:
		logger.Warn("--upstream is plain http to a host that is not loopback: every call's arguments and answer, and the identity headers, cross the network unencrypted and can be read on the way (MCP_GATEWAY_SIGN_KEY's signature keeps them from being forged); use https (--upstream-ca and --upstream-cert for a private CA and mutual TLS), or put the downstream on the same host", "upstream", shownUpstream(*upstream))
	case plainOffLoopback(up):
		logger.Warn("--upstream is plain http to a host that is not loopback: the identity headers the downstream trusts, and every call's arguments and answer, cross the network unencrypted and can be read or forged on the way; use https (--upstream-ca and --upstream-cert for a private CA and mutual TLS) and MCP_GATEWAY_SIGN_KEY, or put the downstream on the same host", "upstream", shownUpstream(*upstream))
	}
	// From here a signal stops the start (the checks below may wait on
	// the network for seconds) as it stops the gateway later: the audit
	// records written so far are flushed, and the exit status is 0.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP, which a log rotator or a service manager's reload may send at
	// any time, is logged and ignored until the --audit sink takes it over
	// (and without --audit, to the end): its default action would end the
	// start. With --policy, one that comes before the gateway is made has
	// the file read again when it is.
	var reloader *policyReloader
	if *policyFile != "" {
		reloader = &policyReloader{logger: logger, path: *policyFile}
	}
	hup := hangup.Handle(func() { onHangup(logger, "", nil, reloader) })
	defer hup()
	stopped := func() error {
		logger.Info("stopped by a signal before serving")
		return nil
	}
	var auth gateway.Authenticator
	if *introspect != "" {
		cacheTTL := *inCacheTTL
		if cacheTTL == 0 {
			cacheTTL = -1 // token.IntrospectionConfig: not cached
		}
		auth, err = introspector(ctx, logger, token.IntrospectionConfig{
			Endpoint: *introspect, Issuer: *inIssuer, Audience: *inAudience,
			RolesClaim: *inRoles, Leeway: *inLeeway, CacheTTL: cacheTTL,
		})
	} else {
		auth, err = authenticator(ctx, logger, *jwks, *minRefresh, token.JWTConfig{Issuer: *issuer, Audience: *audience, RolesClaim: *rolesClaim, Leeway: *leeway})
	}
	if ctx.Err() != nil {
		return stopped()
	}
	if err != nil {
		return err
	}
	served := false // the gateway listened, and stopped on a signal
	defer func() {
		// Last: after the audit sink's close.
		if served && runErr == nil {
			logger.Info("gateway stopped")
		}
	}()
	// SIGHUP reopens a JSONL --audit file and reloads --policy (see
	// onHangup).
	var reopener hangup.Reopener
	if *auditPath != "" {
		sink, reopen, closeSink, err := openAudit(*auditPath)
		if err != nil {
			return fmt.Errorf("--audit: %w", err)
		}
		reopener = reopen
		defer func() {
			// The buffered records are written now: a failure loses them.
			if err := closeSink(); err != nil {
				runErr = errors.Join(runErr, fmt.Errorf("--audit %s: closing the audit sink, records may be lost: %w", *auditPath, err))
			}
		}()
		opts.Audit, opts.ArgsKey = sink, argsKey
	}
	stopHup := hangup.Handle(func() { onHangup(logger, *auditPath, reopener, reloader) })
	hup() // stopHup's handler takes SIGHUP from here
	// Before the --audit sink is closed: deferred after its close.
	defer stopHup()
	g, err := gateway.New(*upstream, auth, opts)
	if err != nil {
		return err
	}
	if reloader != nil {
		reloader.made(g)
	}
	if tlsCfg != nil {
		// At most 10 s, as the pin check below.
		check, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := checkUpstreamTLS(check, logger, up, tlsCfg, tlsFlagNames(*upstreamCA, *upstreamCert, *upstreamKey))
		cancel()
		if ctx.Err() != nil {
			return stopped()
		}
		if err != nil {
			return err
		}
	}
	if opts.Pins != nil {
		// At most 10 s: a downstream that hangs must not hold the start.
		check, cancel := context.WithTimeout(ctx, 10*time.Second)
		checkPinsAtStart(check, logger, *upstream, opts.Timeout, downstreamAccess{tlsCfg, signer}, opts.Pins, opts.Audit)
		cancel()
	}
	if ctx.Err() != nil {
		return stopped() // the deferred close flushes the audit records
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("--host %s --port %d: %w", *host, *port, err)
	}
	// active counts the requests whose handler runs, for the shutdown.
	var active atomic.Int64
	srv := &http.Server{
		// net/http's own lines (a failed Accept, a TLS handshake) in the
		// gateway's log, in its format.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			active.Add(1)
			defer active.Add(-1)
			g.ServeHTTP(w, r)
		}),
		// A client that sends a POST's headers and stalls in its body
		// (with a token; without one, in the 64 KiB the gateway reads
		// for the refusal's id) must not hold its handler, and the
		// buffer of what it sent (64 KiB ahead of it), for ever: the
		// whole request must arrive within --timeout, its headers
		// within 10 s. net/http lifts the deadline once the
		// body has been read, so it does not cut a long answer.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       opts.Timeout,
		IdleTimeout:       idleTimeout,
	}
	// At shutdown the event streams end at once (their clients reconnect,
	// elsewhere), so that the grace waits for the calls under way only.
	srv.RegisterOnShutdown(g.EndStreams)
	grace := max(opts.Timeout, shutdownGrace)
	shut := make(chan struct{})
	var stillRunning atomic.Int64 // requests left when the wait ran out
	go func() {
		defer close(shut)
		<-ctx.Done()
		logger.Info("shutting down: new connections are refused, event streams end; waiting for the requests under way", "requests", active.Load(), "grace", grace)
		shutdown, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if srv.Shutdown(shutdown) == nil {
			return
		}
		// Requests past the grace (a slow downstream, an event stream):
		// close their connections, which ends them, and wait for their
		// handlers to record their outcome, at most the downstream
		// timeout and 5 s.
		srv.Close()
		wait := opts.Timeout + shutdownExtra
		if wait < opts.Timeout && shutdownExtra > 0 { // overflowed: --timeout takes up to math.MaxInt64 ns
			wait = math.MaxInt64
		}
		for deadline := time.Now().Add(wait); active.Load() > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				stillRunning.Store(active.Load())
				return
			}
		}
	}()
	listening := []any{"addr", "http://" + ln.Addr().String() + *path, "upstream", shownUpstream(*upstream), "filter_tools_list", *filter,
		"pins", pinMode(*pinTools, *toolPins), "policy", policyName(*policyFile), "audit", auditKind(*auditPath)}
	if *auditPath != "" {
		listening = append(listening, "audit_file", *auditPath)
	}
	if *rate != "" {
		listening = append(listening, "rate", *rate)
	}
	if *inflight > 0 {
		listening = append(listening, "inflight", *inflight)
	}
	listening = append(listening, "max_streams", *maxStreams)
	if facts.sum != "" {
		listening = append(listening, "policy_sha256", facts.sum)
	}
	logger.Info("gateway listening", listening...)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// Serve returns as soon as Shutdown starts: wait for the calls in
	// flight to end (and record their outcome) before the audit sink is
	// closed and the process exits.
	<-shut
	served = true
	if n := stillRunning.Load(); n > 0 {
		return fmt.Errorf("shut down with %d requests still running after the wait (--timeout and %v): their audit events may be lost", n, shutdownExtra)
	}
	return nil
}

// usage prints --help: what the gateway does, the environment variables
// it reads, the exit statuses, and the flags.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprint(out, `Usage: gateway [flags]

The mcpguard MCP security gateway: an HTTP JSON-RPC reverse proxy in front of an
MCP Streamable HTTP server (--upstream). It turns each request's bearer token
into a principal, refuses admin_* tools/call requests from callers without the
role admin (or decides every tools/call by --policy) before they reach the
downstream, and forwards the rest. GET /healthz reports liveness and the
upstream. Logs, each decision included, go to stderr.

Environment:
  MCP_GATEWAY_TOKENS  a JSON object from token to a role, a list of roles, or
                      {"sub": "...", "role": "..." | "roles": [...]}, each
                      token of at least 16 characters off loopback; unset: the
                      demo tokens admin-token and viewer-token, with a warning, and
                      only on a loopback --host and without --allowed-origins "*"
                      (not with --jwt-* or --introspect)
  MCP_GATEWAY_INTROSPECT_CLIENT_ID, MCP_GATEWAY_INTROSPECT_CLIENT_SECRET
                      with --introspect: the client's credentials (HTTP Basic)
  MCP_GATEWAY_SIGN_KEY
                      a key of at least 32 bytes, in hex: every request sent
                      downstream is signed with it (X-Mcp-Gateway-Signature),
                      so that a downstream holding the same key takes the
                      identity headers from the gateway only
  MCP_GATEWAY_AUDIT_KEY
                      with --audit: a key of at least 16 bytes, in hex, that
                      makes the records' args_sha256 an HMAC-SHA256 of the
                      arguments (unset: their plain SHA-256, which can be
                      reversed by hashing guesses)

Exit status: 0 after --help or --print-pins, or after SIGINT or SIGTERM (during
the start too) once the requests under way ended and the --audit records were
written; 2 for a mistake in the flags or the environment (before anything is
fetched, opened or listened on); 1 for any other failure, a shutdown that may
have lost audit records included.

Flags:
`)
	flag.PrintDefaults()
}

// checkTokenFlags refuses flags that the way tokens are verified would
// ignore, and two ways at once: the --jwt-* flags but --jwt-resource
// without JWTs (jwt: --jwt-jwks or --jwt-issuer) or with --introspect;
// --jwt-resource without either; the --introspect-* flags and the
// introspection client's credentials without --introspect. Flags are
// named in the order flag.Visit gives (sorted).
func checkTokenFlags(jwt, introspect bool) error {
	var jwtFlags, inFlags []string
	resource := false
	flag.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "jwt-resource":
			resource = true
		case strings.HasPrefix(f.Name, "jwt-"):
			jwtFlags = append(jwtFlags, "--"+f.Name)
		case strings.HasPrefix(f.Name, "introspect-"):
			inFlags = append(inFlags, "--"+f.Name)
		}
	})
	var creds []string
	for _, env := range []string{introspectIDEnv, introspectSecretEnv} {
		if _, set := os.LookupEnv(env); set {
			creds = append(creds, env)
		}
	}
	switch {
	case introspect && len(jwtFlags) > 0:
		return fmt.Errorf("%s with --introspect: JWTs and introspection are two ways to verify tokens: choose one (with --introspect, use --introspect-audience, --introspect-issuer, --introspect-roles-claim, --introspect-leeway)", strings.Join(jwtFlags, ", "))
	case !introspect && len(inFlags) > 0:
		return fmt.Errorf("%s: only with --introspect", strings.Join(inFlags, ", "))
	case !introspect && len(creds) > 0:
		return fmt.Errorf("%s: only with --introspect (the introspection client's credentials)", strings.Join(creds, ", "))
	case !jwt && !introspect && len(jwtFlags) > 0:
		return fmt.Errorf("%s: only with --jwt-jwks or --jwt-issuer", strings.Join(jwtFlags, ", "))
	case !jwt && !introspect && resource:
		return errors.New("--jwt-resource: only with --jwt-jwks or --jwt-issuer, or with --introspect")
	}
	return nil
}

// The environment variables holding the introspection client's
// credentials: never flags, which any user sees in ps.
const (
	introspectIDEnv     = "MCP_GATEWAY_INTROSPECT_CLIENT_ID"
	introspectSecretEnv = "MCP_GATEWAY_INTROSPECT_CLIENT_SECRET"
)

// signKeyEnv names the environment variable holding the key (hex, at least
// token.MinGatewayKeyLen bytes) with which the gateway signs what it sends
// downstream (gateway.Options.Signer): never a flag, which ps shows.
const signKeyEnv = "MCP_GATEWAY_SIGN_KEY"

// signerFromEnv returns the signer of the key in MCP_GATEWAY_SIGN_KEY, or
// nil when it is unset; a set value that is empty, not hex or too short is
// a usage error naming the variable, never quoting it.
func signerFromEnv() (*token.GatewaySigner, error) {
	v, set := os.LookupEnv(signKeyEnv)
	if !set {
		return nil, nil
	}
	key, err := hex.DecodeString(strings.TrimSpace(v))
	switch {
	case strings.TrimSpace(v) == "":
		return nil, usagef("%s is set but empty: give a key (openssl rand -hex 32), or unset it", signKeyEnv)
	case err != nil:
		return nil, usagef("%s is not hex: give a key of at least %d bytes in hex (openssl rand -hex 32)", signKeyEnv, token.MinGatewayKeyLen)
	}
	s, err := token.NewGatewaySigner(key)
	if err != nil {
		return nil, usagef("%s: %w", signKeyEnv, err)
	}
	return s, nil
}

// auditKeyEnv names the environment variable holding the key (hex, at
// least 32 hex digits) of the --audit records' args_sha256, an HMAC-SHA256
// of the arguments (gateway.Options.ArgsKey): without it the plain
// SHA-256 of arguments with few possible values (an account id, an amount)
// is reversed by hashing guesses.
const auditKeyEnv = "MCP_GATEWAY_AUDIT_KEY"

// auditKeyFromEnv returns the key in MCP_GATEWAY_AUDIT_KEY, or nil when it
// is unset; a set value that is empty, not hex (line breaks, as xxd -p
// wraps, are skipped) or shorter than 16 bytes is a usage error naming the
// variable, never quoting it.
func auditKeyFromEnv() ([]byte, error) {
	v, set := os.LookupEnv(auditKeyEnv)
	if !set {
		return nil, nil
	}
	v = strings.NewReplacer("\r", "", "\n", "").Replace(strings.TrimSpace(v))
	key, err := hex.DecodeString(v)
	switch {
	case v == "":
		return nil, usagef("%s is set but empty: give a key (openssl rand -hex 32), or unset it", auditKeyEnv)
	case errors.Is(err, hex.ErrLength):
		return nil, usagef("%s: an odd number of hex digits: want an even number, at least 32 (openssl rand -hex 32)", auditKeyEnv)
	case err != nil || len(key) < 16:
		return nil, usagef("%s: want at least 32 hex digits (openssl rand -hex 32)", auditKeyEnv)
	}
	return key, nil
}

// introspectProbe is the made-up token the gateway asks the endpoint
// about at start.
const introspectProbe = "mcpguard-gateway-start-probe"

// introspector returns the gateway's authenticator for --introspect: a
// token.Introspector of cfg, with the client's credentials from
// MCP_GATEWAY_INTROSPECT_CLIENT_ID and _SECRET (both, or neither for an
// endpoint that needs no client authentication), its failures logged as
// warnings. --introspect and MCP_GATEWAY_TOKENS at once is an error. At
// start it asks the endpoint about a made-up token, so that a wrong URL
// or wrong credentials stop the start rather than refuse every token
// later; the endpoint must answer it, and refuse it: an endpoint that
// accepts a token nobody issued would accept any.
func introspector(ctx context.Context, logger *slog.Logger, cfg token.IntrospectionConfig) (gateway.Authenticator, error) {
	if _, set := os.LookupEnv(gateway.TokensEnv); set {
		return nil, usagef("--introspect and %s are both set: choose one way to verify tokens", gateway.TokensEnv)
	}
	if cfg.Audience == "" {
		return nil, usagef("--introspect needs an audience: give --introspect-audience or --jwt-resource")
	}
	id, idSet := os.LookupEnv(introspectIDEnv)
	secret, secretSet := os.LookupEnv(introspectSecretEnv)
	switch {
	case idSet != secretSet:
		return nil, usagef("--introspect: set both %s and %s, or neither (an endpoint that needs no client authentication)", introspectIDEnv, introspectSecretEnv)
	case idSet && (id == "" || secret == ""):
		return nil, usagef("--introspect: %s or %s is empty", introspectIDEnv, introspectSecretEnv)
	}
	cfg.ClientID, cfg.ClientSecret = id, secret
	cfg.ErrorHandler = func(err error) {
		logger.Warn("token introspection failed; the request is refused (502, or 504 on a timeout)", "err", err)
	}
	v, err := token.NewIntrospector(cfg)
	if err != nil {
		return nil, usagef("--introspect: %w", err)
	}
	switch _, _, err := v.Introspect(ctx, introspectProbe); {
	case errors.Is(err, token.ErrIntrospectionFailed):
		return nil, fmt.Errorf("--introspect: asking the endpoint about a made-up token at start: %w", err)
	case err == nil:
		// An endpoint that accepts a token nobody issued accepts any:
		// it does not check tokens, or it is not the endpoint meant.
		return nil, errors.New("--introspect: the endpoint accepted the made-up token the gateway asked about at start (active, for this audience, with a subject): it would accept any token")
	}
	clientAuth := "basic"
	if id == "" {
		clientAuth = "none"
		logger.Warn("no client credentials for the introspection endpoint (" + introspectIDEnv + ", " + introspectSecretEnv + "); it answered without")
	}
	logger.Info("verifying bearer tokens by introspection", "endpoint", v.String(), "client_auth", clientAuth, "client_id", id,
		"issuer", cfg.Issuer, "audience", cfg.Audience, "roles_claim", cfg.RolesClaim, "cache_ttl", max(cfg.CacheTTL, 0))
	return v, nil
}

// shownUpstream returns --upstream (or another URL flag) as logs and
// errors show it: without its user information, query or fragment, any of
// which may hold a secret, and not at all when its path holds a JWT or a
// key-like run (a webhook's token), or its host does and has no dot (a
// token typed where the host belongs): see cliarg.URLMayHoldSecret.
// A URL without a host, or opaque, is shown only if it may hold no
// secret: url.Parse finds no user information in it, yet
// "user:password@host" with the scheme left out, or after "http:/", holds
// one. A value that does not parse is shown quoted (a scheme left out, a
// stray space or newline from a template), on the same condition.
func shownUpstream(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		if cliarg.URLMayHoldSecret(raw) {
			return "(an invalid URL that may hold a secret, not shown)"
		}
		return strconv.Quote(raw)
	case u.Host == "" || u.Opaque != "":
		if cliarg.URLMayHoldSecret(raw) {
			return "(a URL without a host, not shown)"
		}
		return u.String()
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	if s := u.String(); !cliarg.URLMayHoldSecret(s) {
		return s
	}
	return "(a URL whose host or path may hold a secret, not shown)"
}

// isURL reports whether --jwt-jwks names a URL rather than a file.
func isURL(jwks string) bool {
	scheme, _, ok := strings.Cut(jwks, "://")
	return ok && (strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "http"))
}

// authenticator returns the gateway's authenticator: JWTs verified with cfg
// and the keys of the JWK Set jwks, or, without one, of the JWK Set that
// the discovery document of cfg.Issuer names; or, without either, the
// token table of MCP_GATEWAY_TOKENS (the demo tokens when it is unset).
// JWTs and MCP_GATEWAY_TOKENS at once is an error: an operator who set
// both meant one of them. A jwks that is an http(s) URL, like a discovered
// one, is fetched now and refreshed as token.RemoteKeySet does, its fetches
// caused by unknown kids at least minRefresh apart; any other is a file,
// read once (at most maxFlagFile bytes). The issuer and audience are
// checked before anything is fetched.
func authenticator(ctx context.Context, logger *slog.Logger, jwks string, minRefresh time.Duration, cfg token.JWTConfig) (gateway.Authenticator, error) {
	if jwks == "" && cfg.Issuer == "" {
		if cfg.Audience != "" {
			return nil, usagef("--jwt-audience needs --jwt-jwks or --jwt-issuer")
		}
		auth, err := gateway.TokensFromEnv(logger)
		if err != nil {
			return nil, usageError{err}
		}
		return auth, nil
	}
	if _, set := os.LookupEnv(gateway.TokensEnv); set {
		return nil, usagef("JWTs (--jwt-jwks or --jwt-issuer) and %s are both set: choose one way to verify tokens", gateway.TokensEnv)
	}
	switch {
	case cfg.Issuer == "":
		return nil, usagef("--jwt-jwks needs --jwt-issuer")
	case cfg.Audience == "":
		return nil, usagef("JWTs need an audience: give --jwt-audience or --jwt-resource")
	}
	keySetOpts := &token.RemoteKeySetOptions{
		MinRefreshInterval: minRefresh,
		ErrorHandler: func(err error) {
			logger.Warn("JWK Set: a refresh failed (the last good set is kept) or left keys out", "err", err)
		},
	}
	switch {
	case jwks == "":
		set, err := token.DiscoverKeySet(ctx, cfg.Issuer, keySetOpts)
		if err != nil {
			return nil, fmt.Errorf("--jwt-issuer without --jwt-jwks: finding the JWK Set from the issuer's discovery document (or give --jwt-jwks): %w", err)
		}
		logger.Info("found the JWK Set in the issuer's discovery document", "issuer", cfg.Issuer, "jwks_uri", set.String())
		cfg.KeySet = set
	case isURL(jwks):
		set, err := token.NewRemoteKeySet(ctx, jwks, keySetOpts)
		if err != nil {
			return nil, fmt.Errorf("--jwt-jwks: %w", err)
		}
		cfg.KeySet = set
	default:
		data, err := readFlagFile("--jwt-jwks", jwks)
		if err != nil {
			return nil, usageError{err}
		}
		if cfg.Keys, err = token.ParseJWKS(data); err != nil {
			return nil, usagef("--jwt-jwks %s: %w", jwks, err)
		}
	}
	v, err := token.NewJWT(cfg)
	if err != nil {
		return nil, usagef("--jwt-* flags: %w", err)
	}
	shown := jwks
	if cfg.KeySet != nil {
		shown = cfg.KeySet.String() // without what may be a credential
	}
	logger.Info("verifying bearer tokens as JWTs", "jwks", shown, "issuer", cfg.Issuer, "audience", cfg.Audience, "roles_claim", cfg.RolesClaim)
	return v, nil
}

// auditKind is the kind of audit sink --audit path opens: "sqlite" for a
// name ending in .db, .sqlite or .sqlite3 (in any letter case), "jsonl"
// for any other, "none" without one.
func auditKind(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case "":
		if path == "" {
			return "none"
		}
	case ".db", ".sqlite", ".sqlite3":
		return "sqlite"
	}
	return "jsonl"
}

// openAudit opens the audit sink at path: SQLite or JSONL by auditKind,
// JSONL being what reopen moves to the file at path (for log rotation,
// on SIGHUP); nil for SQLite. The returned func closes the sink, flushing
// what it buffered, and returns the first error of that.
func openAudit(path string) (sink audit.Sink, reopen hangup.Reopener, closeSink func() error, err error) {
	if auditKind(path) == "sqlite" {
		db, err := audit.OpenSQLite(path)
		if err != nil {
			return nil, nil, nil, err
		}
		sink, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
		if err != nil {
			db.Close()
			return nil, nil, nil, err
		}
		return sink, nil, func() error { return errors.Join(sink.Close(), db.Close()) }, nil
	}
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return j, j, j.Close, nil
}

// onHangup is what the gateway does on SIGHUP: it reopens a JSONL --audit
// file (reopen, nil for none) and reloads --policy (rl, nil without
// one). Without either, SIGHUP is logged and ignored.
func onHangup(logger *slog.Logger, auditPath string, reopen hangup.Reopener, rl *policyReloader) {
	if reopen != nil {
		hangup.ReopenNow(logger, auditPath, reopen)
	}
	switch {
	case rl != nil:
		rl.hangup()
	case reopen == nil:
		hangup.ReopenNow(logger, auditPath, nil)
	}
}

// A policyReloader reads the --policy file again on SIGHUP and makes it
// the gateway's policy: at once once the gateway is made, and for a
// SIGHUP that came before (the start read the file before it waited on
// the token verifier's first fetch, which may take seconds), when it is.
// Reloads run one at a time, so the last one reads the file last.
type policyReloader struct {
	logger *slog.Logger
	path   string
	mu     sync.Mutex // held by a reload; guards g and pending
	g      *gateway.Gateway
	// pending: a SIGHUP came before g was made.
	pending bool
}

// hangup reloads the policy, or, before the gateway is made, has it
// reloaded when it is.
func (rl *policyReloader) hangup() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.g == nil {
		rl.pending = true
		rl.logger.Info("SIGHUP during the start: --policy will be read again once the gateway is made", "policy", rl.path)
		return
	}
	reloadPolicy(rl.logger, rl.path, rl.g)
}

// made gives rl the gateway g, and reloads the policy if a SIGHUP came
// before.
func (rl *policyReloader) made(g *gateway.Gateway) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.g = g
	if rl.pending {
		rl.pending = false
		reloadPolicy(rl.logger, rl.path, g)
	}
}

// reloadPolicy reads the --policy file again and makes it g's policy, or
// logs why not. A path that does not name a regular file when it is opened
// (a named pipe, a device) is not read (see reloadablePolicy): reading a
// pipe no process writes to waits for a writer, and the SIGHUP handler,
// which the shutdown waits for before it closes the audit sink, would wait
// with it.
func reloadPolicy(logger *slog.Logger, path string, g *gateway.Gateway) {
	p, facts, err := reloadablePolicy(path) // its error names what failed
	if err == nil {
		err = g.SetPolicy(p)
	}
	if err != nil {
		logger.Error("SIGHUP: --policy not reloaded; tools/call is decided by the policy the gateway had", "policy", path, "err", err)
		return
	}
	logger.Info("SIGHUP: --policy reloaded; tools/call is decided by it from now on", "policy", path, "sha256", facts.sum)
	if facts.hidesBeside {
		logger.Warn(hiddenToldApart, "policy", path)
	}
}

// plainDecimal reports whether s is digits with an optional fraction
// ("60", "0.5"), as --rate's N is written: strconv.ParseFloat also takes
// "1_0" (as 10), "0x1p4", "1e2", "+5" and "Inf", which a reader of the flag
// would not read as the number the gateway uses.
func plainDecimal(s string) bool {
	whole, frac, dot := strings.Cut(s, ".")
	digits := func(d string) bool {
		return d != "" && strings.Trim(d, "0123456789") == ""
	}
	return digits(whole) && (!dot || digits(frac))
}

// maxTimeoutSeconds is the largest --timeout: math.MaxInt64 nanoseconds,
// in whole seconds.
const maxTimeoutSeconds = math.MaxInt64 / int64(time.Second)

// logHandler is the gateway's log handler: slog's text handler on w, until
// --log-format json makes it slog's JSON handler, which run does before
// anything is logged or any goroutine started.
type logHandler struct {
	slog.Handler
	w io.Writer
}

func newLogHandler(w io.Writer) *logHandler {
	return &logHandler{Handler: slog.NewTextHandler(w, nil), w: w}
}

func (h *logHandler) useJSON() { h.Handler = slog.NewJSONHandler(h.w, nil) }

// minTokenLen is the least length of an MCP_GATEWAY_TOKENS token the
// gateway serves on an address that is not loopback.
const minTokenLen = 16

// shortestToken returns the length in bytes of the shortest token of the
// table v (the keys of its JSON object), 0 when v is not one: the table's
// own parser reports that.
func shortestToken(v string) int {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(v), &m) != nil {
		return 0
	}
	n := 0
	for k := range m {
		if k != "" && (n == 0 || len(k) < n) { // an empty one: the parser's
			n = len(k)
		}
	}
	return n
}

// shutdownGrace is the least time the gateway lets requests end on their
// own at shutdown: it gives them --timeout, or this when longer.
var shutdownGrace = 5 * time.Second

// shutdownExtra is how much longer than --timeout the gateway waits at
// shutdown, once it has closed the connections left, for their handlers
// to record their outcome.
var shutdownExtra = 5 * time.Second

// policyName names the policy of the --policy flag, for the start-up log.
func policyName(file string) string {
	if file == "" {
		return "default"
	}
	return file
}

// pinMode names the tool pinning of the flags, for the start-up log.
func pinMode(firstUse bool, file string) string {
	switch {
	case firstUse:
		return "first use"
	case file != "":
		return file
	}
	return "off"
}

// idleTimeout is how long a kept-alive connection may wait for its next
// request before the gateway closes it: without, connections that each
// made one request (a GET /healthz needs no token) could be kept open for
// ever, until the gateway ran out of file descriptors or memory.
var idleTimeout = 2 * time.Minute

// tlsRefusalWait is how long checkUpstreamTLS waits, after a TLS 1.3
// handshake, for the downstream to refuse the client certificate.
const tlsRefusalWait = 500 * time.Millisecond

// checkUpstreamTLS makes one TLS connection to up with cfg (as the
// gateway's own client does: its ServerName, when empty, up's host;
// http/1.1), sending nothing, and closes it. A downstream that cannot be
// reached is logged, not an error (it may start after the gateway); a
// handshake that fails (a certificate the roots do not verify, or for
// another name; a client certificate refused), and a TLS 1.3 downstream
// that closes the connection within tlsRefusalWait of the handshake (it
// judges the client certificate only then), is an error naming the flags;
// flags names the TLS flags given.
func checkUpstreamTLS(ctx context.Context, logger *slog.Logger, up *url.URL, cfg *tls.Config, flags string) error {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = up.Hostname()
	}
	cfg.NextProtos = []string{"http/1.1"}
	port := up.Port()
	if port == "" {
		port = "443"
	}
	addr := net.JoinHostPort(up.Hostname(), port)
	d := tls.Dialer{Config: cfg}
	nc, err := d.DialContext(ctx, "tcp", addr)
	var ne *net.OpError
	switch {
	case err != nil && (ctx.Err() != nil || errors.As(err, &ne) && ne.Op == "dial"):
		logger.Warn("the downstream could not be reached at start to check TLS; calls fail until it can", "upstream", shownUpstream(up.String()), "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("--upstream %s with %s: the TLS handshake with the downstream failed: %w", shownUpstream(up.String()), flags, err)
	}
	defer nc.Close()
	tc := nc.(*tls.Conn)
	if tc.ConnectionState().Version >= tls.VersionTLS13 {
		tc.SetReadDeadline(time.Now().Add(tlsRefusalWait))
		var b [1]byte
		_, err := tc.Read(b[:])
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("--upstream %s with %s: the downstream closed the TLS connection after the handshake (does it refuse the client certificate?): %w", shownUpstream(up.String()), flags, err)
		}
	}
	logger.Info("TLS to the downstream checked at start", "upstream", shownUpstream(up.String()), "client_certificate", len(cfg.Certificates) > 0)
	return nil
}

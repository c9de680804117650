// Command shop is the RoboShop MCP server built on mcpguard: it lets an
// AI client search the catalogue, compare products and manage the
// signed-in shopper's own cart, and lets admins read (and, when enabled,
// change) the shop, all by forwarding each call to the RoboShop HTTP
// gateway as the caller. It holds no business data and no privileged
// credential, so it can do only what the caller could already do.
//
// Usage:
//
//	shop --gateway http://127.0.0.1:4110                     # stdio; session in SHOP_MCP_SESSION
//	shop --gateway http://127.0.0.1:4110 --transport http    # Streamable HTTP at 127.0.0.1:4107/mcp; session as bearer
//	shop fake-gateway --port 4110                            # a synthetic gateway for manual trials
//	shop demo                                                # everything in-process, printed
//
// Flags of the server: --gateway URL (or SHOP_GATEWAY_URL; http(s), no
// user info, query or fragment), --transport stdio|http (or
// MCP_TRANSPORT), --addr 127.0.0.1:4107 (loopback unless --allow-remote),
// --allowed-hosts and --allowed-origins (HTTP), --origin (sent to the
// gateway with state changes), --redis host:port or
// redis://[user@]host[:port][/db] (rediss:// for TLS, verified against the
// system's roots; the password in SHOP_MCP_REDIS_PASSWORD, never in the
// URL), --audit FILE (default: JSON lines on stderr), --rate 60 and
// --max-in-flight 32. fake-gateway takes --port (4110; 0 picks one). A
// command line that cannot work exits 2; --help lists the flags and the
// environment variables and exits 0.
//
// Every call checks the caller's RoboShop session with GET /api/auth/me
// (no cache, 3 s), which names the user and roles. Customers see eight
// tools, admins more; a hidden tool answers exactly like an unknown one.
// Arguments are validated strictly and results against an output schema
// (every string bounded), less the invisible characters of the gateway's
// text. Calls are capped at 60 a minute per user and 32 in flight, each
// session's requests of any kind (listings and refused calls too) at 120 a
// minute before its check reaches the gateway, and the checks of sessions
// the gateway refuses at 120 a minute over the whole server (sessions seen
// valid are not held back). Each call has 10 s; a read is retried once on
// a transient failure and a write never, nor cancelled by the client. The
// admin writes are registered only with MCP_ENABLE_ADMIN_WRITES=true and
// each needs a signed one-time confirmation of its exact arguments. Every
// call is audited without its arguments (their HMAC under
// SHOP_MCP_AUDIT_KEY, or a random key of the process).
//
// Without --redis the caps and the confirmation nonces live in the
// process's memory, and SHOP_MCP_CONFIRM_KEY is refused (each process
// would accept a confirmation once). With --redis (which needs
// SHOP_MCP_CONFIRM_KEY) they live in that Redis, shared by every replica
// on it: each user's 60 calls a minute count on all of them together, the
// 32 in flight are 32 in all at the one gateway they share, and each
// confirmation is accepted once between them; all of it survives a restart
// (README.md, Restarts). A Redis that cannot decide (down, or slower than
// 250 ms) refuses the call as the library does: RATE_LIMIT_EXCEEDED, retry
// in 1 s.
// See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/mcpguard/mcpguard/internal/redisaddr"
	"github.com/mcpguard/mcpguard/stdio"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	// go-redis's own lines (a failed dial per refused call while Redis is
	// down) as throttled log records; process-wide, so here and not in run.
	redisaddr.LogTo(slog.New(slog.NewTextHandler(os.Stderr, nil)), 10*time.Second)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 {
		switch args[0] {
		case "demo":
			if len(args) > 1 {
				if h := args[1]; len(args) == 2 && (h == "-h" || h == "-help" || h == "--help") {
					fmt.Fprintln(stderr, "usage: shop demo   (everything in-process: a synthetic gateway, the server over HTTP, two clients; no flags)")
					return 0
				}
				fmt.Fprintf(stderr, "shop demo: unexpected arguments %s (it takes none)\n", cliarg.List(args[1:]))
				return 2
			}
			if err := demo(ctx, stdout); err != nil {
				fmt.Fprintln(stderr, "shop demo:", err)
				return 1
			}
			return 0
		case "fake-gateway":
			return runFakeGateway(ctx, args[1:], stderr)
		}
	}
	return runServer(ctx, args, stderr)
}

func runServer(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("shop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	cfg := defaultConfig()
	transport := os.Getenv("MCP_TRANSPORT")
	if transport == "" {
		transport = "stdio"
	}
	var addr, hosts, origins string
	var allowRemote bool
	// Its default, $SHOP_GATEWAY_URL, is read after the parse, not given
	// to the flag package: its usage (--help, a flag error) prints a
	// default, and the value is never printed (it may hold user info).
	fs.StringVar(&cfg.gateway, "gateway", "", "base URL of the RoboShop gateway, http(s)://host[:port][/path] (or $SHOP_GATEWAY_URL)")
	fs.StringVar(&cfg.origin, "origin", "", "Origin header sent with state changes, for the gateway's CSRF check (default: the gateway's own origin)")
	fs.StringVar(&transport, "transport", transport, "stdio or http (or $MCP_TRANSPORT)")
	fs.StringVar(&addr, "addr", "127.0.0.1:4107", "HTTP listen address (loopback unless --allow-remote)")
	fs.BoolVar(&allowRemote, "allow-remote", false, "let --addr be a non-loopback address (do not: the session is not an OAuth token)")
	fs.StringVar(&hosts, "allowed-hosts", strings.Join(defaultHosts(), ","), "comma-separated Host values accepted over HTTP; host:* allows any port")
	fs.StringVar(&origins, "allowed-origins", "", "comma-separated Origin values accepted over HTTP (default none: browser pages are refused)")
	fs.StringVar(&cfg.redisAddr, "redis", "", "Redis shared by replicas, host:port or redis://[user@]host[:port][/db] (rediss:// for TLS; the password in $"+redisPasswordEnv+"): the per-user rate, the in-flight cap and the confirmation nonces; needs $"+confirmKeyEnv)
	fs.StringVar(&cfg.auditPath, "audit", "", "append the audit trail to this JSONL file (default: JSON lines on stderr)")
	fs.IntVar(&cfg.rate, "rate", cfg.rate, "calls a minute per user; each session's requests (calls, listings), and the session checks the gateway refuses in all, twice that (over every replica on --redis)")
	fs.IntVar(&cfg.inFlight, "max-in-flight", cfg.inFlight, "calls in flight across the process (over every replica on --redis)")
	if err := cliarg.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	gatewayGiven := false
	fs.Visit(func(f *flag.Flag) { gatewayGiven = gatewayGiven || f.Name == "gateway" })
	if !gatewayGiven {
		cfg.gateway = os.Getenv("SHOP_GATEWAY_URL")
	}
	if why := usageError(fs, args, cfg, transport); why != "" {
		fmt.Fprintln(stderr, "shop:", why)
		fmt.Fprintln(stderr, "usage: shop --gateway URL [--transport stdio|http] [flags] | shop fake-gateway [--port N] | shop demo (shop --help for more)")
		return 2
	}
	if err := checkFlags(cfg); err != nil {
		fmt.Fprintln(stderr, "shop:", err)
		return 2
	}
	if err := checkAllowedOrigins(splitList(origins)); err != nil {
		fmt.Fprintln(stderr, "shop:", err)
		return 2
	}
	if err := checkAllowedHosts(splitList(hosts)); err != nil {
		fmt.Fprintln(stderr, "shop:", err)
		return 2
	}
	// A --redis given is checked, even empty: "" would otherwise mean
	// caps in memory, silently unshared between replicas. So is a Redis
	// password without it, which would mean the same.
	redisGiven := false
	fs.Visit(func(f *flag.Flag) { redisGiven = redisGiven || f.Name == "redis" })
	cfg.redisPass = os.Getenv(redisPasswordEnv)
	if redisGiven {
		if err := redisFlag(cfg.redisAddr, cfg.redisPass).Check(); err != nil {
			fmt.Fprintln(stderr, "shop:", err)
			return 2
		}
	} else if cfg.redisPass != "" {
		fmt.Fprintf(stderr, "shop: %s needs --redis: without it the caps and the nonces are in the process's memory; unset it, or name the Redis\n", redisPasswordEnv)
		return 2
	}
	cfg.adminWrites = os.Getenv(adminWritesEnv) == "true"
	if v := os.Getenv(confirmKeyEnv); v != "" {
		k, err := parseKey(v)
		if err != nil {
			fmt.Fprintln(stderr, "shop:", err)
			return 2
		}
		cfg.confirmKey = k
	}
	if redisGiven && cfg.confirmKey == nil {
		fmt.Fprintf(stderr, "shop: --redis needs %s, so that every replica verifies the same confirmations\n", confirmKeyEnv)
		return 2
	}
	if !redisGiven && cfg.confirmKey != nil {
		fmt.Fprintln(stderr, "shop:", errConfirmKeyAlone)
		return 2
	}
	if v := os.Getenv(auditKeyEnv); v != "" {
		k, err := parseAuditKey(v)
		if err != nil {
			fmt.Fprintln(stderr, "shop:", err)
			return 2
		}
		cfg.auditKey = k
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if v := os.Getenv(adminWritesEnv); v != "" && v != "true" && v != "false" {
		// Only "true" turns them on, as in the seed; say so to an
		// operator who meant "1" or "TRUE".
		log.Warn("shop: " + adminWritesEnv + ` is not "true": the admin writes stay off`)
	}

	if transport == "stdio" {
		// Take the JSON-RPC channel off fds 0 and 1 before anything can
		// print. A signal stops it gracefully (see serveStdio): every call
		// under way has its session check's deadline, then its per-call
		// deadline (which starts only once the check is done), and a
		// second more for its answer.
		grace := authDeadline + cfg.timeout + time.Second
		t, err := stdio.Isolate(&stdio.Options{Logger: log, Stop: ctx.Done(), DrainTimeout: grace})
		if err != nil {
			fmt.Fprintln(stderr, "shop:", err)
			return 1
		}
		cfg.stdio, cfg.launch = true, os.Getenv(sessionEnv)
		switch {
		case cfg.launch == "":
			log.Warn("shop: " + sessionEnv + " is not set: every call will be refused as unauthenticated")
		case !token.IsToken68(cfg.launch):
			// Never the value: it is a credential.
			log.Warn("shop: " + sessionEnv + ` is not a session (the value of the gateway's rs_auth cookie alone: no "rs_auth=", no "Bearer ", no spaces or line breaks): every call will be refused as unauthenticated`)
		}
		s, err := newShop(cfg, stderr, log)
		if err != nil {
			log.Error("shop: " + err.Error())
			return 1
		}
		defer s.Close()
		log.Info("shop: serving MCP on stdio", "gateway", cfg.gateway, "admin_writes", cfg.adminWrites)
		if err := serveStdio(ctx, s.server, t, grace, log); err != nil {
			log.Error("shop: " + err.Error())
			return 1
		}
		return 0
	}

	hostport, err := listenAddr(addr, allowRemote)
	if err != nil {
		fmt.Fprintln(stderr, "shop:", err)
		return 2
	}
	s, err := newShop(cfg, stderr, log)
	if err != nil {
		log.Error("shop: " + err.Error())
		return 1
	}
	defer s.Close()
	ln, err := net.Listen("tcp", hostport)
	if err != nil {
		log.Error("shop: " + err.Error())
		return 1
	}
	log.Info("shop: serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "gateway", cfg.gateway, "admin_writes", cfg.adminWrites)
	if w := unlistedHostWarning(fs, ln.Addr()); w != "" {
		log.Warn(w)
	}
	h := mcpHandler(s.server, httpOptions{allowedHosts: hostAllowlist(fs, hosts, ln.Addr()), allowedOrigins: splitList(origins)}, log)
	if err := serveHTTP(ctx, ln, h); err != nil {
		log.Error("shop: " + err.Error())
		return 1
	}
	return 0
}

func runFakeGateway(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("shop fake-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 4110, "port to listen on, on 127.0.0.1 (0 picks one)")
	if err := cliarg.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "shop fake-gateway: unexpected arguments %s (the port is --port N)\n", cliarg.List(fs.Args()))
		return 2
	}
	if cliarg.Twice(fs, args) != "" {
		fmt.Fprintln(stderr, "shop fake-gateway: --port is given twice: give it once (the flag package would keep the last value)")
		return 2
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(stderr, "shop fake-gateway: --port %d: want a number from 0 to 65535\n", *port)
		return 2
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(stderr, "shop fake-gateway:", err)
		return 1
	}
	fmt.Fprintf(stderr, "synthetic RoboShop gateway on http://%s\nsessions: %s (customer), %s (customer), %s (admin), %s (super admin)\n",
		ln.Addr(), sessionCustomer, sessionCustomer2, sessionAdmin, sessionSuper)
	// A page of another name rebound to 127.0.0.1 would be same-origin
	// with it, and the sessions above are public: it is refused (403).
	if err := serveHTTP(ctx, ln, loopback.Guard(newFakeGateway())); err != nil {
		fmt.Fprintln(stderr, "shop fake-gateway:", err)
		return 1
	}
	return 0
}

// usage opens the help of `shop --help`; the flags follow.
const usage = `usage:
  shop --gateway URL [flags]                   MCP over stdio; the session in $SHOP_MCP_SESSION
  shop --gateway URL --transport http [flags]  Streamable HTTP at /mcp; the session as the bearer token
  shop fake-gateway [--port N]                 a synthetic RoboShop gateway for trials
  shop demo                                    everything in-process, printed

environment:
  SHOP_GATEWAY_URL, MCP_TRANSPORT              defaults of --gateway and --transport
  SHOP_MCP_SESSION                             the caller's RoboShop session (stdio only): the value
                                               of the gateway's rs_auth cookie alone
  MCP_ENABLE_ADMIN_WRITES=true                 registers the three admin writes
  SHOP_MCP_CONFIRM_KEY                         confirmation signing key, hex or base64, at least 32
                                               bytes; required with --redis, refused without it
  SHOP_MCP_REDIS_PASSWORD                      password of the --redis server (its URL's user's, or
                                               the default user's); refused without --redis
  SHOP_MCP_AUDIT_KEY                           key of the audit records' argument hash, at least
                                               32 hex digits; unset: a random key per process

flags:
`

// usageError says what is wrong with a command line that names no usable
// server: stray arguments, a flag given twice in args, no gateway, a
// transport that is neither stdio nor http (naming MCP_TRANSPORT when the
// value came from there). It returns "" when there is nothing of the kind.
func usageError(fs *flag.FlagSet, args []string, cfg config, transport string) string {
	if fs.NArg() > 0 {
		return "unexpected arguments " + cliarg.List(fs.Args())
	}
	if name := cliarg.Twice(fs, args); name != "" {
		return "--" + name + " is given twice: give it once (the flag package would keep the last value)"
	}
	if cfg.gateway == "" {
		return "--gateway (or $SHOP_GATEWAY_URL) is required: the RoboShop gateway's base URL"
	}
	if transport != "stdio" && transport != "http" {
		name := "MCP_TRANSPORT"
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "transport" {
				name = "--transport"
			}
		})
		return fmt.Sprintf("%s %s: want stdio or http", name, cliarg.Shown(transport))
	}
	if transport == "stdio" {
		// Settings of the HTTP listener, which stdio does not open: one
		// given here was meant for --transport http, forgotten.
		var given []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "addr", "allow-remote", "allowed-hosts", "allowed-origins":
				given = append(given, "--"+f.Name)
			}
		})
		if len(given) > 0 {
			return strings.Join(given, ", ") + " set the HTTP listener, which the stdio transport does not open: add --transport http (or MCP_TRANSPORT=http)"
		}
	}
	return ""
}

// checkFlags refuses settings that can never work, as usage errors: a
// gateway URL that is not a plain http(s) base URL, an --origin that is
// not an origin, and caps below one or above maxCap.
func checkFlags(cfg config) error {
	if _, err := gatewayURL(cfg.gateway); err != nil {
		return err
	}
	if cfg.origin != "" {
		if err := checkOrigin(cfg.origin); err != nil {
			return err
		}
	}
	if cfg.rate < 1 || cfg.rate > maxCap {
		return fmt.Errorf("--rate %d: want 1 to %d calls a minute", cfg.rate, maxCap)
	}
	if cfg.inFlight < 1 || cfg.inFlight > maxCap {
		return fmt.Errorf("--max-in-flight %d: want 1 to %d", cfg.inFlight, maxCap)
	}
	return nil
}

// maxCap is the largest --rate and --max-in-flight: the limiter's most
// in-flight slots, and a rate whose double (each session's request cap)
// cannot overflow.
const maxCap = math.MaxInt32

// hostAllowlist returns the Host values accepted over HTTP: hosts, the
// --allowed-hosts value of fs, as given; by default, also the host of a
// loopback listener's address a (127.0.0.2:*), so that the default accepts
// the URL the shop logs whatever loopback --addr it was given. Another
// address's names --allowed-hosts must list.
func hostAllowlist(fs *flag.FlagSet, hosts string, a net.Addr) []string {
	allowed := splitList(hosts)
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "allowed-hosts" })
	if given {
		return allowed
	}
	host, _, err := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return allowed
	}
	return append(allowed, net.JoinHostPort(host, "*"))
}

// unlistedHostWarning returns the warning of a shop listening on a
// non-loopback address a (--allow-remote) without --allowed-hosts: the
// default list holds the loopback names alone, so that a request sent to
// the address the shop logs is refused 403 (host not allowed); or "".
func unlistedHostWarning(fs *flag.FlagSet, a net.Addr) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "allowed-hosts" })
	host, _, err := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); given || err != nil || ip != nil && ip.IsLoopback() {
		return ""
	}
	return "shop: listening on a non-loopback address without --allowed-hosts: requests are accepted only with a loopback Host (" +
		strings.Join(defaultHosts(), ", ") + "); any other, such as this address's, is refused 403 (host not allowed): list the names clients use in --allowed-hosts"
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// serveStdio serves the one stdio session until the client ends it
// (closing stdin) or ctx ends (SIGTERM, SIGINT). A signal is a graceful
// stop, logged at level INFO: the transport, given ctx.Done() as its Stop,
// answers the requests it reads from then on with -32004 (server is
// closing) and ends the session once the calls under way are answered, or
// after grace, cancelling those still running. (server.Run would close
// the session at the signal, and the go-sdk writes nothing once it is
// closing: the answers of the calls under way would be lost, and Run logs
// the stop at level ERROR.) A call that ignores its cancellation is not
// waited for beyond a second more; the deferred shop.Close still waits
// for it, up to 15 s, for its audit record.
func serveStdio(ctx context.Context, server *mcp.Server, t mcp.Transport, grace time.Duration, log *slog.Logger) error {
	err := stdio.Serve(ctx, server, t, grace+time.Second, func() {
		log.Info("shop: stopping on a signal: new requests are refused; the calls under way finish and are answered", "grace", grace)
	})
	if errors.Is(err, stdio.ErrStopTimeout) {
		log.Warn("shop: a call under way did not end after its cancellation; stopping without its answer")
		return nil
	}
	return err
}

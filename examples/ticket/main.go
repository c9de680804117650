// Command ticket is the MCP starter-template server built on mcpguard:
// search_docs (read-only, filtered to the caller's team), create_ticket (a
// write, allowlist-gated, dry-run by default) and list_tools (read-only,
// the whole registry with each tool's class and whether it is enabled),
// behind one guard that authenticates every call as the real caller,
// enforces the write allowlist, caps calls and cost per session (and per
// user, when server.yaml sets calls_per_user or cost_per_user), and
// audits every decision to a JSONL file and an SQLite (or PostgreSQL)
// database.
//
// Usage:
//
//	ticket [--config server.yaml] tools
//	ticket [--config server.yaml] demo [--allow-writes] [--audit-dir DIR] [--audit-postgres URL]
//	ticket [--config server.yaml] serve-http [--host 127.0.0.1] [--port 8000] [--allow-remote] [--audit-dir DIR] [--redis HOST:PORT|URL] [--audit-postgres URL]
//	        [--jwt-jwks FILE|URL --jwt-issuer ISS --jwt-audience AUD [--jwt-roles-claim roles] [--jwt-team-claim team]]
//	ticket [--config server.yaml] serve-stdio [--audit-dir DIR] [--redis HOST:PORT|URL] [--audit-postgres URL]
//
// server.yaml holds the tool registry (read_only, cost_units, description),
// allowed_write_tools, dry_run and rate_limit; it is parsed strictly and
// cross-checked against the tools in code at start. Without --config the
// copy of examples/ticket/server.yaml embedded in the binary is used.
//
// On SIGHUP serve-http and serve-stdio reopen audit.jsonl (for log
// rotation) and read --config again, with the checks of the start, and
// apply it without a restart ((*mcpguard.Guard).SetPolicy): the calls that
// come after, in every session already open, are decided by its
// allowed_write_tools and cost_units (those under way finish as they were
// allowed), and list_tools and GET /tools show its registry. The reload is
// logged at level INFO with what changed and the file's SHA-256. A file
// that changes what only a restart applies (a tool added or removed, a
// description, rate_limit, dry_run) is refused whole, the log line naming
// it, and so is a file the start would refuse, or a path that names no
// regular file then (a named pipe): the refusal is logged at level ERROR
// ("--config not reloaded") and the server keeps the configuration it
// has. A SIGHUP during the start has the file read again once the server
// is made; without --config, SIGHUP only reopens audit.jsonl.
//
// serve-stdio takes the caller's identity from the TICKET_MCP_TOKEN
// environment variable (never from tool arguments); serve-http takes it
// from each request's Authorization: Bearer header. The token table is a
// development-only static one (token-alice, token-bob, token-admin);
// with --jwt-jwks, serve-http verifies the bearer tokens as JWTs of an
// identity provider instead (signed by a key of the JWK Set, a file read
// at start or a jwks_uri fetched at start and when a token names a key it
// lacks; "iss" --jwt-issuer, "aud" holding --jwt-audience): the caller is
// "sub", its roles the --jwt-roles-claim claim and its team, which
// search_docs filters by, the --jwt-team-claim string claim (either a
// dotted path into nested objects). The --jwt-* flags need --jwt-jwks,
// --jwt-issuer and --jwt-audience (else exit 2); a JWK Set that cannot be
// read or fetched stops the start (exit 1).
// TICKET_MCP_AUDIT_KEY (hex, at least 16 bytes) keys the audit records'
// argument hashes (serve-http, serve-stdio and demo; tools records
// nothing and ignores it); without it each process uses a random key.
//
// The budgets, per session and per user, live in the process's memory
// unless --redis names a Redis (host:port, or
// redis://[user@]host[:port][/db], rediss:// for TLS verified against the
// system's roots, the password in TICKET_MCP_REDIS_PASSWORD and never in
// the URL): then every server on that Redis and database shares them (a
// REST session's calls, and a user's, count together on every replica, and
// across restarts), and a Redis that cannot decide refuses the call
// (RATE_LIMIT_EXCEEDED, retry in 1 s). The audit_log table is
// <audit-dir>/audit.db (SQLite) unless --audit-postgres names a PostgreSQL
// database; audit.jsonl stays in --audit-dir either way. An empty or
// malformed value is a usage error (exit 2); a server that does not
// answer at start stops the start (exit 1). An empty --config or
// --audit-dir, a --port outside 0 to 65535, a non-loopback --host without
// --allow-remote, a malformed TICKET_MCP_AUDIT_KEY and a
// TICKET_MCP_REDIS_PASSWORD without --redis are usage errors too (exit 2):
// every value is checked before anything is opened.
//
// --host must be a loopback address unless --allow-remote is given. At
// shutdown (SIGINT, SIGTERM; for serve-stdio also stdin closed) the
// servers take no new request and give those under way 5 s to be answered
// (serve-stdio answers one read after the signal with -32004, server is
// closing), then wait up to 15 s for the calls still running, so that
// their outcome records reach the audit trail before it closes. demo stops
// at SIGINT or SIGTERM: it makes no further call, removes its temporary
// audit directory and exits 1; a second one ends it at once, with the
// runtime's default (for a demo blocked writing to an output no longer
// read); and it stops as at the first, silently with status 141 (128 plus
// SIGPIPE's number), when its output is closed early (ticket demo | head).
// serve-http goes on when its stdout or stderr is closed early: its writes
// there fail (SIGPIPE is caught), and its audit records are kept.
//
// See README.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/internal/redisaddr"
	"github.com/mcpguard/mcpguard/stdio"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tokenEnv holds the stdio caller's token; the MCP client sets it when it
// launches the server.
const tokenEnv = "TICKET_MCP_TOKEN"

// auditKeyEnv holds the hex key of the audit records' argument hashes
// (HMAC-SHA256, at least 16 bytes); without it each process draws 32
// random bytes, and its hashes compare only with each other.
const auditKeyEnv = "TICKET_MCP_AUDIT_KEY"

// redisPasswordEnv holds the password of the --redis server (of the user
// its URL names, or of the default user), for serve-http and serve-stdio
// with --redis only: the command line, which every user of the host can
// read, may not hold it. Unset means no password.
const redisPasswordEnv = "TICKET_MCP_REDIS_PASSWORD"

// errEmptyConfig is the usage error of --config given as "".
var errEmptyConfig = errors.New("--config: empty file name (leave the flag out for the embedded server.yaml)")

// auditKey returns the key of auditKeyEnv's value v, nil for "" (a random
// key per process).
func auditKey(v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	k, err := hex.DecodeString(v)
	if err != nil || len(k) < 16 {
		return nil, fmt.Errorf("%s must be at least 16 bytes in hex (32 hex digits)", auditKeyEnv)
	}
	return k, nil
}

const usage = `usage: ticket [--config server.yaml] <command> [flags]

commands:
  tools                     print the tool registry (classification, allowlist, cost)
  demo [--allow-writes]     run the four guard-rail scenes in-process
  serve-http                serve MCP Streamable HTTP at /mcp and REST at /tools
  serve-stdio               serve MCP over stdio as the user of $` + tokenEnv + `

serve-http takes --host 127.0.0.1 and --port 8000 (a non-loopback --host
only with --allow-remote), and verifies bearer tokens as JWTs of an identity
provider instead of the dev-only table with --jwt-jwks FILE|URL --jwt-issuer
ISS --jwt-audience AUD [--jwt-roles-claim roles] [--jwt-team-claim team]. serve-http and serve-stdio also take --audit-dir
DIR, --redis HOST:PORT or redis://[user@]host[:port][/db] (rediss:// for TLS)
(per-session and per-user budgets shared on Redis) and --audit-postgres URL
(audit_log in PostgreSQL); demo takes --audit-dir and --audit-postgres.

$` + redisPasswordEnv + ` is the password of the --redis server (of the
user its URL names, or of the default user); never in --redis itself.
PostgreSQL's password is in $PGPASSWORD or ~/.pgpass; never in
--audit-postgres itself.

$` + auditKeyEnv + ` (at least 32 hex digits) keys the records' argument
hashes (HMAC-SHA-256) of serve-http, serve-stdio and demo, so that equal
arguments can be matched across restarts; unset, a key is drawn at start.

On SIGHUP serve-http and serve-stdio reopen audit.jsonl and read --config
again: its allowed_write_tools and cost_units apply at once, in the sessions
already open; a file that changes anything else (tools, descriptions,
rate_limit, dry_run) or that the start would refuse is refused, logged, and
the server keeps its configuration.
`

func main() {
	// go-redis's own lines (a failed dial per refused call while Redis is
	// down) as throttled log records; process-wide, so here and not in run.
	redisaddr.LogTo(slog.New(slog.NewTextHandler(os.Stderr, nil)), 10*time.Second)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the exit: the servers stop when ctx ends. It returns
// the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var configPath string
	global := flag.NewFlagSet("ticket", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.Usage = func() { fmt.Fprint(stderr, usage) }
	global.StringVar(&configPath, "config", "", "server.yaml to use (default: the embedded copy of examples/ticket/server.yaml)")
	if err := cliarg.Parse(global, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // asked for: the usage is the answer
		}
		return 2
	}
	if global.NArg() == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := global.Arg(0), global.Args()[1:]
	fs := flag.NewFlagSet("ticket "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&configPath, "config", configPath, "server.yaml to use")
	var (
		allowWrites bool
		host        = "127.0.0.1"
		port        = 8000
		allowRemote bool
		auditDir    = "ticket-audit"
		redisAddr   string
		pgURL       string
		jwtf        = jwtFlags{rolesClaim: "roles", teamClaim: "team"}
	)
	switch cmd {
	case "tools", "serve-stdio":
	case "demo":
		fs.BoolVar(&allowWrites, "allow-writes", false, "put create_ticket on the write allowlist for the demo (dry_run still applies)")
		auditDir = ""
		fs.StringVar(&auditDir, "audit-dir", "", "keep the demo's audit trail here (default: a temporary directory, removed after)")
		fs.StringVar(&pgURL, "audit-postgres", "", "write (and read back) the audit_log table in this PostgreSQL database (postgres://user@host/db; the password in PGPASSWORD or ~/.pgpass) instead of SQLite")
	case "serve-http":
		fs.StringVar(&host, "host", host, "address to listen on (loopback unless --allow-remote)")
		fs.IntVar(&port, "port", port, "port to listen on (0 picks a free one)")
		fs.BoolVar(&allowRemote, "allow-remote", false, "allow a non-loopback --host")
		fs.StringVar(&jwtf.jwks, "jwt-jwks", "", "verify bearer tokens as JWTs signed by the keys of this JWK Set, a file or the identity provider's jwks_uri (https://, or http:// to a loopback host), instead of the dev-only token table")
		fs.StringVar(&jwtf.issuer, "jwt-issuer", "", `with --jwt-jwks: the JWTs' required "iss"`)
		fs.StringVar(&jwtf.audience, "jwt-audience", "", `with --jwt-jwks: the audience the JWTs' "aud" must hold (this server's identifier)`)
		fs.StringVar(&jwtf.rolesClaim, "jwt-roles-claim", jwtf.rolesClaim, "with --jwt-jwks: the claim holding the caller's roles (an array of strings or a space-separated string; a dotted path reads nested objects)")
		fs.StringVar(&jwtf.teamClaim, "jwt-team-claim", jwtf.teamClaim, "with --jwt-jwks: the string claim holding the caller's team, which search_docs filters by (a dotted path reads nested objects)")
	default:
		// Not echoed whole when it may hold a secret: a URL whose flag
		// was forgotten, or an assignment of TICKET_MCP_TOKEN.
		fmt.Fprintf(stderr, "ticket: unknown command %s\n", cliarg.Shown(cmd))
		fmt.Fprint(stderr, usage)
		return 2
	}
	if cmd == "serve-http" || cmd == "serve-stdio" {
		fs.StringVar(&auditDir, "audit-dir", auditDir, "directory for audit.jsonl and audit.db")
		fs.StringVar(&redisAddr, "redis", "", "keep the per-session and per-user budgets on this Redis, host:port or redis://[user@]host[:port][/db] (rediss:// for TLS; the password in $"+redisPasswordEnv+"), shared by every server on it and its database (default: in memory)")
		fs.StringVar(&pgURL, "audit-postgres", "", "write the audit_log table to this PostgreSQL database (postgres://user@host/db; the password in PGPASSWORD or ~/.pgpass) instead of audit.db")
	}
	if err := cliarg.Parse(fs, rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		// Not echoed whole when it may hold a secret: a URL meant for
		// --audit-postgres, or an assignment of a secret variable.
		fmt.Fprintf(stderr, "ticket %s: unexpected arguments %s\n", cmd, cliarg.List(fs.Args()))
		return 2
	}
	// A flag given twice keeps its last value in the flag package: a
	// second --config or --audit-dir in a script would replace the first
	// without a word. --config before the command and after it is twice.
	twice := cliarg.Twice(global, args)
	if twice == "" {
		twice = cliarg.Twice(fs, rest)
	}
	global.Visit(func(f *flag.Flag) {
		fs.Visit(func(g *flag.Flag) {
			if g.Name == f.Name {
				twice = f.Name
			}
		})
	})
	if twice != "" {
		fmt.Fprintf(stderr, "ticket %s: --%s is given twice: give it once (the flag package would keep the last value)\n", cmd, twice)
		return 2
	}
	// Every value is checked here, before anything is opened (the audit
	// directory and files, Redis, PostgreSQL, the stdio channel): a wrong
	// one is a usage error. A backend flag or --audit-dir given is
	// checked even empty: "" would otherwise mean memory, SQLite or the
	// default directory, silently.
	var bad error
	// --config "" (an empty variable in a template) would otherwise mean
	// the embedded server.yaml, silently: its allowlist, dry_run and caps
	// instead of the file meant.
	global.Visit(func(f *flag.Flag) {
		if f.Name == "config" && configPath == "" {
			bad = errEmptyConfig
		}
	})
	redisPassword, redisGiven, jwtGiven := os.Getenv(redisPasswordEnv), false, false
	fs.Visit(func(f *flag.Flag) {
		redisGiven = redisGiven || f.Name == "redis"
		jwtGiven = jwtGiven || strings.HasPrefix(f.Name, "jwt-")
		switch {
		case bad != nil:
		case f.Name == "config" && configPath == "":
			bad = errEmptyConfig
		case f.Name == "redis":
			bad = redisFlag(redisAddr, redisPassword).Check()
		case f.Name == "audit-postgres":
			_, bad = postgresConfig(pgURL)
		case f.Name == "audit-dir" && auditDir == "":
			bad = errors.New("--audit-dir: empty directory name (leave the flag out for the default)")
		}
	})
	if bad == nil && redisPassword != "" && !redisGiven && (cmd == "serve-http" || cmd == "serve-stdio") {
		// As an empty --redis: the budgets would be in memory, silently.
		bad = fmt.Errorf("%s needs --redis: without it the budgets are in the process's memory; unset it, or name the Redis", redisPasswordEnv)
	}
	var key []byte
	if bad == nil {
		bad = jwtf.check(jwtGiven)
	}
	if bad == nil && cmd == "serve-http" {
		if port < 0 || port > 65535 {
			bad = fmt.Errorf("--port %d: not a port (0 to 65535; 0 picks a free one)", port)
		} else {
			bad = checkLoopback(host, allowRemote)
		}
	}
	if bad == nil && cmd != "tools" { // tools records nothing
		key, bad = auditKey(os.Getenv(auditKeyEnv))
	}
	if bad != nil {
		fmt.Fprintf(stderr, "ticket %s: %v\n", cmd, bad)
		return 2
	}
	// info takes the lines an operator looks for (a reload, a reopening of
	// audit.jsonl, a dry run) at level INFO, which log leaves out.
	info := slog.New(slog.NewTextHandler(stderr, nil))

	// SIGHUP, which a log rotator or a service manager's reload may send
	// at any time, reads --config again (reloader) and reopens
	// audit.jsonl (newApp). From here it no longer ends the process (its
	// default action): one that comes before the server is made has the
	// file read again once it is.
	var rl *reloader
	if cmd == "serve-http" || cmd == "serve-stdio" {
		rl = &reloader{log: info, path: configPath}
		stopReload := hangup.Handle(rl.hangup)
		defer stopReload()
	}

	// Stdio: take the JSON-RPC channel off fds 0 and 1 before anything
	// else can print. A signal stops it gracefully (see serveStdio).
	var isolated mcp.Transport
	if cmd == "serve-stdio" {
		t, err := stdio.Isolate(&stdio.Options{Stop: ctx.Done(), DrainTimeout: shutdownGrace})
		if err != nil {
			fmt.Fprintln(stderr, "ticket:", err)
			return 1
		}
		isolated = t
	}

	cfg, name, sum, err := loadConfigSum(configPath)
	if err != nil {
		fmt.Fprintln(stderr, "ticket:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	switch cmd {
	case "tools":
		if err := checkRegistry(name, cfg, tools(&TicketSystem{}, func() *config { return cfg })); err != nil {
			fmt.Fprintln(stderr, "ticket:", err)
			return 1
		}
		printRegistry(stdout, cfg)
		return 0
	case "demo":
		// An output closed early (`ticket demo | head -1`) stops the demo
		// as a signal does, so that it removes its temporary directory:
		// with SIGPIPE notified, such a write fails (EPIPE) instead of
		// ending the process with the signal.
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
		// A demo blocked writing to an output that is no longer read
		// (`ticket demo | less`, paused) never reaches its next call, and
		// main's signal context would take every further signal until run
		// returns: once ctx ends, a second SIGINT or SIGTERM ends the
		// process at once, with the runtime's default, as in
		// examples/demo.
		defer context.AfterFunc(ctx, func() { signal.Reset(os.Interrupt, syscall.SIGTERM) })()
		dctx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		err := runDemo(dctx, &demoOutput{w: stdout, stop: stop}, name, cfg, allowWrites, auditDir, pgURL, key)
		if oe, ok := context.Cause(dctx).(demoOutputError); ok {
			if errors.Is(oe.err, syscall.EPIPE) {
				return 128 + int(syscall.SIGPIPE) // silently, as the signal would have
			}
			err = oe
		}
		if err != nil {
			if ctx.Err() != nil {
				err = errors.New("interrupted; stopped")
			}
			fmt.Fprintln(stderr, "ticket demo:", err)
			return 1
		}
		return 0
	}

	// The JWT keys before the port: a JWK Set that cannot be read or
	// fetched fails the start before anything listens.
	var verifier *token.JWT
	if jwtf.jwks != "" {
		var err error
		if verifier, err = jwtf.verifier(ctx, info); err != nil {
			fmt.Fprintf(stderr, "ticket %s: %v\n", cmd, err)
			return 1
		}
		info.Info("ticket: verifying bearer tokens as JWTs, not with the dev-only token table",
			"issuer", jwtf.issuer, "audience", jwtf.audience, "roles_claim", jwtf.rolesClaim, "team_claim", jwtf.teamClaim)
	}

	// The port first: one in use fails the start before the audit directory
	// and files are created.
	var ln net.Listener
	if cmd != "serve-stdio" {
		var err error
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
			fmt.Fprintln(stderr, "ticket:", err)
			return 1
		}
		defer ln.Close()
	}
	if err := os.MkdirAll(auditDir, 0o700); err != nil {
		fmt.Fprintln(stderr, "ticket:", err)
		return 1
	}
	opts := appOptions{ConfigName: name, Config: cfg, AuditDir: auditDir, Log: log,
		Marks: info, Events: info, ArgsKey: key,
		Redis: redisAddr, RedisPassword: redisPassword, AuditPostgres: pgURL, JWT: verifier}
	if cmd == "serve-stdio" {
		opts.Authn = func(t *token.Table) mcpguard.Authenticator { return mcpguard.FromEnv(tokenEnv, t) }
	}
	if cmd == "serve-http" {
		// An output whose reader went away (`2>&1 | head`, a log collector
		// that died) must not end the server in the middle of a call, before
		// its audit records: with SIGPIPE notified, a write to it fails
		// (EPIPE) instead. (stdio.Isolate does the same for serve-stdio.)
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
	}
	a, err := newApp(opts)
	if err != nil {
		fmt.Fprintln(stderr, "ticket:", err)
		return 1
	}
	defer a.Close()
	if cmd == "serve-http" {
		// The first line on stdout is the address, for scripts and tests:
		// before the start's log lines, for an output that takes both.
		// Connections wait in the listener's queue until serveHTTP.
		fmt.Fprintf(stdout, "ticket: serving http://%s (MCP at /mcp, REST at /tools)\n", ln.Addr())
	}
	if rl != nil {
		// The configuration's SHA-256, to compare with a reload's (made
		// may reload at once, after a SIGHUP during the start).
		info.Info("configuration in force", "config", name, "sha256", sum)
	}
	rl.made(a)
	defer rl.closing() // before a.Close: no reload into a closed app

	if cmd == "serve-stdio" {
		// A token that resolves to no caller (unset, or one the table does
		// not hold: a typo, a blank around it) refuses every call: said at
		// start, never showing the value.
		switch tok := os.Getenv(tokenEnv); {
		case tok == "":
			log.Warn(tokenEnv + " is not set: every call will be refused as UNAUTHENTICATED")
		case a.ids.table.Lookup(tok) == nil:
			log.Warn(tokenEnv + " holds a token that is not in the dev-only token table: every call will be refused as UNAUTHENTICATED")
		}
		// One stdio process is one MCP session; name it, so the limiter
		// and the audit trail key on it.
		sid := "stdio-" + rand.Text()[:12]
		fmt.Fprintln(stderr, "ticket: serving MCP on stdio, session", sid)
		err = serveStdio(ctx, a.server, &sessionTransport{t: isolated, id: sid}, stderr, log)
		// Calls may still run (one that ignored its cancellation): their
		// outcome records must reach the sinks before the deferred Close.
		a.waitIdle(log)
		if err != nil {
			fmt.Fprintln(stderr, "ticket:", err)
			return 1
		}
		return 0
	}

	if err := serveHTTP(ctx, a, ln, log); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "ticket:", err)
		return 1
	}
	return 0
}

// serveStdio serves the one stdio session until the client ends it
// (closing stdin) or ctx ends (SIGINT, SIGTERM). A signal is a graceful
// stop, said on stderr like the start and not as an error: the transport,
// whose Stop is ctx.Done(), answers the requests it reads from then on
// with -32004 (server is closing) and ends the session once the calls
// under way are answered, or after shutdownGrace, cancelling those still
// running. (server.Run would close the session at the signal, and the
// go-sdk writes nothing once it is closing: the answers of the calls under
// way would be lost, and Run logs the stop at level ERROR.) A call that
// ignores its cancellation is not waited for beyond a second more; run
// then waits for it, up to shutdownWait, for its audit records.
func serveStdio(ctx context.Context, server *mcp.Server, t mcp.Transport, stderr io.Writer, log *slog.Logger) error {
	err := stdio.Serve(ctx, server, t, shutdownGrace+time.Second, func() {
		fmt.Fprintf(stderr, "ticket: stopping on a signal: new requests are refused; the calls under way finish and are answered (up to %v)\n", shutdownGrace)
	})
	if errors.Is(err, stdio.ErrStopTimeout) {
		log.Warn("ticket: a call under way did not end after its cancellation; stopping without its answer")
		return nil
	}
	return err
}

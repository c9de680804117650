// Command refund is a strictly validated MCP server with two tools,
// get_customer_record and trigger_refund, built on mcpguard.
//
// Over stdio (the default) the caller's identity is the token in the
// REFUND_MCP_TOKEN environment variable, set by the MCP client that
// launches the server; without a known token every call is refused as
// unauthenticated. trigger_refund is a write tool on the allowlist, with a
// refund budget per session and per caller that refills continuously
// (-session-cap, -user-cap, -cap-window); it never refunds a customer more
// in all than they paid, within one process (the records are in its
// memory: a restarted server, or a second one, starts from nothing
// refunded). Every decision on a tool call is audited to -audit (a JSONL
// file) or to stderr. Standard output carries JSON-RPC and nothing else: a
// stray print lands on stderr. SIGTERM and SIGINT stop it gracefully:
// requests read after the signal are refused (-32004), the calls under way
// finish, are audited and answered (for up to 5 seconds), and it exits 0;
// closing stdin ends it after the answers too.
//
// With -http 127.0.0.1:PORT it serves the same tools plus admin_reset_key
// and admin_list_audit_log over Streamable HTTP, deliberately without
// authentication: it is the downstream of the gateway demo and trusts
// whoever reaches it. GET /_received lists the requests that reached it.
//
// See README.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// usage heads the flags in -h: what no flag says, who the caller is.
const usage = `Usage: refund [flags]

A strictly validated MCP server: get_customer_record and trigger_refund.

Over stdio (the default) the caller is the owner of the token in
` + tokenEnv + `, looked up in the token table ` + tokensEnv + ` (a JSON
object; unset or empty, the demo tokens demo-token-alice and
demo-token-bob). Without a known token every call is refused as
unauthenticated.

With -http it serves Streamable HTTP instead, WITHOUT authentication: it
trusts the gateway's identity headers (the gateway demo's downstream); with
REFUND_GATEWAY_SIGN_KEY set, only requests the gateway signed with that key.

Flags:
`

// config holds the command line.
type config struct {
	httpAddr    string
	allowRemote bool
	auditPath   string
	sessionCap  float64
	userCap     float64
	capWindow   time.Duration
	strayPrints bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is main without the exit; it returns the exit status.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("refund", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8081; port 0 picks one) instead of stdio; UNAUTHENTICATED, for the gateway demo")
	fs.BoolVar(&cfg.allowRemote, "allow-remote", false, "let -http listen on a non-loopback address (the HTTP mode trusts whoever reaches it)")
	fs.StringVar(&cfg.auditPath, "audit", "", "append the audit trail to this JSONL file; empty means stderr")
	fs.Float64Var(&cfg.sessionCap, "session-cap", 500, "refund budget of a session: a bucket of this amount, refilling continuously at this amount per -cap-window (so over any span d at most cap + cap*d/window is refunded)")
	fs.Float64Var(&cfg.userCap, "user-cap", 500, "refund budget of a caller: a bucket of this amount, refilling continuously at this amount per -cap-window (so over any span d at most cap + cap*d/window is refunded)")
	fs.DurationVar(&cfg.capWindow, "cap-window", time.Hour, "time an empty refund budget takes to refill completely")
	fs.BoolVar(&cfg.strayPrints, "demo-stray-prints", false, "make the tool handlers print a debugging line to stdout, to show that stdout isolation sends it to stderr")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := cliarg.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // asked for: the usage is the answer
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "refund: unexpected arguments %s\n", cliarg.List(fs.Args()))
		return 2
	}
	if name := cliarg.Twice(fs, args); name != "" {
		fmt.Fprintf(stderr, "refund: -%s is given twice: give it once (the flag package would keep the last value)\n", name)
		return 2
	}
	if err := checkFlags(cfg); err != nil {
		fmt.Fprintln(stderr, "refund:", err)
		return 2
	}

	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Stdio: take the JSON-RPC channel off fds 0 and 1 before anything else
	// can print. A signal stops it gracefully (see serveSession).
	var transport mcp.Transport
	if cfg.httpAddr == "" {
		t, err := stdio.Isolate(&stdio.Options{Logger: log, Stop: ctx.Done(), DrainTimeout: stopGrace})
		if err != nil {
			fmt.Fprintln(stderr, "refund:", err)
			return 1
		}
		transport = t
	}

	if err := serve(ctx, cfg, transport, stderr, log); err != nil {
		log.Error("refund: " + err.Error())
		return 1
	}
	return 0
}

// serve builds the server and serves it until ctx ends or, on stdio, the
// client closes stdin.
func serve(ctx context.Context, cfg config, transport mcp.Transport, stderr io.Writer, log *slog.Logger) (err error) {
	if err := checkFlags(cfg); err != nil {
		return err
	}
	st := newStore()

	// The audit trail: a JSONL file, or JSON lines on stderr. Never stdout.
	var sink audit.Sink
	if cfg.auditPath != "" {
		js, oerr := audit.OpenJSONL(cfg.auditPath, nil)
		if oerr != nil {
			return oerr
		}
		defer func() {
			// The last records reach the file here (the sink buffers
			// them): a failure loses them, and is the server's failure.
			if cerr := js.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("closing the audit file: its last records may be lost: %w", cerr))
			}
		}()
		defer hangup.Reopen(log, cfg.auditPath, js)() // for log rotation; stops before the Close
		sink = js
	} else {
		sink = audit.NewSlogSink(slog.NewJSONHandler(stderr, nil), nil)
		defer hangup.Reopen(log, "", nil)() // SIGHUP does not end the server
	}

	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.Session, Tool: "trigger_refund", Max: cfg.sessionCap, Window: cfg.capWindow},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "trigger_refund", Max: cfg.userCap, Window: cfg.capWindow},
	}, nil)
	if err != nil {
		return err
	}
	opts := &mcpguard.Options{
		ProtocolErrors: true,
		NotFoundCode:   -32601, // the refund server's contract: unknown tool is METHOD_NOT_FOUND
		Audit:          sink,
		Limiter:        lim,
		Tools: map[string]mcpguard.ToolOptions{
			// Its dry runs answer in its own output shape (see triggerRefund).
			"trigger_refund": {Cost: st.refundCost, RecordArgs: []string{"customer_id", "amount"}, DryRunAware: true},
		},
		Logger: log,
	}
	if cfg.httpAddr != "" {
		// Behind the gateway: its request id joins the two audit trails.
		opts.RequestIDHeader = headerRequestID
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "refund", Version: "v1.0.0"}, &mcp.ServerOptions{
		// The SDK's session chatter only from warnings up.
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	addCustomerTools(server, st, cfg.strayPrints)

	if cfg.httpAddr != "" {
		return serveHTTP(ctx, cfg, server, st, opts, log)
	}

	tokens, err := loadTokens(os.Getenv(tokensEnv), log)
	if err != nil {
		return err
	}
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write},
		},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		return err
	}
	// Resolved once, here: say so now if no call can succeed.
	switch tok := os.Getenv(tokenEnv); {
	case tok == "":
		log.Warn(tokenEnv + " is not set: every call will be refused as unauthenticated")
	case tokens.Lookup(tok) == nil:
		log.Warn(tokenEnv + " holds a token that is not in the token table: every call will be refused as unauthenticated")
	}
	// One stdio process is one session: key the session cap on it. The key
	// is also the audit records' session_id, so it is the process's own:
	// a trail that spans a restart, or two processes on one -audit file,
	// tells their sessions apart.
	session, err := sessionID()
	if err != nil {
		return err
	}
	opts.SessionKey = func(*mcp.CallToolRequest, *mcpguard.Identity) string { return session }
	// SessionKey applies to authenticated calls only: the records of the
	// others get the session's id from the sink.
	opts.Audit = withSession(opts.Audit, session)
	g, err := mcpguard.New(pol, mcpguard.FromEnv(tokenEnv, tokens), opts)
	if err != nil {
		return err
	}
	if err := g.Install(server); err != nil {
		return err
	}
	// Runs before the audit file's Close: the calls under way (a client
	// gone, an interrupt) record their outcome first.
	defer waitCalls(g, log)
	log.Info("refund: serving MCP on stdio")
	return serveSession(ctx, server, transport, log)
}

// minCap is the smallest cap: one cent, the smallest refund. Below it no
// refund could ever pass.
const minCap = 0.01

// checkFlags refuses flag values that can never work: caps that are not
// finite amounts of at least minCap, a -cap-window outside the limiter's
// range, an -http address that is not host:port with a numeric port or,
// without -allow-remote, not a loopback one. run reports them as usage
// errors (exit 2) before anything is opened. Errors name the flag.
func checkFlags(cfg config) error {
	for _, c := range []struct {
		name string
		v    float64
	}{{"-session-cap", cfg.sessionCap}, {"-user-cap", cfg.userCap}} {
		if !(c.v >= minCap) || math.IsInf(c.v, 0) {
			return fmt.Errorf("%s %v: want a finite amount of at least %v (one cent, the smallest refund)", c.name, c.v, minCap)
		}
	}
	if cfg.capWindow < limiter.MinWindow || cfg.capWindow > limiter.MaxWindow {
		return fmt.Errorf("-cap-window %v: want a duration from %v to %v", cfg.capWindow, limiter.MinWindow, limiter.MaxWindow)
	}
	if cfg.httpAddr != "" {
		if _, err := loopbackAddr(cfg.httpAddr, cfg.allowRemote); err != nil {
			return err
		}
	} else if cfg.allowRemote {
		// Meant for -http, forgotten: the server would serve stdio.
		return errors.New("-allow-remote applies to -http, which is not set: the server would serve stdio")
	}
	return nil
}

// stopGrace is how long, after SIGTERM or SIGINT, the calls under way
// over stdio have to finish and be answered; then the transport ends the
// session, cancelling those still running.
const stopGrace = 5 * time.Second

// serveSession serves the one stdio session until the client ends it
// (closing stdin) or ctx ends (SIGTERM, SIGINT). A signal is a graceful
// stop, logged as such and not as an error (server.Run would log it at
// level ERROR, and close the session at once: the go-sdk writes nothing
// once the session is closing, so the answers of the calls under way
// would be lost). The transport, stopped by the same signal, refuses the
// requests it reads from then on (-32004) and ends the session once the
// calls under way are answered, or after stopGrace; a call that ignores
// its cancellation is not waited for beyond a second more (serve then
// waits for it for the sake of its audit records, up to 15 s).
func serveSession(ctx context.Context, server *mcp.Server, transport mcp.Transport, log *slog.Logger) error {
	err := stdio.Serve(ctx, server, transport, stopGrace+time.Second, func() {
		log.Info("refund: stopping on a signal: new requests are refused; the calls under way finish and are answered", "grace", stopGrace)
	})
	if errors.Is(err, stdio.ErrStopTimeout) {
		log.Warn("refund: a call under way did not end after its cancellation; stopping without its answer")
		return nil
	}
	return err
}

// sessionID returns a new id for the stdio session: "stdio-" and 12
// random hexadecimal digits.
func sessionID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	return "stdio-" + hex.EncodeToString(b), nil
}

// waitCalls waits until g has no call under way, so that their outcome
// records reach the audit sink before it is closed: at most 15 s, which
// only a hung call reaches (the tools answer at once; no call deadline is
// set).
func waitCalls(g *mcpguard.Guard, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		log.Warn("refund: closing with calls still under way; their audit records may be lost")
	}
}

// sessionSink gives the audit records that have no session_id the stdio
// process's own. The guard gives a call its session (Options.SessionKey)
// once the call is authenticated, so the records of the calls refused as
// unauthenticated (no token, an unknown one) would have none, and a trail
// that two processes share, or that spans a restart, could not tell
// whose they are.
type sessionSink struct {
	sink    audit.Sink
	session string
}

// withSession returns sink with the records that have no session_id given
// session; an [audit.Keeper] stays one.
func withSession(sink audit.Sink, session string) audit.Sink {
	s := sessionSink{sink: sink, session: session}
	if k, ok := sink.(audit.Keeper); ok {
		return &sessionKeeper{sessionSink: s, keeper: k}
	}
	return &s
}

// stamp returns e, or a copy of it with the session when it has none (a
// sink does not modify the event it is given to write).
func (s *sessionSink) stamp(e *audit.Event) *audit.Event {
	if e == nil || e.SessionID != "" {
		return e
	}
	c := *e
	c.SessionID = s.session
	return &c
}

func (s *sessionSink) Write(ctx context.Context, e *audit.Event) error {
	return s.sink.Write(ctx, s.stamp(e))
}

// WriteDurable keeps the write-ahead intents as durable as the sink makes them.
func (s *sessionSink) WriteDurable(ctx context.Context, e *audit.Event) error {
	return audit.WriteDurable(ctx, s.sink, s.stamp(e))
}

// sessionKeeper is a sessionSink of an [audit.Keeper].
type sessionKeeper struct {
	sessionSink
	keeper audit.Keeper
}

// Keep sets the session in e, which Keep hands over to the sink.
func (s *sessionKeeper) Keep(ctx context.Context, e *audit.Event, args json.RawMessage) error {
	if e != nil && e.SessionID == "" {
		e.SessionID = s.session
	}
	return s.keeper.Keep(ctx, e, args)
}

// Command demo walks through what mcpguard does for an MCP server, end to
// end and on embedded defaults: a refund server guarded by mcpguard, two
// users connected over in-memory transports, every decision audited to an
// SQLite file, and the audit trail queried at the end.
//
//	go run ./examples/demo
//
// Flags: -audit PATH keeps the SQLite audit database at PATH (default: a
// temporary file, removed at exit); a kept database collects every run, a
// run stopped early (below) with the record of each call it made, and the
// demo prints the records of its own run, those of its sessions
// (session_id "demo-", 12 random hexadecimal digits of the run, "-" and
// the session's number), also while another run writes to the same
// database. An empty -audit, and any other argument, is refused (exit
// status 2); -h prints the usage (status 0). SIGHUP is logged to stderr
// and ignored, as by the other example binaries. Ctrl-C (SIGINT) or
// SIGTERM stops the walkthrough, removes the temporary database, and exits
// with status 128 plus the signal's number (130, 143); a second one ends
// the demo at once. An output closed early (a built demo's | head) stops
// it the same way, silently, with status 141 (128 plus SIGPIPE's number;
// under go run, the go command says "exit status 141" and exits 1);
// another failure to write the output, with status 1.
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
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var customers = map[string]string{"CUST-00001": "Ada Lovelace", "CUST-00002": "Alan Turing"}

type recordIn struct {
	CustomerID string `json:"customer_id"`
}

type refundIn struct {
	CustomerID string  `json:"customer_id"`
	Amount     float64 `json:"amount"`
	Reason     string  `json:"reason"`
}

const idSchema = `{"type":"string","pattern":"^CUST-[A-Z0-9]{5}$"}`

func main() {
	os.Exit(demo(os.Args[1:], os.Stdout, os.Stderr))
}

// demo is main without the exit: it parses args, runs the walkthrough
// printing to stdout, and returns the exit status.
func demo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	auditPath := fs.String("audit", "", "SQLite audit database (default: a temporary file)")
	if err := cliarg.Parse(fs, args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected arguments %s (the audit database is -audit PATH)\n", cliarg.List(fs.Args()))
		fs.Usage()
		return 2
	}
	if cliarg.Twice(fs, args) != "" {
		fmt.Fprintln(stderr, "demo: -audit is given twice: give it once (the flag package would keep the last value)")
		return 2
	}
	// -audit given empty (-audit "$AUDIT", unset) asked to keep the
	// trail: a temporary database, removed at exit, would lose it.
	emptyAudit := false
	fs.Visit(func(f *flag.Flag) { emptyAudit = emptyAudit || (f.Name == "audit" && *auditPath == "") })
	if emptyAudit {
		fmt.Fprintln(stderr, "demo: -audit: empty path (leave the flag out for a temporary database)")
		return 2
	}
	// SIGHUP, which a log rotator or a closing terminal sends, does not end
	// the demo (and leave its temporary database behind), as it does not
	// end the other example binaries.
	defer hangup.Reopen(slog.New(slog.NewTextHandler(stderr, nil)), "", nil)()
	// Ctrl-C or SIGTERM ends the walkthrough through its context, so that
	// its deferred cleanup runs (with the Go runtime's default, the
	// temporary database stayed behind).
	ctx, stop := interruptible(stderr)
	defer stop()
	// So does an output that can no longer be written, as `| head -1`
	// leaves it: with SIGPIPE notified, such a write fails (EPIPE) instead
	// of ending the process with the signal.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err := walk(ctx, *auditPath, &output{w: stdout, stop: cancel})
	switch cause := context.Cause(ctx).(type) {
	case interrupted:
		return 128 + int(cause.Signal)
	case outputError:
		if errors.Is(cause.err, syscall.EPIPE) {
			return 128 + int(syscall.SIGPIPE) // silently, as the signal would have
		}
		fmt.Fprintln(stderr, "demo: writing the output:", cause.err)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	return 0
}

// output is the walkthrough's output: its first failed write stops the
// walkthrough, through stop, with an [outputError] cause.
type output struct {
	w    io.Writer
	stop context.CancelCauseFunc
}

func (o *output) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.stop(outputError{err})
	}
	return n, err
}

// outputError is the cause of the walkthrough's context once its output
// has failed.
type outputError struct{ err error }

func (o outputError) Error() string { return "output: " + o.err.Error() }

// interrupted is the cause of the walkthrough's context once a signal
// has stopped it.
type interrupted struct{ syscall.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.Signal.String() }

// interruptible returns a context that SIGINT or SIGTERM cancels with an
// [interrupted] cause, saying so on stderr; a second such signal then
// ends the process with the runtime's default. stop releases the signals.
func interruptible(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			sig, _ := s.(syscall.Signal)
			fmt.Fprintf(stderr, "demo: interrupted (%v); stopping\n", s)
			cancel(interrupted{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// run is the walkthrough, not interruptible.
func run(auditPath string, out io.Writer) error {
	return walk(context.Background(), auditPath, out)
}

// walk runs the walkthrough, printing to out, until it ends or ctx is
// done: then it stops, cleans up and returns ctx's error.
func walk(ctx context.Context, auditPath string, out io.Writer) error {
	// A kept database (-audit) holds other runs too, earlier ones and
	// any running at the same time: list this run's, those of its
	// sessions (see sessionTransport).
	start := time.Now()
	rid, err := runID()
	if err != nil {
		return err
	}
	// where names the database in the trail's heading: a temporary one is
	// gone at exit, and its name would send its reader to no file.
	where := filepath.Base(auditPath)
	if auditPath == "" {
		where = "a temporary database, removed at exit (-audit PATH keeps it)"
		dir, err := os.MkdirTemp("", "mcpguard-demo-")
		if err != nil {
			// Its error alone ("stat /gone: no such file or directory")
			// says neither what was made there nor how to do without.
			return fmt.Errorf("the temporary audit database, in %s: %w (-audit PATH keeps it elsewhere)", os.TempDir(), err)
		}
		defer os.RemoveAll(dir)
		auditPath = filepath.Join(dir, "audit.db")
	}

	// The server: a read tool and a write tool, registered with the go-sdk
	// as usual. The refund handler would call the payment API with the
	// caller's own credential (auth passthrough).
	refunds := 0
	server := mcp.NewServer(&mcp.Implementation{Name: "refunds", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name: "get_customer_record", Description: "Look up a customer",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"customer_id":` + idSchema + `},"required":["customer_id"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in recordIn) (*mcp.CallToolResult, map[string]any, error) {
		name, ok := customers[in.CustomerID]
		return nil, map[string]any{"found": ok, "customer_id": in.CustomerID, "name": name}, nil
	})
	mcp.AddTool(server, &mcp.Tool{
		Name: "trigger_refund", Description: "Refund a customer",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"customer_id":` + idSchema + `,
			"amount":{"type":"number","exclusiveMinimum":0},"reason":{"type":"string","minLength":10}},
			"required":["customer_id","amount","reason"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in refundIn) (*mcp.CallToolResult, map[string]any, error) {
		refunds++
		return nil, map[string]any{"status": "refunded", "amount": in.Amount, "by": mcpguard.PrincipalFromContext(ctx).Subject}, nil
	})
	server.AddTool(&mcp.Tool{Name: "admin_reset_key", InputSchema: json.RawMessage(`{"type":"object","properties":{"key_id":{"type":"string"}},"required":["key_id"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "key reset"}}}, nil
		})

	// The policy is data.
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write, Confirm: true},
			{Name: "admin_reset_key", Class: policy.Write},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		return err
	}
	db, err := audit.OpenSQLite(auditPath)
	if err != nil {
		return err
	}
	defer db.Close()
	sink, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		return err
	}
	// Every way out closes the sink, so that its queue is drained into
	// the database (closed after it) and a kept one (-audit) has the record
	// of every call made, a walkthrough stopped early too: first the
	// server sessions, whose Close waits for the calls under way (one cut
	// short by the stop may still run on the server, a refund whose human
	// was asked, say), then the sink.
	var servers []*mcp.ServerSession
	sinkClosed := false
	closeSink := func() error {
		if sinkClosed {
			return nil
		}
		sinkClosed = true
		for _, ss := range servers {
			_ = ss.Close()
		}
		return sink.Close()
	}
	defer closeSink()
	lim, err := limiter.New(demoLimits(), nil)
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "demo", Secret: secret}}, nil)
	if err != nil {
		return err
	}
	tokens, err := token.New(map[string]*policy.Principal{
		"tok-ada": {Subject: "ada@example.com", Roles: []string{"support", "admin"}},
		"tok-bob": {Subject: "bob@example.com", Roles: []string{"support"}},
	})
	if err != nil {
		return err
	}
	// In-memory sessions carry no HTTP headers, so the demo hands each
	// session its user's token the way a stdio server gets it from its
	// launching environment.
	sessionTokens := map[*mcp.ServerSession]string{}
	authn := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		tok := sessionTokens[ss]
		if p := tokens.Lookup(tok); p != nil {
			return &mcpguard.Identity{Principal: p, Credential: mcpguard.NewCredential(tok)}, nil
		}
		return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "no token")
	})
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{
		Audit:     sink,
		Limiter:   lim,
		Confirmer: signer,
		Tools: map[string]mcpguard.ToolOptions{"trigger_refund": {
			Cost: func(args map[string]any) (float64, error) { return args["amount"].(json.Number).Float64() },
		}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	if err := g.Install(server); err != nil {
		return err
	}

	connect := func(token string, approve bool) (*mcp.ClientSession, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, sessionTransport{st, fmt.Sprintf("%s-%d", rid, len(servers)+1)}, nil)
		if err != nil {
			return nil, err
		}
		servers = append(servers, ss)
		sessionTokens[ss] = token
		client := mcp.NewClient(&mcp.Implementation{Name: "demo-agent", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				action := "decline"
				if approve {
					action = "accept"
				}
				fmt.Fprintf(out, "    human is asked: %q -> %s\n", req.Params.Message, action)
				return &mcp.ElicitResult{Action: action}, nil
			},
		})
		return client.Connect(ctx, ct, nil)
	}
	show := func(cs *mcp.ClientSession, label, tool string, args any, meta mcp.Meta) {
		if ctx.Err() != nil {
			return // interrupted: nothing more to show
		}
		fmt.Fprintf(out, "  %s\n", label)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
		switch {
		case err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled):
			// The demo gave the call up, not the server: no protocol error.
			fmt.Fprintln(out, "    -> interrupted: the demo stopped before the answer came")
		case err != nil:
			fmt.Fprintf(out, "    -> protocol error: %v\n", err)
		case res.IsError:
			fmt.Fprintf(out, "    -> refused: %s\n", briefError(res))
		default:
			fmt.Fprintf(out, "    -> ok: %s\n", brief(res))
		}
	}

	// section prints a section's heading, unless the walkthrough was
	// interrupted: a section it no longer runs is not announced.
	section := func(heading string) {
		if ctx.Err() == nil {
			fmt.Fprintf(out, "\n%s\n", heading)
		}
	}

	fmt.Fprintln(out, "mcpguard demo: a refund server behind mcpguard")
	ada, err := connect("tok-ada", true)
	if err != nil {
		return err
	}
	bob, err := connect("tok-bob", false)
	if err != nil {
		return err
	}
	anon, err := connect("", false)
	if err != nil {
		return err
	}
	for _, u := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"ada (support, admin)", ada}, {"bob (support)", bob}} {
		lt, err := u.cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		var names []string
		for _, t := range lt.Tools {
			names = append(names, t.Name)
		}
		fmt.Fprintf(out, "\n%s sees: %s\n", u.name, strings.Join(names, ", "))
	}

	section("Authentication")
	show(anon, "no token: get_customer_record", "get_customer_record", map[string]any{"customer_id": "CUST-00001"}, nil)
	section("Reads, strictly validated")
	show(bob, "bob: get_customer_record CUST-00001", "get_customer_record", map[string]any{"customer_id": "CUST-00001"}, nil)
	show(bob, "bob: get_customer_record with a malformed id", "get_customer_record", map[string]any{"customer_id": "cust-1"}, nil)
	show(bob, `bob: trigger_refund with amount "10.0" (a string)`, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": "10.0", "reason": "damaged on arrival"}, nil)
	show(bob, "bob: get_customer_record with an extra field admin=true", "get_customer_record", map[string]any{"customer_id": "CUST-00001", "admin": true}, nil)
	section("Hidden and disallowed tools")
	show(bob, "bob: admin_reset_key (hidden: looks exactly like a tool that does not exist)", "admin_reset_key", map[string]any{"key_id": "K1"}, nil)
	show(bob, "bob: no_such_tool", "no_such_tool", map[string]any{}, nil)
	show(ada, "ada: admin_reset_key (a write not on the allowlist)", "admin_reset_key", map[string]any{"key_id": "K1"}, nil)
	section("Writes: dry-run, then a signed one-time human confirmation")
	show(bob, "bob: trigger_refund 40.00 as a dry-run preview", "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 40, "reason": "damaged on arrival"}, mcp.Meta{dryrun.MetaKey: true})
	show(bob, "bob: trigger_refund 40.00 (bob's human declines)", "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 40, "reason": "damaged on arrival"}, nil)
	show(ada, "ada: trigger_refund 60.00 (ada's human accepts)", "trigger_refund", map[string]any{"customer_id": "CUST-00002", "amount": 60, "reason": "late delivery, goodwill"}, nil)
	section("Spend cap: a budget of 100.00 per user, refilling at 100.00 an hour")
	show(ada, "ada: trigger_refund 50.00 more", "trigger_refund", map[string]any{"customer_id": "CUST-00002", "amount": 50, "reason": "second complaint, goodwill"}, nil)
	if err := context.Cause(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nrefund handler ran %d time(s)\n", refunds)

	for _, cs := range []*mcp.ClientSession{ada, bob, anon} {
		cs.Close()
	}
	if err := closeSink(); err != nil {
		return err
	}
	all, err := audit.QuerySQL(ctx, db, audit.SQLite, audit.Filter{Since: start})
	if err != nil {
		return err
	}
	var evs []audit.Event
	for _, e := range all {
		if strings.HasPrefix(e.SessionID, rid+"-") {
			evs = append(evs, e)
		}
	}
	fmt.Fprintf(out, "\nAudit trail (%d records in %s, table audit_log):\n", len(evs), where)
	for _, e := range evs {
		verdict := "ALLOW"
		if !e.Allowed {
			verdict = "DENY "
		}
		who := e.Subject
		if who == "" {
			who = "(anonymous)"
		}
		fmt.Fprintf(out, "  %-7s %s %-16s %-20s %-22s dry_run=%-5v %s\n", e.Phase, verdict, who, e.Tool, e.Code, e.DryRun, e.Detail)
	}
	return nil
}

// demoLimits are the walkthrough's caps: 30 calls a minute per user, and
// a refund budget of 100.00 per user. Each is a bucket that refills
// continuously (GCRA), not a fixed window: the budget refills at 100.00 an
// hour, so up to 200.00 can be refunded within one hour.
func demoLimits() []limiter.Limit {
	return []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 30, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "trigger_refund", Max: 100, Window: time.Hour},
	}
}

// runID returns a new id for a run of the walkthrough: "demo-" and 12
// random hexadecimal digits.
func runID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return "demo-" + hex.EncodeToString(b), nil
}

// sessionTransport is a server transport whose connection has the
// session id id. An in-memory session has none, and its records none
// either; with one, the records of this run's sessions are told apart
// from another run's in a shared database. (The wrapper hides the
// go-sdk's unexported hook on its in-memory connection, which only
// refuses JSON-RPC batches; the demo's clients send none.)
type sessionTransport struct {
	mcp.Transport
	id string
}

func (t sessionTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return sessionConn{c, t.id}, nil
}

// sessionConn is a connection with the session id id.
type sessionConn struct {
	mcp.Connection
	id string
}

func (c sessionConn) SessionID() string { return c.id }

func brief(res *mcp.CallToolResult) string {
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

func briefError(res *mcp.CallToolResult) string {
	var body struct {
		Error struct {
			Code       string   `json:"code"`
			Message    string   `json:"message"`
			RetryAfter *float64 `json:"retry_after_seconds"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(brief(res)), &body); err != nil || body.Error.Code == "" {
		return brief(res)
	}
	s := body.Error.Code + ": " + body.Error.Message
	if body.Error.RetryAfter != nil {
		s += fmt.Sprintf(" (retry after %.0fs)", *body.Error.RetryAfter)
	}
	return s
}

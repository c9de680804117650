package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The audit trail's files inside the audit directory.
const (
	auditJSONL  = "audit.jsonl"
	auditSQLite = "audit.db"
)

// appOptions assemble an app.
type appOptions struct {
	// ConfigName names the configuration in errors.
	ConfigName string
	Config     *config
	// AuditDir receives audit.jsonl, and audit.db unless AuditPostgres
	// is set. Required.
	AuditDir string
	// AuditPostgres is the URL of a PostgreSQL database that holds the
	// audit_log table instead of audit.db (--audit-postgres). "" means
	// SQLite.
	AuditPostgres string
	// Redis is the host:port, or the redis:// or rediss:// URL, of a Redis
	// that keeps the limiter's budgets (--redis), shared by every server
	// on it. "" means this process's memory.
	Redis string
	// RedisPassword is the password of Redis (redisPasswordEnv). "" means
	// none.
	RedisPassword string
	// Tickets is the downstream ticket system. Nil means a new one.
	Tickets *TicketSystem
	// Authn picks the authenticator from the token table. Nil means
	// HTTP's: mcpguard.BearerTokens, or JWTs with JWT.
	Authn func(*token.Table) mcpguard.Authenticator
	// JWT verifies HTTP's bearer tokens as JWTs instead of the dev-only
	// token table (serve-http's --jwt-* flags). Nil means the table.
	JWT *token.JWT
	// Now is the guard's clock, and the limiter's in memory (on Redis the
	// limiter decides at the Redis server's time). Nil means time.Now.
	Now func() time.Time
	// Log receives operational messages. Nil discards them.
	Log *slog.Logger
	// Marks receives the [DRY RUN] lines. Nil means Log.
	Marks *slog.Logger
	// Events receives the lines of SIGHUP's reopening of audit.jsonl.
	// Nil means Log.
	Events *slog.Logger
	// ArgsKey keys the audit records' args_sha256 (an HMAC-SHA256 of the
	// arguments' canonical JSON, mcpguard.Options.ArgsKey): at least 16
	// bytes. Nil means 32 random bytes of this app's.
	ArgsKey []byte
}

// app is one guarded ticket server: the MCP server with the guard
// installed, and its audit trail. Every transport serves this one server,
// so every call passes the same guard.
type app struct {
	// conf is the configuration in force: the one of the start, or of
	// the last reload (app.reload), which differs from it only in what
	// the policy holds (allowed_write_tools, cost_units).
	conf    atomic.Pointer[config]
	server  *mcp.Server
	guard   *mcpguard.Guard
	tickets *TicketSystem
	ids     identities // HTTP's bearer tokens
	authn   mcpguard.Authenticator
	// refuse audits a REST refusal decided before the guard, after
	// authenticating the caller (restRefuse); record audits one that
	// does not need an identity, the caller's in the context if any
	// (restNotFound).
	refuse  mcpguard.Middleware
	record  mcpguard.Middleware
	jsonl   *audit.JSONLSink
	stopHUP func() // ends the reopening of jsonl on SIGHUP
	sqlSink *audit.SQLSink
	db      *sql.DB
	dialect audit.Dialect
	dir     string
	// closeRedis closes the limiter's Redis client; nil in memory.
	closeRedis func() error
	// running counts the requests under way: MCP requests the server
	// handles (on every transport), and HTTP requests (serveHTTP).
	running atomic.Int64
}

// newApp checks the registry, builds the policy, limiter and audit sinks
// from the configuration, adds the tools and installs the guard. With
// o.Redis or o.AuditPostgres, that server must answer now, or newApp
// fails.
func newApp(o appOptions) (_ *app, err error) {
	if o.Tickets == nil {
		o.Tickets = &TicketSystem{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Marks == nil {
		o.Marks = o.Log
	}
	if o.Events == nil {
		o.Events = o.Log
	}
	a := &app{tickets: o.Tickets, dir: o.AuditDir}
	a.conf.Store(o.Config)
	defs := tools(o.Tickets, a.cfg)
	if err := checkRegistry(o.ConfigName, o.Config, defs); err != nil {
		return nil, err
	}
	pol, err := policy.New(o.Config.policyConfig())
	if err != nil {
		return nil, err
	}
	tokens, err := devTokens()
	if err != nil {
		return nil, err
	}
	ids := identities{table: tokens, jwt: o.JWT}
	authn := ids.authenticator()
	if o.Authn != nil {
		authn = o.Authn(tokens)
	}

	if o.ArgsKey == nil {
		o.ArgsKey = make([]byte, 32)
		_, _ = rand.Read(o.ArgsKey) // crypto/rand.Read never fails
	}

	// A failure from here on closes what was opened (a, not the nil
	// returned).
	a.ids, a.authn = ids, authn
	defer func() {
		if err != nil {
			a.Close()
		}
	}()

	// The limits of server.yaml, in this process's memory or on Redis:
	// the same limits, keyed on the same session ids, fail closed (a
	// Redis that cannot decide refuses the call).
	var lopts limiter.Options
	if o.Redis != "" {
		store, closeRedis, err := openRedisStore(o.Redis, o.RedisPassword)
		if err != nil {
			return nil, err
		}
		a.closeRedis, lopts.Store = closeRedis, store
	}
	lim, err := limiter.New(o.Config.limits(), &lopts)
	if err != nil {
		return nil, fmt.Errorf("%s: rate_limit: %w", o.ConfigName, err)
	}

	if a.jsonl, err = audit.OpenJSONL(filepath.Join(o.AuditDir, auditJSONL), nil); err != nil {
		return nil, err
	}
	a.stopHUP = hangup.Reopen(o.Events, filepath.Join(o.AuditDir, auditJSONL), a.jsonl) // for log rotation
	a.dialect = audit.SQLite
	if o.AuditPostgres != "" {
		a.dialect = audit.Postgres
		a.db, err = openPostgres(context.Background(), o.AuditPostgres)
	} else {
		a.db, err = audit.OpenSQLite(filepath.Join(o.AuditDir, auditSQLite))
	}
	if err != nil {
		return nil, err
	}
	// Not bounded in time: creating or upgrading the table of a large
	// trail may take a while; the server answered already.
	a.sqlSink, err = audit.NewSQL(context.Background(), a.db, a.dialect, &audit.SQLOptions{
		OnError: func(err error) { o.Log.Error("audit: "+a.store()+" batch failed", "err", err) },
	})
	if err != nil {
		return nil, fmt.Errorf("%s audit_log: %w", a.store(), err)
	}
	sink := audit.Fanout(a.jsonl, a.sqlSink, dryRunLog(o.Marks))

	// A REST refusal decided before the guard goes through the library's
	// stand-alone steps: Authenticate refuses a caller without a valid
	// token first (401 before 400), Recover turns the refusal into the
	// guard's error result with the correlation id of the record that
	// Audit writes to the same trail. The record of an authenticated
	// caller's refusal names its REST session, as the guard's records of
	// the session's calls do (restRecordSession).
	auditStep, err := mcpguard.Audit(a.classed(sink), &mcpguard.Options{ArgsKey: o.ArgsKey, Now: o.Now, Logger: o.Log,
		SessionKey: restRecordSession})
	if err != nil {
		return nil, err
	}
	a.record = mcpguard.Chain(auditStep, mcpguard.Recover(o.Log))
	a.refuse = mcpguard.Chain(a.record, mcpguard.Authenticate(authn))

	a.guard, err = mcpguard.New(pol, authn, &mcpguard.Options{
		Audit:   sink,
		ArgsKey: o.ArgsKey,
		Limiter: lim,
		DryRun:  o.Config.DryRun,
		Tools: map[string]mcpguard.ToolOptions{
			"create_ticket": {DryRunAware: true},
		},
		// A database that stops answering without closing its
		// connections (a frozen host, a network that drops packets) would
		// otherwise hold a real write, its client without an answer, for
		// as long as it lasts (the library's default bound is 10 s too).
		WriteAheadTimeout: auditDurableTimeout,
		Now:               o.Now,
		Logger:            o.Log,
	})
	if err != nil {
		return nil, err
	}
	a.server = mcp.NewServer(&mcp.Implementation{Name: "ticket", Version: "v1.0.0"}, &mcp.ServerOptions{Logger: o.Log})
	for _, d := range defs {
		// The registry's description (server.yaml's, else the code's) is
		// what clients (and the model) are told.
		d.tool.Description = o.Config.description(d.tool.Name)
		d.add(a.server, d.tool)
	}
	if err := a.guard.Install(a.server); err != nil {
		return nil, fmt.Errorf("%s: %w", o.ConfigName, err)
	}
	// Outermost (added last), so that a request counts until the guard
	// has recorded its outcome: a shutdown waits for them (serveHTTP).
	a.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			a.running.Add(1)
			defer a.running.Add(-1)
			return next(ctx, method, req)
		}
	})
	return a, nil
}

// classed returns sink, which gives the records of the REST refusals
// decided before the guard, when the caller is authenticated and the tool
// configured, what the guard's records of such a call have: the tool's
// class (a query of the write attempts by class finds them) and, for an
// enabled write under dry_run, dry_run true. The stand-alone Audit step,
// without Authorize and the write-path steps, knows neither. A refusal of
// a caller without a valid identity, or of an unknown tool, has no class,
// as the guard's.
func (a *app) classed(sink audit.Sink) audit.Sink {
	return audit.SinkFunc(func(ctx context.Context, e *audit.Event) error {
		c := a.cfg()
		if t, ok := c.Tools[e.Tool]; ok && e.Class == "" && e.Subject != "" && t.ReadOnly != nil {
			e.Class = policy.Read.String()
			if !*t.ReadOnly {
				e.Class = policy.Write.String()
				e.DryRun = e.DryRun || c.DryRun && c.writeEnabled(e.Tool)
			}
		}
		return sink.Write(ctx, e)
	})
}

// cfg returns the configuration in force.
func (a *app) cfg() *config { return a.conf.Load() }

// restRecordSession is the session_id of the record of a REST request
// refused before the guard, from the authenticated caller id: the REST
// session that the request's one valid X-Session-Id names
// (restSessionID), so that querying the session finds the refusal; ""
// without such a header.
func restRecordSession(req *mcp.CallToolRequest, id *mcpguard.Identity) string {
	if req.Extra == nil {
		return ""
	}
	sids := req.Extra.Header.Values("X-Session-Id")
	if len(sids) != 1 || !sessionName.MatchString(sids[0]) {
		return ""
	}
	return restSessionID(sids[0], id.Principal.Subject)
}

// dryRunLog is the audit sink that marks dry runs in the log: one
// "[DRY RUN]" line per simulated write, with who, what and where. A dry
// run the guard refused (a limit, say) simulated nothing: it has no line,
// only its audit record.
func dryRunLog(log *slog.Logger) audit.Sink {
	return audit.SinkFunc(func(ctx context.Context, e *audit.Event) error {
		if e.DryRun && e.Allowed && e.Phase == audit.PhaseOutcome {
			log.Info("[DRY RUN] "+e.Tool+" simulated, downstream not called",
				"subject", e.Subject, "session_id", e.SessionID, "correlation_id", e.CorrelationID)
		}
		return nil
	})
}

// query returns the audit records that match f, from the audit_log table
// (SQLite or PostgreSQL), after making sure every queued record is
// committed.
func (a *app) query(ctx context.Context, f audit.Filter) ([]audit.Event, error) {
	if err := a.sqlSink.Flush(ctx); err != nil {
		return nil, err
	}
	return a.sqlSink.Query(ctx, f)
}

// shutdownWait bounds waitIdle. The example's tools answer at once and it
// sets no call deadline: this only bounds a shutdown behind a hung call.
var shutdownWait = 15 * time.Second

// waitIdle waits, at most shutdownWait, until no request is under way, so
// that the outcome records of calls still running at shutdown are written
// before the audit sinks close; it logs a warning if some still run then,
// and reports whether none does.
func (a *app) waitIdle(log *slog.Logger) bool {
	for deadline := time.Now().Add(shutdownWait); a.running.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			log.Warn("ticket: shutting down with requests still running; their audit records may be lost", "requests", a.running.Load())
			return false
		}
	}
	return true
}

// store names the database of the audit_log table.
func (a *app) store() string {
	if a.dialect == audit.Postgres {
		return "PostgreSQL"
	}
	return "SQLite"
}

// flush writes the JSONL buffer to its file.
func (a *app) flush() error { return a.jsonl.Flush() }

// jsonlPath is the JSONL trail's file.
func (a *app) jsonlPath() string { return filepath.Join(a.dir, auditJSONL) }

// Close drains and closes the audit trail.
func (a *app) Close() error {
	var errs []error
	if a.sqlSink != nil {
		errs = append(errs, a.sqlSink.Close())
	}
	if a.db != nil {
		errs = append(errs, a.db.Close())
	}
	if a.jsonl != nil {
		a.stopHUP()
		errs = append(errs, a.jsonl.Close())
	}
	if a.closeRedis != nil {
		errs = append(errs, a.closeRedis())
	}
	return errors.Join(errs...)
}

// auditDurableTimeout bounds the write-ahead record of a real write
// (Options.WriteAheadTimeout): a variable for the tests.
var auditDurableTimeout = 10 * time.Second

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// printRegistry prints the registry for a security review: every tool,
// enabled or not, one row each. The later lines of a description of
// several lines are indented under its first, so that none can pass for a
// row.
func printRegistry(w io.Writer, c *config) {
	for _, e := range c.registry() {
		class := "read-only"
		if !e.ReadOnly {
			class = "WRITE [DISABLED (not allowlisted)]"
			if e.Enabled {
				class = "WRITE [ENABLED]"
			}
		}
		row := fmt.Sprintf("  %-16s %-34s cost=%-4g ", e.Name, class, e.CostUnits)
		lines := strings.Split(strings.TrimRight(e.Description, "\n"), "\n")
		fmt.Fprintf(w, "%s%s\n", row, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", len(row)), l)
		}
	}
}

// demoOutput is the demo's output: its first failed write stops the demo,
// through stop, with a [demoOutputError] cause.
type demoOutput struct {
	w    io.Writer
	stop context.CancelCauseFunc
}

func (o *demoOutput) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.stop(demoOutputError{err})
	}
	return n, err
}

// demoOutputError is the cause of the demo's context once its output has
// failed.
type demoOutputError struct{ err error }

func (e demoOutputError) Error() string { return "writing the output: " + e.err.Error() }

// demoCaller calls the app's tools over REST sessions, as the HTTP
// transport does: same server, same guard.
type demoCaller struct {
	rest *restSessions
}

// call calls tool as the owner of tok ("" sends no Authorization header)
// in session sid and returns the structured result and whether it is an
// error result.
func (d *demoCaller) call(ctx context.Context, tok, sid, tool string, args any) (map[string]any, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err // interrupted: no further call
	}
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, false, err
	}
	res, err := d.rest.call(ctx, h, sid, tool, raw)
	if err != nil {
		return nil, false, err
	}
	m, _ := res.StructuredContent.(map[string]any)
	return m, res.IsError, nil
}

// errorOf returns the error object of an error result.
func errorOf(m map[string]any) map[string]any {
	e, _ := m["error"].(map[string]any)
	return e
}

// brief renders an error object without its correlation id, which differs
// on every run.
func brief(e map[string]any) string {
	out := map[string]any{}
	for k, v := range e {
		if k != "correlation_id" {
			out[k] = v
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// burstSession returns the name of a demo run's burst session:
// "demo-burst-session-" and 12 random hexadecimal digits, the run's own.
func burstSession() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("burst session: %w", err)
	}
	return "demo-burst-session-" + hex.EncodeToString(b), nil
}

// runDemo runs the seed's four scenes in-process against the real guard,
// with cfg (writes allowlisted too when allowWrites) and an audit trail in
// auditDir (a temporary directory when empty), its audit_log table in the
// PostgreSQL database of the URL pgURL unless it is empty, the records'
// argument hashes keyed with key (nil: a random one). When ctx ends
// (SIGINT, SIGTERM) it makes no further call, cleans up and returns ctx's
// error.
func runDemo(ctx context.Context, w io.Writer, name string, cfg *config, allowWrites bool, auditDir, pgURL string, key []byte) error {
	if allowWrites && !cfg.writeEnabled("create_ticket") {
		c := *cfg
		c.AllowedWriteTools = append(append([]string(nil), cfg.AllowedWriteTools...), "create_ticket")
		// The file was checked without create_ticket on its allowlist:
		// check what the demo runs (an allowlisted write's cost against
		// the spend caps), in the configuration's terms.
		if err := c.check(); err != nil {
			return fmt.Errorf("%s with --allow-writes: %w", name, err)
		}
		cfg = &c
	}
	if auditDir == "" {
		dir, err := os.MkdirTemp("", "ticket-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		auditDir = dir
	} else if err := os.MkdirAll(auditDir, 0o700); err != nil {
		return err
	}
	tickets := &TicketSystem{}
	a, err := newApp(appOptions{
		ConfigName: name, Config: cfg, AuditDir: auditDir, AuditPostgres: pgURL, Tickets: tickets, ArgsKey: key,
		Marks: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, at slog.Attr) slog.Attr {
				if at.Key == slog.TimeKey || at.Key == "correlation_id" {
					return slog.Attr{}
				}
				return at
			},
		})),
	})
	if err != nil {
		return err
	}
	defer a.Close()
	rest := newRESTSessions(a.server, a.authn)
	defer rest.Close()
	d := &demoCaller{rest: rest}

	fmt.Fprintln(w, "=== 1. Per-user auth passthrough: same tool, same query, different results ===")
	for _, u := range []struct{ tok, who string }{{"token-alice", "alice (engineering)"}, {"token-bob", "bob (sales)"}} {
		m, isErr, err := d.call(ctx, u.tok, "demo-"+strings.TrimPrefix(u.tok, "token-"), "search_docs", map[string]any{"query": ""})
		if err != nil {
			return err
		}
		if isErr {
			fmt.Fprintf(w, "  %s: denied %s\n", u.who, brief(errorOf(m)))
			continue
		}
		var ids []string
		results, _ := m["results"].([]any)
		for _, r := range results {
			if r, ok := r.(map[string]any); ok {
				ids = append(ids, fmt.Sprint(r["id"]))
			}
		}
		fmt.Fprintf(w, "  %s: sees docs %q\n", u.who, ids)
	}

	fmt.Fprintln(w, "\n=== 2. Missing/invalid identity is rejected, not defaulted ===")
	for _, c := range []struct{ tok, label string }{{"", "no token"}, {"token-mallory", "unknown token"}} {
		m, isErr, err := d.call(ctx, c.tok, "demo-anon", "search_docs", map[string]any{"query": ""})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s -> ok=%v error=%s\n", c.label, !isErr, brief(errorOf(m)))
	}

	fmt.Fprintln(w, "\n=== 3. Write tool default posture ===")
	m, isErr, err := d.call(ctx, "token-alice", "demo-alice", "create_ticket", map[string]any{"title": "Broken build", "body": "CI red on main"})
	if err != nil {
		return err
	}
	if isErr {
		fmt.Fprintf(w, "  create_ticket denied: %s\n", brief(errorOf(m)))
	} else {
		fmt.Fprintf(w, "  create_ticket allowed (allowlisted): ticket_id=%v dry_run=%v\n", m["ticket_id"], m["dry_run"])
	}
	fmt.Fprintf(w, "  tickets really created downstream: %d\n", len(tickets.Created()))

	n := cfg.RateLimit.CallsPerMin + 1
	// The trail may be a kept one (--audit-dir, --audit-postgres) with the
	// records of other runs, earlier ones and any running at the same
	// time: show this run's only, those of its own burst session, whose
	// name ends in a random run id.
	burst, err := burstSession()
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(w, "\n=== 4. Rate limit: burst of calls past the cap ===\n")
	for i := 1; i <= n; i++ {
		m, isErr, err := d.call(ctx, "token-alice", burst, "search_docs", map[string]any{"query": "deploy"})
		if err != nil {
			return err
		}
		if isErr {
			fmt.Fprintf(w, "  call %d/%d: DENIED (%v)\n", i, n, errorOf(m)["code"])
		} else {
			fmt.Fprintf(w, "  call %d/%d: allowed\n", i, n)
		}
	}

	evs, err := a.query(ctx, audit.Filter{SessionID: restSessionID(burst, "alice"), Since: start})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n=== Audit trail of session %s (%s audit_log; same records in %s) ===\n", restSessionID(burst, "alice"), a.store(), auditJSONL)
	for _, e := range evs {
		fmt.Fprintf(w, "  {\"session_id\":%q,\"subject\":%q,\"tool\":%q,\"class\":%q,\"allowed\":%v,\"dry_run\":%v,\"code\":%q,\"detail\":%q,\"cost\":%g}\n",
			e.SessionID, e.Subject, e.Tool, e.Class, e.Allowed, e.DryRun, e.Code, e.Detail, e.Cost)
	}
	return nil
}

package mcpguard_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r57Write is a guarded write tool "pay" whose handler counts its runs.
func r57Write(t *testing.T, sink audit.Sink, timeout time.Duration) (mcp.ToolHandler, *atomic.Int32) {
	t.Helper()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}, WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet, WriteAheadTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	h, err := g.Wrap(&mcp.Tool{Name: "pay", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return h, &ran
}

// TestReview57WriteAheadBoundedOnPostgres: a PostgreSQL server that stops
// answering without closing its connections (here a proxy that holds its
// answers) held a write's intent record, and so the write and its caller,
// until it answered again; the write then ran, however late. The wait is
// bounded by Options.WriteAheadTimeout: the write is refused
// AUDIT_UNAVAILABLE, retryable, and does not run when the server answers
// again.
func TestReview57WriteAheadBoundedOnPostgres(t *testing.T) {
	pg := testsvc.StartPostgres(t)
	var stalled atomic.Bool
	released := make(chan struct{})
	ln := testsvc.CutProxy(t, pg.Port, true, func([]byte) bool {
		if stalled.Load() {
			<-released
		}
		return false
	})
	release := sync.OnceFunc(func() { close(released) })
	defer release()
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS audit_log"); err != nil {
		t.Fatal(err)
	}
	sink, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	const bound = time.Second
	h, ran := r57Write(t, sink, bound)
	res, err := h(ctx, req("pay", `{}`))
	if code := codeOf(t, res, err); code != "" || ran.Load() != 1 {
		t.Fatalf("pay with the database up: code %q, ran %d; want success, ran once", code, ran.Load())
	}

	stalled.Store(true)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = h(ctx, req("pay", `{}`))
	}()
	select {
	case <-done:
	case <-time.After(bound + 20*time.Second):
		release()
		<-done
		t.Fatalf("pay with the database not answering: no answer within %v of the bound", 20*time.Second)
	}
	took := time.Since(start)
	if code := codeOf(t, res, err); code != string(mcpguard.CodeAuditUnavailable) {
		t.Errorf("pay with the database not answering: code %q after %v; want AUDIT_UNAVAILABLE", code, took)
	}
	if took < bound {
		t.Errorf("refused after %v, before the bound %v", took, bound)
	}
	if d := denialOf(t, res, err); d.RetryAfter < 0 {
		t.Errorf("refusal %+v not retryable; the write was not attempted", d)
	}
	release()
	time.Sleep(300 * time.Millisecond)
	if n := ran.Load(); n != 1 {
		t.Errorf("the handler ran %d times; want once (the refused write must not run when the database answers again)", n)
	}
}

// TestReview57WriteAheadDefaultBound: with WriteAheadTimeout 0 a sink that
// never makes the intent refuses the write after ten seconds; with a
// negative one the write waits for the sink, and runs once it answers.
func TestReview57WriteAheadDefaultBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &r57Stuck{answer: make(chan struct{})}
		h, ran := r57Write(t, sink, 0)
		start := time.Now()
		res, err := h(context.Background(), req("pay", `{}`))
		if code := codeOf(t, res, err); code != string(mcpguard.CodeAuditUnavailable) || ran.Load() != 0 {
			t.Errorf("default bound: code %q, ran %d; want AUDIT_UNAVAILABLE, not run", code, ran.Load())
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("default bound: refused after %v; want 10s", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		sink := &r57Stuck{answer: make(chan struct{})}
		h, ran := r57Write(t, sink, -1)
		var code string
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, err := h(context.Background(), req("pay", `{}`))
			code = codeOf(t, res, err)
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case <-done:
			t.Fatalf("no bound: answered %q before the sink did", code)
		default:
		}
		close(sink.answer)
		<-done
		if code != "" || ran.Load() != 1 {
			t.Errorf("no bound: code %q, ran %d; want success once the sink made the intent", code, ran.Load())
		}
	})
}

// r57Stuck makes a durable event only once answer is closed, or gives up
// when its context ends; it takes other events at once.
type r57Stuck struct{ answer chan struct{} }

func (s *r57Stuck) Write(context.Context, *audit.Event) error { return nil }

func (s *r57Stuck) WriteDurable(ctx context.Context, _ *audit.Event) error {
	select {
	case <-s.answer:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package audit_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview57PostgresWriteDurablePrepareHeld: the background writer
// prepares its INSERT of a batch's size the first time it needs it, holding
// the lock of the sink's prepared statements while the server answers. A
// server that stopped answering then (here a proxy that holds its answers)
// held every WriteDurable on that lock, past the end of its context: the
// guard's write-ahead bound did not bound it. WriteDurable now waits for the
// lock only until its context ends, and returns the context's error, its
// event not recorded.
func TestReview57PostgresWriteDurablePrepareHeld(t *testing.T) {
	ctx := context.Background()
	db, stalled, release := review57HeldPostgres(t)
	s, err := audit.NewSQL(ctx, db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	stalled.Store(true)
	// The writer's first batch: it prepares the INSERT of one row, and
	// waits for the server's answer.
	if err := s.Write(ctx, diskEvent("queued", 10)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.WriteDurable(wctx, diskEvent("durable", 10)) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WriteDurable: got %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("WriteDurable did not return 5 s after its context ended")
	}
	release()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	evs, err := audit.QuerySQL(ctx, db, audit.Postgres, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range evs {
		got[e.CorrelationID]++
	}
	if got["queued"] != 1 || got["durable"] != 0 {
		t.Errorf("recorded %v, want queued once and durable not at all (its WriteDurable failed)", got)
	}
	select {
	case err := <-done:
		t.Errorf("WriteDurable returned twice: %v", err)
	default:
	}
}

// review57HeldPostgres returns a new database of a PostgreSQL server behind
// a proxy that, once stalled is set, holds the server's answers (a server
// that stopped answering without closing its connections) until release
// is called.
func review57HeldPostgres(t *testing.T) (db *sql.DB, stalled *atomic.Bool, release func()) {
	t.Helper()
	stalled = new(atomic.Bool)
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE review57"); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	ln := testsvc.CutProxy(t, pg.Port, true, func([]byte) bool {
		if stalled.Load() {
			<-released
		}
		return false
	})
	release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(release) // before the proxy's own cleanup, which waits for its copies
	db, err = sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/review57?sslmode=disable", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, stalled, release
}

// TestReview57PostgresWriteDurableDuringClose: Close waits for the
// WriteDurable calls under way, whose server may have stopped answering
// (until Close ends them, 5 s later). A WriteDurable (or Write, Flush)
// called meanwhile waited on the lock Close was waiting for, whatever its
// context said, and got ErrClosed only once Close had it. It now returns
// ErrClosed at once: the sink no longer accepts events.
func TestReview57PostgresWriteDurableDuringClose(t *testing.T) {
	ctx := context.Background()
	db, stalled, release := review57HeldPostgres(t)
	s, err := audit.NewSQL(ctx, db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	stalled.Store(true)
	first := make(chan error, 1)
	go func() { first <- s.WriteDurable(ctx, diskEvent("under-way", 10)) }()
	time.Sleep(300 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(300 * time.Millisecond)
	for _, call := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"WriteDurable", func(ctx context.Context) error { return s.WriteDurable(ctx, diskEvent("late", 10)) }},
		{"Write", func(ctx context.Context) error { return s.Write(ctx, diskEvent("late", 10)) }},
		{"Flush", s.Flush},
	} {
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		start := time.Now()
		err := call.do(wctx)
		cancel()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s during Close returned after %v (its context: 300ms): %v", call.name, d, err)
		} else if !errors.Is(err, audit.ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s during Close = %v, want ErrClosed", call.name, err)
		}
	}
	release()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := <-first; err == nil {
		// Its insert was ended by Close or answered late: either way
		// the first WriteDurable returned.
		t.Log("the WriteDurable under way committed")
	}
	evs, err := audit.QuerySQL(ctx, db, audit.Postgres, audit.Filter{CorrelationID: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 0 {
		t.Errorf("%d late events recorded after Close refused them", len(evs))
	}
}

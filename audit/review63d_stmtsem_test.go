package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview63dPostgresPrepareHoldsCachedStatements: the background writer
// prepares the INSERT of a batch size it has not used yet holding stmtSem,
// which every WriteDurable takes to look up its own statement, prepared
// long before. A connection that stops answering during that prepare (here
// a proxy that holds that one connection's request; the server and every
// other connection are fine) then held every WriteDurable until its
// context ended: the guard's write-ahead records failed, and with them
// every guarded write, for as long as the one connection hung.
func TestReview63dPostgresPrepareHoldsCachedStatements(t *testing.T) {
	ctx := context.Background()
	db, armed, stalled, release := review63dHeldPrepare(t)
	defer release()
	s, err := audit.NewSQL(ctx, db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		release()
		s.Close()
	}()
	// The statement of one row is prepared and cached here.
	if err := s.WriteDurable(ctx, diskEvent("first", 10)); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	// A burst the writer takes in batches of more than one row: it
	// prepares their INSERT, on a connection that hangs.
	for i := range 64 {
		if err := s.Write(ctx, diskEvent(fmt.Sprintf("burst-%d", i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-stalled:
	case <-time.After(5 * time.Second):
		t.Fatal("setup: the writer prepared no INSERT of several rows")
	}
	// Another caller's WriteDurable, whose statement is cached and whose
	// connection works.
	wctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.WriteDurable(wctx, diskEvent("durable", 10))
	if d := time.Since(start); err != nil || d > 2*time.Second {
		t.Errorf("WriteDurable with its statement cached, while the writer's prepare hangs on "+
			"another connection: %v after %v, want nil at once", err, d.Round(time.Millisecond))
	}
}

// review63dHeldPrepare returns a new database of a PostgreSQL server behind
// a proxy that, once armed, holds the first request of a connection that
// prepares an INSERT of several rows into audit_log (closing stalled then)
// until release is called. Every other request passes.
func review63dHeldPrepare(t *testing.T) (db *sql.DB, armed *atomic.Bool, stalled chan struct{}, release func()) {
	t.Helper()
	armed = new(atomic.Bool)
	stalled = make(chan struct{})
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE review63d"); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	var once sync.Once
	ln := testsvc.CutProxy(t, pg.Port, false, func(piece []byte) bool {
		if armed.Load() && bytes.Contains(piece, []byte("INSERT INTO audit_log")) &&
			bytes.Contains(piece, []byte("),(")) {
			once.Do(func() { close(stalled) })
			<-released
		}
		return false
	})
	release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(release) // before the proxy's own cleanup, which waits for its copies
	db, err = sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/review63d?sslmode=disable", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, armed, stalled, release
}

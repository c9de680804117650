package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// insertCutter is a cuttingProxy in front of the PostgreSQL server on
// port that ends the connection of each client that sends the text of an
// INSERT into audit_log (the statement's preparation: the server never
// sees it and never answers). Everything else (a ping, a query) passes.
func insertCutter(t *testing.T, port int) (ln net.Listener, cut, cuts *atomic.Int32) {
	return cuttingProxy(t, port, "insert into audit_log")
}

// TestReview19PostgresRowCutWhileServerUp: the writer drops a row as
// refused by the database when its insert fails and a ping then succeeds.
// An insert whose connection was lost, with no answer from the server (no
// SQLSTATE: end of file, a connect timeout under load, "conn closed"),
// says nothing about the row: the server may never have seen it, and the
// next connection may take it. Such a row was counted lost (Write had
// returned nil for it) as soon as a ping got through between two cuts:
// TestReview16PostgresConnectionsCut lost one so, under load
// ("audit: sql event cut-00328 not recorded: failed to connect to ...:
// timeout: context deadline exceeded"). Here every insert of the batch and
// of its first row is cut, while pings pass.
func TestReview19PostgresRowCutWhileServerUp(t *testing.T) {
	p := startFailServer(t)
	ln, cut, cuts := insertCutter(t, p.pg.Port)
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", ln.Addr(), p.name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var onErr []string
	errs := make(chan string, 100)
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) {
		select {
		case errs <- err.Error():
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	cut.Store(5) // three attempts of the batch, then its first row twice
	const n = 5
	for i := range n {
		if err := s.Write(context.Background(), failEvent("rowcut", i)); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ferr := s.Flush(ctx)
	cerr := s.Close()
	close(errs)
	for e := range errs {
		onErr = append(onErr, e)
	}
	got := counts(t, p.db)
	missing := 0
	for i := range n {
		if got[fmt.Sprintf("rowcut-%05d", i)] != 1 {
			missing++
		}
	}
	if ferr != nil || cerr != nil || missing > 0 || s.Stats().Lost != 0 {
		t.Errorf("every insert cut %d times, the server up: Flush: %v, Close: %v, %d of %d acknowledged events not recorded once (%v), Stats %+v; OnError: %q",
			cuts.Load(), ferr, cerr, missing, n, got, s.Stats(), onErr)
	}
	if cuts.Load() < 4 {
		t.Errorf("only %d inserts cut: the writer never came to insert rows one by one", cuts.Load())
	}
}

package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview26bPostgresCloseSilentIdleConns: Close while the server stops
// answering, with idle connections of the pool that prepared the sink's
// INSERT. Close closes its statements, and database/sql deallocates each
// on every idle connection at once: pgx waits up to 5 s for the server's
// answer on each connection (holding the pool's lock meanwhile), so Close
// took 5 s more per idle connection after the 5 s its doc promises.
// With nothing queued, Close waited for those deallocations alone.
func TestReview26bPostgresCloseSilentIdleConns(t *testing.T) {
	for _, queued := range []bool{true, false} {
		t.Run(fmt.Sprintf("queued=%v", queued), func(t *testing.T) { closeSilentIdleConns(t, queued) })
	}
}

func closeSilentIdleConns(t *testing.T, queued bool) {
	p := startFailServer(t)
	fp := startFreezeProxy(t, p.pg.Port)
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", fp.ln.Addr(), p.name))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(4)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	s, err := audit.NewSQL(ctx, db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	// Concurrent WriteDurable calls: four connections, each with the
	// one-row INSERT prepared, idle in the pool once they return.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if err := s.WriteDurable(ctx, failEvent("idle", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	fp.frozen.Store(true)
	if queued {
		if err := s.Write(ctx, failEvent("idle", 4)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close after %v: %v", time.Since(start).Round(time.Millisecond), err)
		if queued && err == nil {
			t.Errorf("Close = nil, want an error counting the event the silent server did not take")
		}
		if !queued && err != nil {
			t.Errorf("Close = %v with nothing queued", err)
		}
	case <-time.After(8 * time.Second):
		t.Errorf("Close did not return within 8s of a server that stopped answering (idle connections)")
		fp.frozen.Store(false)
		<-closed
	}
	fp.frozen.Store(false)
}

package pgtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview23PostgresOneConnectionPool: a *sql.DB of one connection
// (db.SetMaxOpenConns(1)). The writer prepared each new size of INSERT on
// the pool while its transaction held the pool's only connection: the
// first batch waited for itself for ever, every WriteDurable and Flush
// behind it, and Close never returned.
func TestReview23PostgresOneConnectionPool(t *testing.T) {
	var srv server
	db := srv.db(t)
	db.SetMaxOpenConns(1)
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) { t.Log(err) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const writers, each = 4, 60
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := audit.Event{Time: base.Add(time.Duration(w*1000+i) * time.Millisecond),
					CorrelationID: fmt.Sprintf("one-%d-%03d", w, i), Tool: "t", Phase: audit.PhaseOutcome}
				write := s.Write
				if i%3 == 0 {
					write = s.WriteDurable
				}
				if err := write(ctx, &e); err != nil {
					t.Errorf("writer %d, event %d: %v (the writer waits for a second connection of a pool of one)", w, i, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if _, err := s.Query(ctx, audit.Filter{Tool: "t", Limit: 10}); err != nil {
				t.Errorf("Query: %v", err)
				return
			}
		}
	})
	wg.Wait()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM audit_log WHERE tool = 't'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Errorf("%d rows, want %d", n, writers*each)
	}
}

package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

func readOnlyPG(t *testing.T, idle int) (db, admin *sql.DB, name string) {
	t.Helper()
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name = "review"
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db, err = sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, name))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(idle)
	t.Cleanup(func() { db.Close() })
	return db, admin, name
}

func readOnlyEvent(i int) *audit.Event {
	return &audit.Event{
		Time:          time.Unix(1_700_000_000, int64(i)).UTC(),
		CorrelationID: fmt.Sprintf("corr-%03d", i),
		Phase:         audit.PhaseOutcome,
		Subject:       "alice",
		Tool:          "refund",
		Allowed:       true,
	}
}

// TestPostgresReadOnlyIsRetried checks a database that answers but refuses
// writes for a while (SQLSTATE 25006 read_only_sql_transaction: a demoted
// primary, a hot standby behind the same address, a maintenance window with
// default_transaction_read_only). Like a lock timeout or a full disk, that
// is a failure of the moment: the queued events wait for it, where taking
// 25006 for the database refusing the rows (a ping succeeds) would drop
// every event written meanwhile.
func TestPostgresReadOnlyIsRetried(t *testing.T) {
	db, admin, name := readOnlyPG(t, 4)
	var mu sync.Mutex
	var errs []error
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{
		OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	setRO := func(on bool) {
		t.Helper()
		q := "ALTER DATABASE " + name + " SET default_transaction_read_only = on"
		if !on {
			q = "ALTER DATABASE " + name + " RESET default_transaction_read_only"
		}
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
		// New sessions pick the setting up: drop the pool's old ones.
		if _, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	setRO(true)
	const n = 5
	for i := range n {
		if err := s.Write(ctx, readOnlyEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // past the batch's three attempts, into row by row
	setRO(false)
	ferr := s.Flush(ctx)
	got, err := s.Query(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Logf("first OnError: %v (%d calls)", errs[0], len(errs))
	}
	if len(got) != n || st.Lost != 0 {
		t.Errorf("database read-only for 1.5s: %d of %d events recorded, Stats.Lost = %d, Flush = %v; want all %d kept and written once it accepts writes again",
			len(got), n, st.Lost, ferr, n)
	}
}

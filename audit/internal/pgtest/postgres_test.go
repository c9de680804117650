package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/audit/audittest"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// server is one PostgreSQL server per test binary run; each caller gets its
// own database.
type server struct {
	once sync.Once
	pg   *testsvc.Postgres
	n    int
	mu   sync.Mutex
}

func (s *server) db(t testing.TB) *sql.DB {
	t.Helper()
	s.once.Do(func() { s.pg = testsvc.StartPostgres(t) })
	if s.pg == nil {
		t.Skip("PostgreSQL did not start earlier")
	}
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("audit_%d", s.n)
	s.mu.Unlock()
	admin, err := sql.Open("pgx", s.pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.pg.Port, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPostgres runs every PostgreSQL test under one server, which is stopped
// when the test ends.
func TestPostgres(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })

	harness := func(t *testing.T) audittest.Harness {
		s, err := audit.NewSQL(context.Background(), srv.db(t), audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return audittest.Harness{Sink: s, Read: func(ctx context.Context) ([]audit.Event, error) {
			if err := s.Flush(ctx); err != nil {
				return nil, err
			}
			return s.Query(ctx, audit.Filter{})
		}}
	}
	t.Run("conformance", func(t *testing.T) { audittest.Run(t, harness) })
	t.Run("keeper", func(t *testing.T) { audittest.RunKeeper(t, harness) })

	t.Run("query", func(t *testing.T) {
		db := srv.db(t)
		s, err := audit.NewSQL(context.Background(), db, audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		for i, e := range audittest.SessionEvents() {
			write := s.Write
			if i%2 == 0 {
				write = s.WriteDurable
			}
			if err := write(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		audittest.RunQuery(t, s.Query)
		var human time.Time
		if err := db.QueryRow(`SELECT time FROM audit_log WHERE correlation_id = 'c1'`).Scan(&human); err != nil {
			t.Fatal(err)
		}
		if want := audittest.SessionStart.Add(time.Second); !human.Equal(want) {
			t.Errorf("generated column time = %v, want %v", human, want)
		}
	})

	t.Run("schema_version", func(t *testing.T) {
		db := srv.db(t)
		ctx := context.Background()
		// Two sinks migrating the same database at once: one creates, one finds it.
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
				if err != nil {
					t.Errorf("NewSQL: %v", err)
					return
				}
				s.Close()
			})
		}
		wg.Wait()
		var n, v int
		if err := db.QueryRow(`SELECT COUNT(*), MAX(version) FROM audit_schema_version`).Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		if n != 1 || v != audit.SchemaVersion {
			t.Errorf("audit_schema_version: %d rows, max %d; want 1 row, %d", n, v, audit.SchemaVersion)
		}
	})

	t.Run("unstorable_text", func(t *testing.T) {
		s, err := audit.NewSQL(context.Background(), srv.db(t), audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		e := audittest.Events()[3]
		e.Detail = "a\x00b\xffc"
		if err := s.WriteDurable(context.Background(), &e); err != nil {
			t.Fatalf("WriteDurable with NUL and invalid UTF-8: %v", err)
		}
		got, err := s.Query(context.Background(), audit.Filter{})
		if err != nil || len(got) != 1 || got[0].Detail != "a\uFFFDb\uFFFDc" {
			t.Errorf("Query = %+v, %v", got, err)
		}
	})

	t.Run("concurrent_writers", func(t *testing.T) {
		const writers, each = 16, 500
		db := srv.db(t)
		s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{QueueSize: 128})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					e := audit.Event{Time: time.Now(), CorrelationID: fmt.Sprintf("w%d-%d", w, i), Phase: audit.PhaseOutcome}
					write := s.Write
					if i%100 == 0 {
						write = s.WriteDurable
					}
					if err := write(context.Background(), &e); err != nil {
						t.Errorf("Write: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		var n, distinct int
		if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT correlation_id) FROM audit_log`).Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n != writers*each || distinct != n {
			t.Errorf("audit_log: %d rows (%d distinct), want %d", n, distinct, writers*each)
		}
	})

	// A lock held past lock_timeout (55P03: a migration, a VACUUM FULL) is
	// a failure of the moment: the events wait for it, none is dropped as
	// if the database had refused it.
	t.Run("lock_timeout_is_retried", func(t *testing.T) {
		ctx := context.Background()
		plain := srv.db(t)
		var name string
		if err := plain.QueryRow(`SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&lock_timeout=50", srv.pg.Port, name))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		locker, err := plain.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := locker.Exec(`LOCK TABLE audit_log IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		const n = 5
		for i := range n {
			e := audit.Event{Time: time.Now(), CorrelationID: fmt.Sprintf("locked-%d", i), Phase: audit.PhaseOutcome}
			if err := s.Write(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(1500 * time.Millisecond) // past the batch's attempts, into row by row
		if err := locker.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Errorf("Flush after the lock was released: %v", err)
		}
		var got int
		if err := plain.QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); got != n || st.Lost != 0 {
			t.Errorf("%d rows committed, %d counted lost; want %d and 0", got, st.Lost, n)
		}
	})
}

// BenchmarkPostgres: batched rows/s through Write+Flush against one durable
// single-row insert per event (the unbatched baseline). The server runs with
// fsync=off (a throwaway test server), so the figures measure the sink and
// the protocol, not the disk.
func BenchmarkPostgres(b *testing.B) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(b) })
	ctx := context.Background()
	e := audittest.Events()[0]
	var baseNS float64
	b.Run("baseline_single_row_commit", func(b *testing.B) {
		s, err := audit.NewSQL(ctx, srv.db(b), audit.Postgres, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for b.Loop() {
			if err := s.WriteDurable(ctx, &e); err != nil {
				b.Fatal(err)
			}
		}
		baseNS = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(1e9/baseNS, "rows/s")
	})
	b.Run("batched", func(b *testing.B) {
		s, err := audit.NewSQL(ctx, srv.db(b), audit.Postgres, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Write(ctx, &e); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(1e9/ns, "rows/s")
		if baseNS > 0 {
			b.ReportMetric(baseNS/ns, "x_baseline_throughput")
		}
	})
}

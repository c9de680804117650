package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview31Parent2PostgresUpgradeConcurrent: a version 5 table of
// 100,000 rows, as the previous build left it, is upgraded by four sinks
// opened at once, each on a pool of its own (as four processes would):
// each opens, the version is recorded once, the table is not rewritten
// (the same file before and after: from PostgreSQL 11 on, a column added
// with a constant default rewrites no row), every row is kept without a
// parent, and each sink's record keeps its own.
func TestReview31Parent2PostgresUpgradeConcurrent(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	ctx := context.Background()
	db := srv.db(t)
	s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	for _, q := range []string{`ALTER TABLE audit_log DROP COLUMN parent_id`, `DELETE FROM audit_schema_version`,
		`INSERT INTO audit_schema_version (version) VALUES (5)`,
		fmt.Sprintf(`INSERT INTO audit_log (time_ns, correlation_id, session_id, phase, allowed, dry_run, latency_ms, request_id)
SELECT x::bigint * 1000000, 'c-' || x, 's-' || (x %% 100), 'outcome', true, false, 0.5, CASE WHEN x %% 10 = 0 THEN 'gw-' || x ELSE '' END
FROM generate_series(0, %d) AS x`, n-1), `VACUUM FULL audit_log`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var before, after string
	if err := db.QueryRow(`SELECT pg_relation_filenode('audit_log')::text`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := db.QueryRow(`SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	const openers = 4
	errs := make([]error, openers)
	took := make([]time.Duration, openers)
	var wg sync.WaitGroup
	for w := range openers {
		wg.Go(func() {
			odb, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", srv.pg.Port, name))
			if err != nil {
				errs[w] = err
				return
			}
			defer odb.Close()
			start := time.Now()
			s, err := audit.NewSQL(ctx, odb, audit.Postgres, nil)
			took[w] = time.Since(start)
			if err != nil {
				errs[w] = err
				return
			}
			e := audit.Event{Time: time.Unix(0, (n+int64(w))*1000000), CorrelationID: fmt.Sprint("new-", w),
				ParentID: fmt.Sprint("c-", w), Phase: audit.PhaseOutcome, Allowed: true}
			errs[w] = s.WriteDurable(ctx, &e)
			if err := s.Close(); errs[w] == nil {
				errs[w] = err
			}
		})
	}
	wg.Wait()
	t.Logf("NewSQL of four openers at once on %d rows of version 5: %v", n, took)
	for w, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", w, err)
		}
	}
	var rows, v int
	if err := db.QueryRow(`SELECT COUNT(*), MAX(version) FROM audit_schema_version WHERE version = 6`).Scan(&rows, &v); err != nil || rows != 1 {
		t.Errorf("version 6 recorded %d times (%v), want once", rows, err)
	}
	if err := db.QueryRow(`SELECT pg_relation_filenode('audit_log')::text`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("the upgrade rewrote audit_log (file %s, then %s)", before, after)
	}
	var kept int
	if err := db.QueryRow(`SELECT COUNT(*) FROM audit_log WHERE parent_id = ''`).Scan(&kept); err != nil || kept != n {
		t.Errorf("%d rows without a parent (%v), want %d", kept, err, n)
	}
	for w := range openers {
		got, err := audit.QuerySQL(ctx, db, audit.Postgres, audit.Filter{ParentID: fmt.Sprint("c-", w)})
		if err != nil || len(got) != 1 || got[0].CorrelationID != fmt.Sprint("new-", w) {
			t.Errorf("Filter{ParentID: c-%d}: %+v, %v", w, got, err)
		}
	}
}

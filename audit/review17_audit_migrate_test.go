package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReview17SQLiteUpgradeEveryVersion upgrades a SQLite table of each
// earlier schema version, with rows in it, from four openers at once (two
// through OpenSQLite, two through a plain sql.Open, whose deferred
// transactions collide), each of which then records an event. The version
// is recorded once, the index of version 5 exists, and every row, old and
// new, reads back through QuerySQL and Query.
func TestReview17SQLiteUpgradeEveryVersion(t *testing.T) {
	ctx := context.Background()
	for from := range SchemaVersion {
		t.Run(fmt.Sprintf("from_v%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			db, err := OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var want []string
			if from > 0 {
				if _, err := db.Exec(`CREATE TABLE audit_schema_version (version INTEGER NOT NULL)`); err != nil {
					t.Fatal(err)
				}
				for to := 1; to <= from; to++ {
					for _, q := range migration(to, SQLite) {
						if _, err := db.Exec(q); err != nil {
							t.Fatalf("version %d: %s: %v", to, q, err)
						}
					}
					if _, err := db.Exec(`INSERT INTO audit_schema_version (version) VALUES (?)`, to); err != nil {
						t.Fatal(err)
					}
				}
				for i := range 3 {
					id := fmt.Sprintf("old-%d", i)
					if _, err := db.Exec(`INSERT INTO audit_log (time_ns, correlation_id, session_id, phase, allowed, dry_run, latency_ms, args) VALUES (?, ?, 's', 'outcome', 1, 0, 0.5, '{"n":12345678901234567}')`,
						int64(i)*int64(time.Second), id); err != nil {
						t.Fatal(err)
					}
					want = append(want, id)
				}
				got, err := QuerySQL(ctx, db, SQLite, Filter{SessionID: "s"})
				if err != nil || len(got) != 3 {
					t.Fatalf("QuerySQL of version %d before the upgrade: %d events, %v", from, len(got), err)
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for w := range 4 {
				want = append(want, fmt.Sprintf("new-%d", w))
				wg.Go(func() {
					odb := db
					if w >= 2 {
						var err error
						// Deferred transactions (no _txlock=immediate),
						// whose upgrades to writing collide in the
						// migration; a busy timeout all the same, for the
						// writer: without one, WriteDurable reports the
						// database locked, as documented, whenever another
						// opener writes at that moment (under load, now
						// and then).
						if odb, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)"); err != nil {
							errs[w] = err
							return
						}
						defer odb.Close()
					}
					s, err := NewSQL(ctx, odb, SQLite, &SQLOptions{OnError: func(error) {}})
					if err != nil {
						errs[w] = err
						return
					}
					e := &Event{Time: time.Unix(100+int64(w), 0), CorrelationID: fmt.Sprintf("new-%d", w), SessionID: "s",
						RequestID: "r", Phase: PhaseOutcome, Allowed: true, Args: map[string]any{"n": 1.5}}
					errs[w] = s.WriteDurable(ctx, e)
					if err := s.Close(); errs[w] == nil {
						errs[w] = err
					}
				})
			}
			wg.Wait()
			for w, err := range errs {
				if err != nil {
					t.Errorf("opener %d: %v", w, err)
				}
			}
			var n int
			if err := db.QueryRow(`SELECT COUNT(*) FROM audit_schema_version WHERE version = ?`, SchemaVersion).Scan(&n); err != nil || n != 1 {
				t.Errorf("version %d recorded %d times (%v), want once", SchemaVersion, n, err)
			}
			var idx int
			if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'audit_log_request'`).Scan(&idx); err != nil || idx != 1 {
				t.Errorf("index audit_log_request: %d (%v)", idx, err)
			}
			got, err := QuerySQL(ctx, db, SQLite, Filter{SessionID: "s"})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range got {
				ids = append(ids, e.CorrelationID)
				if strings.HasPrefix(e.CorrelationID, "old") && (e.RequestID != "" || e.Args["n"] == nil) {
					t.Errorf("old row %s read back as %+v", e.CorrelationID, e)
				}
			}
			slices.Sort(ids)
			slices.Sort(want)
			if !slices.Equal(ids, want) {
				t.Errorf("rows after the upgrade: %v, want %v", ids, want)
			}
			if got, err := QuerySQL(ctx, db, SQLite, Filter{RequestID: "r"}); err != nil || len(got) != 4 {
				t.Errorf("QuerySQL by request id: %d events (%v), want the 4 new ones", len(got), err)
			}
		})
	}
}

package audit_test

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

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// review15fIDs are odd request ids: NUL, invalid UTF-8, U+FFFD itself,
// case and space variants, SQL wildcards and quotes, unnormalised text,
// and ids longer than PostgreSQL's 256-character index prefix that share
// that prefix.
func review15fIDs() []string {
	long := strings.Repeat("é", 256)
	return []string{
		"gw-1", "GW-1", "gw-1 ", " gw-1", "gw-1\x00", "gw-1\uFFFD", "gw-1\xff", "\xff", "\x00", "\uFFFD",
		"gw-\xc3", "%", "_", "gw-%", "'", `\`, "é", "e\u0301", long, long + "a", long + "b", long + "\x00",
		strings.Repeat("x", 300),
	}
}

// review15fMatches returns the correlation ids of evs, sorted.
func review15fMatches(evs []audit.Event) []string {
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.CorrelationID)
	}
	slices.Sort(ids)
	return ids
}

// TestReview15fRequestIDDifferential: for the same events, a Filter by
// RequestID finds the same records in a JSONL file (QueryJSONL), in SQLite
// and in PostgreSQL, over odd ids, alone and with other filters.
func TestReview15fRequestIDDifferential(t *testing.T) {
	ctx := context.Background()
	ids := review15fIDs()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var evs []audit.Event
	for i, id := range ids {
		for j := range 2 {
			evs = append(evs, audit.Event{Time: base.Add(time.Duration(2*i+j) * time.Millisecond),
				CorrelationID: fmt.Sprintf("c-%02d-%d", i, j), RequestID: id, Tool: []string{"a", "b"}[j],
				Phase: audit.PhaseOutcome, Allowed: j == 0})
		}
	}
	evs = append(evs, audit.Event{Time: base, CorrelationID: "none", Phase: audit.PhaseOutcome})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	js, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	lite := newSQLiteSink(t, openSQLite(t), nil)
	pg := testsvc.StartPostgres(t)
	pdb, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	ps, err := audit.NewSQL(ctx, pdb, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	for _, e := range evs {
		for _, s := range []audit.Sink{js, lite, ps} {
			e := e
			if err := s.Write(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := js.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lite.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ps.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	yes := true
	for _, id := range append(ids, "", "gw-2", strings.Repeat("é", 256)+"c") {
		for _, f := range []audit.Filter{
			{RequestID: id},
			{RequestID: id, Tool: "a"},
			{RequestID: id, Allowed: &yes, Since: base.Add(time.Millisecond)},
			{RequestID: id, Limit: 1},
		} {
			want, err := audit.QueryJSONL(path, f)
			if err != nil {
				t.Fatal(err)
			}
			for name, s := range map[string]*audit.SQLSink{"sqlite": lite, "postgres": ps} {
				got, err := s.Query(ctx, f)
				if err != nil {
					t.Fatalf("%s %+q: %v", name, f.RequestID, err)
				}
				if g, w := review15fMatches(got), review15fMatches(want); !slices.Equal(g, w) {
					t.Errorf("%s Filter{RequestID: %+q, Tool: %q, Limit %d}: %v; QueryJSONL %v", name, f.RequestID, f.Tool, f.Limit, g, w)
				}
			}
		}
	}
}

// TestReview15fTimeBoundsZone: a time bound is an instant, whatever its
// location: Since and Until given in a zone far from UTC select the same
// events from SQL as from Filter.Match, at the ends of the range SQL can
// hold.
func TestReview15fTimeBoundsZone(t *testing.T) {
	ctx := context.Background()
	s := newSQLiteSink(t, openSQLite(t), nil)
	east, west := time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600)
	late := time.Date(2261, 12, 31, 20, 0, 0, 0, time.UTC)
	early := time.Date(1678, 1, 1, 2, 0, 0, 0, time.UTC)
	for i, tm := range []time.Time{early, early.Add(time.Hour), late, late.Add(time.Hour)} {
		e := audit.Event{Time: tm, CorrelationID: fmt.Sprintf("t%d", i), Phase: audit.PhaseOutcome}
		if err := s.WriteDurable(ctx, &e); err != nil {
			t.Fatalf("event at %v: %v", tm, err)
		}
	}
	for _, f := range []audit.Filter{
		{Since: late.Add(30 * time.Minute).In(east)},
		{Until: late.Add(30 * time.Minute).In(east)},
		{Since: early.Add(30 * time.Minute).In(west)},
		{Until: early.Add(30 * time.Minute).In(west)},
	} {
		all, err := s.Query(ctx, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var want []audit.Event
		for _, e := range all {
			if f.Match(&e) {
				want = append(want, e)
			}
		}
		got, err := s.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := review15fMatches(got), review15fMatches(want); !slices.Equal(g, w) {
			t.Errorf("Filter{Since: %v, Until: %v}: %v; Match %v", f.Since, f.Until, g, w)
		}
	}
	// An event of 2261 in UTC is storable whatever its location.
	e := audit.Event{Time: late.In(east), CorrelationID: "east", Phase: audit.PhaseOutcome}
	if err := s.WriteDurable(ctx, &e); err != nil {
		t.Errorf("event at %v (%v UTC): %v", e.Time, late, err)
	}
}

// TestReview15fReadOnlySQLite: a version 5 database opened read-only
// answers QuerySQL (the partial index used), and NewSQL on it, which
// needs to change nothing, does not spin on SQLITE_READONLY.
func TestReview15fReadOnlySQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	db, err := audit.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e := audit.Event{Time: time.Unix(1_700_000_000, int64(i)), CorrelationID: fmt.Sprintf("c%d", i), RequestID: fmt.Sprintf("gw-%d", i%2), Phase: audit.PhaseOutcome}
		if err := s.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	got, err := audit.QuerySQL(ctx, ro, audit.SQLite, audit.Filter{RequestID: "gw-0"})
	if err != nil || len(got) != 2 {
		t.Errorf("QuerySQL read-only Filter{RequestID: gw-0}: %d events, %v; want 2", len(got), err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	rs, err := audit.NewSQL(cctx, ro, audit.SQLite, nil)
	t.Logf("NewSQL read-only v5: %v after %v", err, time.Since(start))
	if err == nil {
		rs.Close()
	}
}

// TestReview15fConcurrentUpgradeV4 upgrades one version 4 SQLite table
// from several openers at once, through OpenSQLite and through a plain
// sql.Open (deferred transactions).
func TestReview15fConcurrentUpgradeV4(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprint("plain=", plain), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "audit.db")
			db, err := audit.OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s := newSQLiteSink(t, db, nil)
			e := audit.Event{Time: time.Unix(1_700_000_000, 0), CorrelationID: "a", RequestID: "gw-1", Phase: audit.PhaseOutcome}
			if err := s.WriteDurable(ctx, &e); err != nil {
				t.Fatal(err)
			}
			s.Close()
			for _, q := range []string{`DROP INDEX audit_log_request`, `DROP INDEX audit_log_parent`, `ALTER TABLE audit_log DROP COLUMN parent_id`, `DELETE FROM audit_schema_version`, `INSERT INTO audit_schema_version (version) VALUES (4)`} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var d *sql.DB
					var err error
					if plain {
						d, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(100)")
					} else {
						d, err = audit.OpenSQLite(path)
					}
					if err != nil {
						errs[i] = err
						return
					}
					defer d.Close()
					s, err := audit.NewSQL(ctx, d, audit.SQLite, nil)
					if err != nil {
						errs[i] = err
						return
					}
					_, errs[i] = s.Query(ctx, audit.Filter{RequestID: "gw-1"})
					s.Close()
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("opener %d: %v", i, err)
				}
			}
			var n, v int
			db.QueryRow(`SELECT COUNT(*) FROM audit_schema_version WHERE version = $1`, audit.SchemaVersion).Scan(&n)
			db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'audit_log_request'`).Scan(&v)
			if n != 1 || v != 1 {
				t.Errorf("version %d recorded %d times, index %d", audit.SchemaVersion, n, v)
			}
		})
	}
}

// TestReview15fCombinedPlans: a Filter by RequestID or CorrelationID (a
// handful of rows) with other filters searches the index of that id, not
// the index of a session, subject or tool, which may hold most of the table
// (it spares only the sort of the few rows found); never the table in rowid
// order.
func TestReview15fCombinedPlans(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	for i, e := range floodEvents("p", 2000) {
		e.Allowed = i%10 != 0
		if i%2 == 0 {
			e.RequestID = fmt.Sprintf("gw-%05d", i/2)
		}
		if err := s.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	since := floodEvents("p", 1)[0].Time
	no := false
	for _, tc := range []struct {
		f     audit.Filter
		index string
	}{
		{audit.Filter{RequestID: "gw-00042", Allowed: &no}, "audit_log_request"},
		{audit.Filter{RequestID: "gw-00042", Code: "FORBIDDEN", Limit: 1}, "audit_log_request"},
		{audit.Filter{RequestID: "gw-00042", Since: since, Until: since.Add(time.Hour)}, "audit_log_request"},
		{audit.Filter{RequestID: "gw-00042", Phase: audit.PhaseOutcome, Limit: 5}, "audit_log_request"},
		{audit.Filter{RequestID: "gw-00042", Tool: "tool_1"}, "audit_log_request"},
		{audit.Filter{RequestID: "gw-00042", SessionID: "sess-01"}, "audit_log_request"},
		{audit.Filter{RequestID: "gw-00042", Subject: "user03", Limit: 10}, "audit_log_request"},
		{audit.Filter{CorrelationID: "p-00042", Tool: "tool_1"}, "audit_log_correlation"},
		{audit.Filter{CorrelationID: "p-00042", SessionID: "sess-42", Subject: "user00"}, "audit_log_correlation"},
		{audit.Filter{SessionID: "sess-01", Tool: "tool_1"}, "audit_log_"},
	} {
		q, args := audit.QuerySQLText(audit.SQLite, tc.f)
		rs, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rs.Next() {
			var id, parent, notused int
			var detail string
			if err := rs.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rs.Close()
		all := strings.Join(plan, "; ")
		if !strings.Contains(all, "USING INDEX "+tc.index) {
			t.Errorf("%+v: plan %q, want %s", tc.f, all, tc.index)
		}
		// The same rows as Match finds.
		got, err := s.Query(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		all2, err := s.Query(ctx, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var want []audit.Event
		for _, e := range all2 {
			if tc.f.Match(&e) && (tc.f.Limit == 0 || len(want) < tc.f.Limit) {
				want = append(want, e)
			}
		}
		if g, w := review15fMatches(got), review15fMatches(want); !slices.Equal(g, w) {
			t.Errorf("%+v: %v, Match %v", tc.f, g, w)
		}
	}
}

// TestReview15fPostgresUpgradeAndPlans: a version 4 PostgreSQL table is
// upgraded by several openers at once, a sink writing to it from the first
// upgrade on; then a
// Filter by request id with a tool, session or time bound searches
// audit_log_request (the table analysed, sequential scans allowed).
func TestReview15fPostgresUpgradeAndPlans(t *testing.T) {
	ctx := context.Background()
	pg := testsvc.StartPostgres(t)
	open := func() *sql.DB {
		db, err := sql.Open("pgx", pg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open()
	w, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, q := range []string{`DROP INDEX audit_log_request`, `DROP INDEX audit_log_parent`, `ALTER TABLE audit_log DROP COLUMN parent_id`, `DELETE FROM audit_schema_version`, `INSERT INTO audit_schema_version (version) VALUES (4)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	stop := make(chan struct{})
	// upgraded is closed when the first opener has upgraded the table: the
	// sink, of this version, writes parent_id, which the version 4 table
	// lacks until then (its batches would fail, and be dropped, however
	// long the upgrade takes on a busy machine).
	upgraded := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the sink that opened the table before writes while the other openers upgrade
		defer wg.Done()
		select {
		case <-upgraded:
		case <-stop:
			return
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e := audit.Event{Time: base.Add(time.Duration(i) * time.Microsecond), CorrelationID: fmt.Sprintf("c-%06d", i),
				RequestID: fmt.Sprintf("gw-%06d", i), Tool: "refund", SessionID: "s", Phase: audit.PhaseOutcome}
			if i%3 == 0 {
				e.RequestID = ""
			}
			if err := w.Write(ctx, &e); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	errs := make([]error, 6)
	var openers sync.WaitGroup
	for i := range errs {
		openers.Add(1)
		go func() {
			defer openers.Done()
			s, err := audit.NewSQL(ctx, open(), audit.Postgres, nil)
			if err == nil {
				once.Do(func() { close(upgraded) })
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	openers.Wait()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
	var n, ix int
	db.QueryRow(`SELECT COUNT(*) FROM audit_schema_version WHERE version = $1`, audit.SchemaVersion).Scan(&n)
	db.QueryRow(`SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'audit_log_request'`).Scan(&ix)
	if n != 1 || ix != 1 {
		t.Errorf("version %d recorded %d times, %d indexes audit_log_request", audit.SchemaVersion, n, ix)
	}
	if _, err := db.Exec(`ANALYZE audit_log`); err != nil {
		t.Fatal(err)
	}
	var rows int
	db.QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&rows)
	t.Logf("%d rows", rows)
	for _, f := range []audit.Filter{
		{RequestID: "gw-000043"},
		{RequestID: "gw-000043", Tool: "refund"},
		{RequestID: "gw-000043", SessionID: "s", Limit: 1},
		{RequestID: "gw-000043", Since: base},
	} {
		got, err := w.Query(ctx, f)
		if err != nil || len(got) != 1 || got[0].CorrelationID != "c-000043" {
			t.Errorf("%+v: %d events, %v", f, len(got), err)
		}
		q, args := audit.QuerySQLText(audit.Postgres, f)
		rs, err := db.Query("EXPLAIN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rs.Next() {
			var line string
			rs.Scan(&line)
			plan = append(plan, line)
		}
		rs.Close()
		if all := strings.Join(plan, "\n"); !strings.Contains(all, "audit_log_request") {
			t.Errorf("%+v:\n%s", f, all)
		}
	}
}

// TestReview15fEmptyAndLimits: an empty table answers every Filter with no
// events and no error (through the sink and QuerySQL); a Limit of 0 or
// below is no limit, in SQL as in QueryJSONL; Since equal to Until
// selects nothing.
func TestReview15fEmptyAndLimits(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	no := false
	for _, f := range []audit.Filter{{}, {RequestID: "gw-1"}, {RequestID: "gw-1", Tool: "t", Allowed: &no, Limit: 3}} {
		if got, err := s.Query(ctx, f); err != nil || len(got) != 0 {
			t.Errorf("empty table, sink %+v: %d, %v", f, len(got), err)
		}
		if got, err := audit.QuerySQL(ctx, db, audit.SQLite, f); err != nil || len(got) != 0 {
			t.Errorf("empty table, QuerySQL %+v: %d, %v", f, len(got), err)
		}
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	js, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		e := audit.Event{Time: base.Add(time.Duration(i) * time.Second), CorrelationID: fmt.Sprint(i), RequestID: "gw-1", Phase: audit.PhaseOutcome}
		if err := s.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
		if err := js.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	js.Close()
	s.Flush(ctx)
	for _, tc := range []struct {
		f    audit.Filter
		want int
	}{
		{audit.Filter{RequestID: "gw-1", Limit: 0}, 5},
		{audit.Filter{RequestID: "gw-1", Limit: -1}, 5},
		{audit.Filter{RequestID: "gw-1", Limit: 2}, 2},
		{audit.Filter{RequestID: "gw-1", Since: base.Add(time.Second), Until: base.Add(time.Second)}, 0},
		{audit.Filter{RequestID: "gw-1", Since: base.Add(time.Second), Until: base.Add(time.Second + 1)}, 1},
		{audit.Filter{RequestID: "gw-1", Since: base.Add(3 * time.Second), Until: base}, 0},
	} {
		got, err := s.Query(ctx, tc.f)
		jgot, jerr := audit.QueryJSONL(path, tc.f)
		if err != nil || jerr != nil || len(got) != tc.want || len(jgot) != tc.want {
			t.Errorf("%+v: SQL %d (%v), JSONL %d (%v), want %d", tc.f, len(got), err, len(jgot), jerr, tc.want)
		}
	}
}

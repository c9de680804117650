package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestReview28bPageRandom: random trails (ties at one instant across zones,
// pre-1970 and nanosecond-apart times, subjects and tools interleaved at an
// instant) exported page by page with Next under random filters (Since at
// or between instants, Until at a record's instant, Limit 1 to 5) read each
// matching record once, in the order of the readers, on QueryJSONL,
// SQLSink.Query and QuerySQL, and QuerySQL of a table of schema version 3;
// a negative Limit is no limit on each.
func TestReview28bPageRandom(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	j, err := OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	db, err := OpenSQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := NewSQL(ctx, db, SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old, err := OpenSQLite(filepath.Join(dir, "v3.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.Exec(`CREATE TABLE audit_schema_version (version INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for to := 1; to <= 3; to++ {
		for _, q := range migration(to, SQLite) {
			if _, err := old.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := old.Exec(`INSERT INTO audit_schema_version (version) VALUES (?)`, to); err != nil {
			t.Fatal(err)
		}
	}

	rng := rand.New(rand.NewPCG(28, 2))
	instants := []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC).Add(time.Nanosecond),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC).Add(2 * time.Nanosecond),
		time.Date(1700, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 7, 28, 12, 0, 0, 1, time.UTC),
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 14*3600), time.FixedZone("", -12*3600), time.FixedZone("", 1800)}
	var evs []Event
	for i := range 80 {
		e := Event{
			Time:          instants[rng.IntN(len(instants))].In(zones[rng.IntN(len(zones))]),
			CorrelationID: fmt.Sprintf("c%03d", i),
			Phase:         PhaseOutcome,
			Subject:       []string{"alice", "bob"}[rng.IntN(2)],
			Tool:          []string{"t1", "t2", "t3"}[rng.IntN(3)],
		}
		evs = append(evs, e)
		for _, sink := range []Sink{j, s} {
			e := e
			if err := sink.Write(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := old.Exec(`INSERT INTO audit_log (time_ns, correlation_id, subject, tool, phase, allowed, dry_run, latency_ms) VALUES (?, ?, ?, ?, 'outcome', 0, 0, 0)`,
			e.Time.UnixNano(), e.CorrelationID, e.Subject, e.Tool); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	readers := []struct {
		name  string
		query func(Filter) ([]Event, error)
	}{
		{"QueryJSONL", func(f Filter) ([]Event, error) { return QueryJSONL(path, f) }},
		{"Query", func(f Filter) ([]Event, error) { return s.Query(ctx, f) }},
		{"QuerySQL", func(f Filter) ([]Event, error) { return QuerySQL(ctx, db, SQLite, f) }},
		{"QuerySQL v3", func(f Filter) ([]Event, error) { return QuerySQL(ctx, old, SQLite, f) }},
	}
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(a, b Event) int { return a.Time.Compare(b.Time) })
	pick := func() time.Time {
		if rng.IntN(4) == 0 {
			return time.Time{}
		}
		at := instants[rng.IntN(len(instants))].In(zones[rng.IntN(len(zones))])
		return at.Add(time.Duration(rng.IntN(3) - 1)) // at an instant, or a nanosecond beside
	}
	for range 150 {
		f := Filter{Since: pick(), Until: pick(), Limit: 1 + rng.IntN(5)}
		switch rng.IntN(4) {
		case 0:
			f.Subject = "alice"
		case 1:
			f.Tool = "t2"
		}
		var want []string
		for _, e := range sorted {
			if f.Match(&e) {
				want = append(want, e.CorrelationID)
			}
		}
		for _, r := range readers {
			var got []string
			g := f
			for range 1000 {
				page, err := r.query(g)
				if err != nil {
					t.Fatalf("%s(%+v): %v", r.name, g, err)
				}
				for _, e := range page {
					got = append(got, e.CorrelationID)
				}
				if g = g.Next(page); len(page) < g.Limit {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: export of %+v reads\n%v\nwant\n%v", r.name, f, got, want)
			}
		}
	}
	// A negative Limit is no limit, as 0 is, on every reader.
	var all []string
	for _, e := range sorted {
		all = append(all, e.CorrelationID)
	}
	for _, r := range readers {
		for _, off := range []int{0, 3} {
			evs, err := r.query(Filter{Limit: -1, Offset: off})
			if err != nil {
				t.Fatalf("%s: Limit -1 Offset %d: %v", r.name, off, err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.CorrelationID)
			}
			if !slices.Equal(got, all[off:]) {
				t.Errorf("%s: Limit -1 Offset %d = %v, want %v", r.name, off, got, all[off:])
			}
		}
	}
}

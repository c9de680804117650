package pgtest

import (
	"context"
	"errors"
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

// r28pReader is one reader of a trail, by name.
type r28pReader struct {
	name  string
	query func(f audit.Filter) ([]audit.Event, error)
}

// r28pTrail returns a JSONL sink, a SQLite sink and a PostgreSQL sink, and
// every reader of what they hold.
func r28pTrail(t *testing.T, srv *server) (sinks []audit.Sink, flush func(), readers []r28pReader) {
	t.Helper()
	ctx := context.Background()
	pgDB := srv.db(t)
	pgS, err := audit.NewSQL(ctx, pgDB, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgS.Close() })
	dir := t.TempDir()
	ldb, err := audit.OpenSQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ldb.Close() })
	liteS, err := audit.NewSQL(ctx, ldb, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { liteS.Close() })
	path := filepath.Join(dir, "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	flush = func() {
		if err := j.Flush(); err != nil {
			t.Error(err)
		}
		for _, s := range []*audit.SQLSink{pgS, liteS} {
			if err := s.Flush(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	return []audit.Sink{j, liteS, pgS}, flush, []r28pReader{
		{"QueryJSONL", func(f audit.Filter) ([]audit.Event, error) { return audit.QueryJSONL(path, f) }},
		{"sqlite Query", func(f audit.Filter) ([]audit.Event, error) { return liteS.Query(ctx, f) }},
		{"sqlite QuerySQL", func(f audit.Filter) ([]audit.Event, error) { return audit.QuerySQL(ctx, ldb, audit.SQLite, f) }},
		{"postgres Query", func(f audit.Filter) ([]audit.Event, error) { return pgS.Query(ctx, f) }},
		{"postgres QuerySQL", func(f audit.Filter) ([]audit.Event, error) { return audit.QuerySQL(ctx, pgDB, audit.Postgres, f) }},
	}
}

// r28pInFlight reports whether err, a reader's, says only that the last
// line of a JSONL file was torn: read while a writer appends, that is a
// line still being written (QueryJSONL's doc), no fault of the file.
func r28pInFlight(err error) bool {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return false
	}
	errs := j.Unwrap()
	return len(errs) == 1 && errors.Is(errs[0], audit.ErrTornLine)
}

func r28pIDs(evs []audit.Event) []string {
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.CorrelationID)
	}
	return ids
}

// TestReview28Page: Offset, Limit and Filter.Next page through the same
// trail alike on JSONL, SQLite and PostgreSQL: the same events in the same
// order (time, then the order written), ties more than a page deep read
// once each, a negative Offset refused by each; and an export that pages
// while writers append reads every record once.
func TestReview28Page(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	ctx := context.Background()

	t.Run("parity", func(t *testing.T) {
		sinks, flush, readers := r28pTrail(t, &srv)
		var evs []audit.Event
		for _, e := range r28Events() {
			if len(e.Detail) < 1000 { // not the 1 MiB one: QueryJSONL reads the file for every page
				evs = append(evs, e)
			}
		}
		tie := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC).Add(3 * time.Minute)
		for i := range 9 { // more ties than a page holds, in other zones
			evs = append(evs, audit.Event{Time: tie.In(time.FixedZone("", (i%3-1)*3600)), CorrelationID: fmt.Sprintf("r28p-tie-%d", i),
				Phase: audit.PhaseOutcome, Tool: "tie"})
		}
		for _, e := range evs {
			for _, s := range sinks {
				e := e
				if err := s.Write(ctx, &e); err != nil {
					t.Fatal(err)
				}
			}
		}
		flush()
		sorted := slices.Clone(evs)
		slices.SortStableFunc(sorted, func(a, b audit.Event) int { return a.Time.Compare(b.Time) })
		for _, f := range []audit.Filter{{}, {Tool: "tie"}, {Phase: audit.PhaseOutcome}, {Since: tie.Add(-time.Nanosecond)},
			{Since: tie, Until: tie.Add(time.Nanosecond)}, {Until: tie}} {
			var want []string
			for _, e := range sorted {
				if f.Match(&e) {
					want = append(want, r28ReadBack(e, nil).CorrelationID)
				}
			}
			for _, r := range readers {
				for _, limit := range []int{1, 3, 5, 64} {
					f := f
					f.Limit = limit
					var got []string
					for range 1000 {
						page, err := r.query(f)
						if err != nil {
							t.Fatalf("%s(%+v): %v", r.name, f, err)
						}
						got = append(got, r28pIDs(page)...)
						if f = f.Next(page); len(page) < limit {
							break
						}
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s: export of %+v reads\n%v\nwant\n%v", r.name, f, got, want)
					}
				}
				for _, off := range []int{0, 1, 7, len(want) - 1, len(want), len(want) + 1} {
					for _, limit := range []int{0, 1, 4} {
						f := f
						f.Offset, f.Limit = off, limit
						page, err := r.query(f)
						if err != nil {
							t.Fatalf("%s(%+v): %v", r.name, f, err)
						}
						w := want[min(off, len(want)):]
						if limit > 0 {
							w = w[:min(limit, len(w))]
						}
						if got := r28pIDs(page); !slices.Equal(got, w) {
							t.Errorf("%s: Offset %d Limit %d of %+v = %v, want %v", r.name, off, limit, f, got, w)
						}
					}
				}
			}
		}
		for _, r := range readers {
			if evs, err := r.query(audit.Filter{Offset: -1}); err == nil || !strings.Contains(err.Error(), "Offset") || evs != nil {
				t.Errorf("%s: Offset -1 = %d events, %v; want an error naming Offset", r.name, len(evs), err)
			}
		}
	})

	// Writers append concurrently, through WriteDurable (on PostgreSQL
	// each its own transaction, committed in any order), stamping each
	// record from one counter, seven to an instant; the export pages up
	// to Until, the instant before which every record is stored (the
	// margin before now of the documentation), and reads every record
	// once, in order.
	t.Run("concurrent", func(t *testing.T) {
		sinks, _, readers := r28pTrail(t, &srv)
		base := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
		const n = 420
		at := func(i int) time.Time { return base.Add(time.Duration(i/7) * time.Microsecond) }
		var mu sync.Mutex
		next, stored := 0, make([]bool, n+1)
		watermark := func() time.Time { // the first instant with a record not stored everywhere
			mu.Lock()
			defer mu.Unlock()
			i := 0
			for i < n && stored[i] {
				i++
			}
			return at(i - i%7)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					mu.Lock()
					i := next
					if i < n {
						next++
					}
					mu.Unlock()
					if i == n {
						return
					}
					for _, s := range sinks {
						e := audit.Event{Time: at(i), CorrelationID: fmt.Sprintf("c%04d", i), Phase: audit.PhaseOutcome}
						if err := audit.WriteDurable(ctx, s, &e); err != nil {
							t.Error(err)
						}
					}
					mu.Lock()
					stored[i] = true
					mu.Unlock()
				}
			})
		}
		var ew sync.WaitGroup
		got := make([][]string, len(readers))
		for k, r := range readers {
			ew.Go(func() {
				f := audit.Filter{Limit: 8}
				// It ends once it caught up with every record stored (no
				// bound in time: under load the writers took longer than 8 s).
				for len(got[k]) <= 2*n { // more: a page read again and again
					f.Until = watermark()
					page, err := r.query(f)
					if r28pInFlight(err) {
						// A record past the watermark, being written:
						// page holds every record before it.
						err = nil
					}
					if err != nil {
						t.Errorf("%s: %v", r.name, err)
						return
					}
					got[k] = append(got[k], r28pIDs(page)...)
					if f = f.Next(page); len(page) < f.Limit {
						if f.Until.Equal(at(n)) {
							return
						}
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		ew.Wait()
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("c%04d", i))
		}
		for k, r := range readers {
			// In time order; at one instant, in the order stored, which
			// the writers do not set.
			inst := func(id string) (i int) { fmt.Sscanf(id, "c%d", &i); return i / 7 }
			if !slices.IsSortedFunc(got[k], func(a, b string) int { return inst(a) - inst(b) }) {
				t.Errorf("%s: the export read records out of time order: %v", r.name, got[k])
			}
			if slices.Sort(got[k]); !slices.Equal(got[k], want) {
				t.Errorf("%s: the export read %d records, not each once: %v", r.name, len(got[k]), got[k])
			}
		}
	})
}

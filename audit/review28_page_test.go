package audit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// r28pIDs returns the correlation ids of evs.
func r28pIDs(evs []audit.Event) []string {
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.CorrelationID)
	}
	return ids
}

// TestReview28PageJSONLOrder: QueryJSONL orders as the SQL readers do, by
// time and then insertion (file) order, also when the file is not in time
// order (two writers of one file, records copied in): Limit keeps the
// oldest, not the first lines of the file.
func TestReview28PageJSONLOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for i, sec := range []int{3, 1, 2, 1, 0} {
		e := audit.Event{Time: base.Add(time.Duration(sec) * time.Second), CorrelationID: string(rune('a' + i)), Phase: audit.PhaseOutcome}
		if err := j.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		f    audit.Filter
		want string
	}{
		{audit.Filter{}, "ebdca"},
		{audit.Filter{Limit: 2}, "eb"},
		{audit.Filter{Limit: 3, Since: base.Add(time.Second)}, "bdc"},
	} {
		evs, err := audit.QueryJSONL(path, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, id := range r28pIDs(evs) {
			got += id
		}
		if got != tt.want {
			t.Errorf("QueryJSONL(%+v) = %s, want %s", tt.f, got, tt.want)
		}
	}
}

// r28pReader is one reader of a trail, by name.
type r28pReader struct {
	name  string
	query func(f audit.Filter) ([]audit.Event, error)
}

// r28pSinks returns a JSONL sink and a SQLite sink in a temp dir, and the
// readers of what they hold: QueryJSONL, SQLSink.Query and QuerySQL.
func r28pSinks(t *testing.T) (*audit.JSONLSink, *audit.SQLSink, []r28pReader) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	db, err := audit.OpenSQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return j, s, []r28pReader{
		{"QueryJSONL", func(f audit.Filter) ([]audit.Event, error) { return audit.QueryJSONL(path, f) }},
		{"SQLSink.Query", func(f audit.Filter) ([]audit.Event, error) { return s.Query(ctx, f) }},
		{"QuerySQL", func(f audit.Filter) ([]audit.Event, error) { return audit.QuerySQL(ctx, db, audit.SQLite, f) }},
	}
}

// r28pExport reads every page of f with query, as the export loop of the
// documentation does, and returns the events read.
func r28pExport(t *testing.T, query func(audit.Filter) ([]audit.Event, error), f audit.Filter) []audit.Event {
	t.Helper()
	var all []audit.Event
	for range 10000 {
		page, err := query(f)
		if err != nil {
			t.Fatalf("query(%+v): %v", f, err)
		}
		all = append(all, page...)
		if len(page) < f.Limit {
			return all
		}
		f = f.Next(page)
	}
	t.Fatalf("the export of %+v does not end", f)
	return nil
}

// TestReview28PageTies: more records at one instant than a page holds
// (a coarse clock, a burst, records copied in) are read page after page,
// each once, in the order written, by every reader; so are those around them.
// Paging by Since alone repeats that instant's first page for ever.
func TestReview28PageTies(t *testing.T) {
	ctx := context.Background()
	j, s, readers := r28pSinks(t)
	base := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("", 14*3600), time.FixedZone("", -12*3600)}
	var want []string
	add := func(at time.Time, id string) {
		e := audit.Event{Time: at, CorrelationID: id, Phase: audit.PhaseOutcome, Tool: "t"}
		for _, sink := range []audit.Sink{j, s} {
			e := e
			if err := sink.Write(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, id)
	}
	add(base.Add(-time.Nanosecond), "before")
	for i := range 25 {
		add(base.In(zones[i%len(zones)]), "tie-"+string(rune('A'+i)))
	}
	add(base.Add(time.Nanosecond), "after-1")
	add(base.Add(time.Nanosecond), "after-2")
	add(base.Add(time.Second), "later")
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range readers {
		for _, limit := range []int{1, 2, 3, 10, 25, 26, 100} {
			for _, f := range []audit.Filter{{Limit: limit}, {Limit: limit, Tool: "t", Since: base.Add(-time.Hour)}} {
				got := r28pIDs(r28pExport(t, r.query, f))
				if !slices.Equal(got, want) {
					t.Errorf("%s: export of %d a page reads\n%v\nwant\n%v", r.name, limit, got, want)
				}
			}
		}
		// Offset alone: the records after the first n, in the same order.
		for _, n := range []int{0, 1, 5, 26, 29, 30, 1000} {
			for _, limit := range []int{0, 3} {
				got, err := r.query(audit.Filter{Offset: n, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				w := want[min(n, len(want)):]
				if limit > 0 {
					w = w[:min(limit, len(w))]
				}
				if ids := r28pIDs(got); !slices.Equal(ids, w) {
					t.Errorf("%s: Offset %d Limit %d = %v, want %v", r.name, n, limit, ids, w)
				}
			}
		}
		// Since the instant of the ties, Offset counting from it.
		got, err := r.query(audit.Filter{Since: base.In(zones[1]), Offset: 24, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if ids := r28pIDs(got); !slices.Equal(ids, []string{"tie-Y", "after-1"}) {
			t.Errorf("%s: Since the ties, Offset 24 = %v", r.name, ids)
		}
	}
}

// TestReview28PageBadOffset: a negative Offset is refused by every reader,
// with an error that says so; Next of an empty page is the same filter.
func TestReview28PageBadOffset(t *testing.T) {
	_, _, readers := r28pSinks(t)
	for _, r := range readers {
		for _, n := range []int{-1, math.MinInt} {
			evs, err := r.query(audit.Filter{Offset: n, Limit: 1})
			if err == nil || !strings.Contains(err.Error(), "Offset") || evs != nil {
				t.Errorf("%s: Offset %d = %v, %v; want an error naming Offset", r.name, n, evs, err)
			}
		}
		if _, err := r.query(audit.Filter{Offset: math.MaxInt, Limit: math.MaxInt}); err != nil {
			t.Errorf("%s: Offset and Limit MaxInt: %v", r.name, err)
		}
	}
	f := audit.Filter{Tool: "x", Since: time.Unix(5, 0), Offset: 3, Limit: 2}
	if g := f.Next(nil); !reflect.DeepEqual(g, f) {
		t.Errorf("Next(nil) = %+v, want %+v", g, f)
	}
}

// TestReview28PageNext: Next moves Since to the last event's instant and
// Offset to the events read at it (counted on from f's own Offset when the
// whole page is at f.Since), whatever the zones of the times.
func TestReview28PageNext(t *testing.T) {
	base := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	ev := func(ns int, zone int) audit.Event {
		return audit.Event{Time: base.Add(time.Duration(ns)).In(time.FixedZone("", zone*3600))}
	}
	for _, tt := range []struct {
		f          audit.Filter
		page       []audit.Event
		since      time.Time
		wantOffset int
	}{
		{audit.Filter{Limit: 3}, []audit.Event{ev(0, 0), ev(1, 2), ev(1, -3)}, base.Add(1), 2},
		{audit.Filter{Limit: 3}, []audit.Event{ev(0, 0), ev(0, 2), ev(0, -3)}, base, 3},
		{audit.Filter{Limit: 2, Since: base.In(time.FixedZone("", 3600)), Offset: 3}, []audit.Event{ev(0, 0), ev(0, 5)}, base, 5},
		{audit.Filter{Limit: 2, Since: base, Offset: 3}, []audit.Event{ev(0, 0), ev(7, 5)}, base.Add(7), 1},
		{audit.Filter{Limit: 2, Since: base, Offset: 3}, []audit.Event{ev(7, 0)}, base.Add(7), 1},
	} {
		g := tt.f.Next(tt.page)
		if !g.Since.Equal(tt.since) || g.Offset != tt.wantOffset || g.Limit != tt.f.Limit {
			t.Errorf("%+v.Next = Since %v Offset %d Limit %d, want %v %d", tt.f, g.Since, g.Offset, g.Limit, tt.since, tt.wantOffset)
		}
	}
}

// TestReview28PageConcurrent: an export that pages through the trail while
// writers keep appending, and goes on from Next when it has caught up,
// reads every record once, in order, by every reader. The writers stamp and
// write each record under one lock (a record is written in the order of
// its time), seven records to an instant.
func TestReview28PageConcurrent(t *testing.T) {
	ctx := context.Background()
	j, s, readers := r28pSinks(t)
	base := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	const n = 700
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				if i == n {
					mu.Unlock()
					return
				}
				next++
				e := audit.Event{Time: base.Add(time.Duration(i/7) * time.Microsecond), CorrelationID: fmt.Sprintf("c%04d", i), Phase: audit.PhaseOutcome}
				for _, sink := range []audit.Sink{j, s} {
					e := e
					if err := sink.Write(ctx, &e); err != nil {
						t.Error(err)
					}
				}
				if i%5 == 0 {
					_ = j.Flush()
					_ = s.Flush(ctx)
				}
				mu.Unlock()
			}
		})
	}
	var ew sync.WaitGroup
	written := make(chan struct{}) // closed once every record is written and flushed
	var once sync.Once
	finish := func() { once.Do(func() { close(written) }) }
	defer func() { finish(); ew.Wait() }() // a failed Flush leaves no export running
	got := make([][]string, len(readers))
	for k, r := range readers {
		ew.Go(func() {
			f := audit.Filter{Limit: 9}
			for len(got[k]) <= 2*n { // more: a page read again and again
				var last bool // the writers were done and flushed before this page
				select {
				case <-written:
					last = true
				default:
				}
				page, err := r.query(f)
				if err != nil && !errors.Is(err, audit.ErrTornLine) {
					t.Errorf("%s: %v", r.name, err)
					return
				}
				got[k] = append(got[k], r28pIDs(page)...)
				f = f.Next(page)
				if len(page) < f.Limit {
					if len(got[k]) >= n || last {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	finish()
	ew.Wait() // each export ends when it has read n records, or caught up once all were written
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("c%04d", i))
	}
	for k, r := range readers {
		if !slices.Equal(got[k], want) {
			t.Errorf("%s: the export read %d records, not each once in order: %v", r.name, len(got[k]), got[k])
		}
	}
}

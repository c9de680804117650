package pgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// r25Texts are the values of the text fields of the generated records, and
// of the filters that select them: few, so that filters match several.
var r25Texts = []string{"", "a", "A", "a ", "\x00", "a\x00", "a\ufffd", "\xff", "\xed\xa0\x80", "\ufffd",
	"é", "e\u0301", "\u2028", "<&>", "'", `"`, "%", "_",
	strings.Repeat("x", 300) + "1", strings.Repeat("x", 300) + "2", strings.Repeat("é", 256) + "z"}

// r25Times are instants at the edges of what a SQL sink stores (years 1678
// to 2261), around the Unix epoch, and in zones whose offsets are not
// whole minutes.
func r25Times() []time.Time {
	lmt := time.FixedZone("LMT", 3600+61)
	return []time.Time{
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1678, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Unix(-1, 999_999_999).UTC(),
		time.Unix(0, 0).UTC(),
		time.Unix(0, 1).In(time.FixedZone("", -12*3600)),
		time.Unix(1_800_000_000, 0).In(lmt),
		time.Unix(1_800_000_000, 0).UTC(),
		time.Unix(1_800_000_000, 1).In(time.FixedZone("", 14*3600)),
		time.Date(2261, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
	}
}

// TestReview25QueryDifferential: over records with awkward values (NUL,
// invalid UTF-8, long strings sharing a 256-character prefix, times at the
// edges, empty strings), every Filter gives the same records in the same
// order from QueryJSONL, SQLite and PostgreSQL.
func TestReview25QueryDifferential(t *testing.T) {
	ctx := context.Background()
	var srv server
	pgS, err := audit.NewSQL(ctx, srv.db(t), audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pgS.Close()
	dir := t.TempDir()
	sdb, err := audit.OpenSQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	liteS, err := audit.NewSQL(ctx, sdb, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer liteS.Close()
	path := filepath.Join(dir, "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(25, 1))
	txt := func() string { return r25Texts[rng.IntN(len(r25Texts))] }
	times := r25Times()
	floats := []float64{0, math.Copysign(0, -1), 1.5, 5e-324, math.MaxFloat64, -math.MaxFloat64, 1e21, 1e-7, 123456789.123}
	var evs []audit.Event
	for i := range 200 {
		e := audit.Event{
			Time:          times[rng.IntN(len(times))],
			CorrelationID: fmt.Sprintf("c%d%s", i%50, txt()),
			RequestID:     txt(),
			SessionID:     txt(),
			Subject:       txt(),
			Tool:          txt(),
			Class:         txt(),
			Phase:         []audit.Phase{audit.PhaseIntent, audit.PhaseOutcome}[rng.IntN(2)],
			Allowed:       rng.IntN(2) == 0,
			DryRun:        rng.IntN(2) == 0,
			Code:          txt(),
			Detail:        txt(),
			LatencyMS:     floats[rng.IntN(len(floats))],
			ArgsSHA256:    txt(),
			Cost:          floats[rng.IntN(len(floats))],
			ClientName:    txt(),
		}
		if rng.IntN(3) == 0 {
			e.Roles = []string{txt(), txt()}
		}
		if rng.IntN(3) == 0 {
			e.Args = map[string]any{txt(): txt(), "n": []any{int64(math.MaxInt64), json.Number("1e400"), nil}}
		}
		evs = append(evs, e)
	}
	// In time order, ties in the order written: the order every reader
	// returns them in.
	slices.SortStableFunc(evs, func(a, b audit.Event) int { return a.Time.Compare(b.Time) })
	for i := range evs {
		for name, s := range map[string]audit.Sink{"postgres": pgS, "sqlite": liteS, "jsonl": j} {
			e := evs[i]
			if err := s.Write(ctx, &e); err != nil {
				t.Fatalf("%s: write %d: %v", name, i, err)
			}
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*audit.SQLSink{pgS, liteS} {
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	yes, no := true, false
	filter := func() audit.Filter {
		var f audit.Filter
		for range 1 + rng.IntN(3) {
			switch rng.IntN(11) {
			case 0:
				f.SessionID = txt()
			case 1:
				f.Subject = txt()
			case 2:
				f.Tool = txt()
			case 3:
				f.CorrelationID = fmt.Sprintf("c%d%s", rng.IntN(50), txt())
			case 4:
				f.RequestID = txt()
			case 5:
				f.Phase = []audit.Phase{audit.PhaseIntent, audit.PhaseOutcome, "INTENT"}[rng.IntN(3)]
			case 6:
				f.Code = txt()
			case 7:
				f.Allowed = []*bool{&yes, &no}[rng.IntN(2)]
			case 8:
				f.Since = times[rng.IntN(len(times))].Add(time.Duration(rng.IntN(3)-1) * time.Nanosecond)
			case 9:
				f.Until = times[rng.IntN(len(times))].Add(time.Duration(rng.IntN(3)-1) * time.Nanosecond)
			case 10:
				f.Limit = rng.IntN(5) - 1
			}
		}
		return f
	}
	key := func(evs []audit.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, fmt.Sprintf("%s %d %s %t", e.CorrelationID, e.Time.UnixNano(), e.Phase, e.Allowed))
		}
		return out
	}
	fs := []audit.Filter{{}, {Since: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}, {Until: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Since: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Since: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}, {Until: time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	for range 250 {
		fs = append(fs, filter())
	}
	all, err := audit.QueryJSONL(path, audit.Filter{})
	if err != nil || len(all) != len(evs) {
		t.Fatalf("QueryJSONL: %d events, %v; want %d", len(all), err, len(evs))
	}
	for _, f := range fs {
		want, err := audit.QueryJSONL(path, f)
		if err != nil {
			t.Fatalf("QueryJSONL(%+v): %v", f, err)
		}
		for name, s := range map[string]*audit.SQLSink{"postgres": pgS, "sqlite": liteS} {
			got, err := s.Query(ctx, f)
			if err != nil {
				t.Fatalf("%s: Query(%+v): %v", name, f, err)
			}
			if diff := cmp.Diff(key(want), key(got)); diff != "" {
				t.Fatalf("%s: Query(%+v) differs from QueryJSONL (-jsonl +%s):\n%s", name, f, name, shorten(diff))
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Fatalf("%s: Query(%+v) reads other events than QueryJSONL (-jsonl +%s):\n%s", name, f, name, shorten(diff))
			}
		}
	}
}

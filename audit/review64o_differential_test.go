package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

func review64oStrings() []string {
	emoji := strings.Repeat("😀", 300)
	return []string{
		"", "alice", "Alice", "ALICE", "alice ", " alice", "al", "alice\x00", "alice\uFFFD",
		"alice\xff", "alice\xff\xfe", "é", "e\u0301", "ß", "SS", emoji, emoji + "a", emoji + "b",
		emoji[:len(emoji)-1], "a%", "a_", "'; DROP TABLE audit_log; --", "\u2028", "\x00",
		"\uFFFD", strings.Repeat("x", 5000), "ı", "I", "\t", "\\", "\"",
	}
}

func review64oTimes() []time.Time {
	base := []time.Time{
		time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT
		time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), // 01:30 EST
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2261, 12, 31, 23, 59, 59, 999990000, time.UTC),
		time.Date(1900, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 8, 7, 0, 0, 500, time.UTC),
	}
	var out []time.Time
	for _, b := range base {
		out = append(out, b, b.Add(time.Nanosecond), b.Add(999*time.Nanosecond))
	}
	return out
}

func review64oZones() []*time.Location {
	ny, _ := time.LoadLocation("America/New_York")
	ams, _ := time.LoadLocation("Europe/Amsterdam")
	return []*time.Location{time.UTC, ny, ams, time.FixedZone("", 14*3600), time.FixedZone("", -12*3600),
		time.FixedZone("X", 3600+7), time.Local}
}

func review64oNorm(e *Event, fix bool) string {
	tx := func(s string) string {
		if fix {
			return text(s)
		}
		return s
	}
	rj, _ := json.Marshal(e.Roles)
	if len(e.Roles) == 0 {
		rj = []byte("null")
	}
	aj, _ := json.Marshal(e.Args)
	if len(e.Args) == 0 {
		aj = []byte("null")
	}
	if fix {
		var r2 []string
		json.Unmarshal(rj, &r2)
		rj, _ = json.Marshal(r2)
		var a2 map[string]any
		d := json.NewDecoder(strings.NewReader(string(aj)))
		d.UseNumber()
		d.Decode(&a2)
		aj, _ = json.Marshal(a2)
	}
	return fmt.Sprintf("t=%d c=%q p=%q r=%q s=%q sub=%q roles=%s tool=%q cls=%q ph=%q al=%v dr=%v code=%q det=%q lat=%v sha=%q cost=%v pv=%q cn=%q args=%s",
		e.Time.UnixNano(), tx(e.CorrelationID), tx(e.ParentID), tx(e.RequestID), tx(e.SessionID),
		tx(e.Subject), rj, tx(e.Tool), tx(e.Class), e.Phase, e.Allowed, e.DryRun, tx(e.Code),
		tx(e.Detail), e.LatencyMS, tx(e.ArgsSHA256), e.Cost, tx(e.ProtocolVersion), tx(e.ClientName), aj)
}

// TestReview64oDifferential: one random trail (equal and nanosecond-apart
// times around a DST change, a leap day and both ends of the SQL range, in
// zones of whole hours, seconds and DST; empty, huge, Unicode, NUL and
// invalid UTF-8 text; args kept or not, through each sink or a Fanout)
// answers random Filters (every field, case and NUL variants, time edges
// ±1 ns, Offset and Limit up to MaxInt, page-by-page exports with Next)
// alike on QueryJSONL, SQLSink.Query and QuerySQL on SQLite and on
// PostgreSQL, and as Filter.Match over the events in memory (text as the
// sinks record it; JSONL times keep their offset, SQL ones are in UTC).
// It passes: no disagreement found.
func TestReview64oDifferential(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	j, err := OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	lite, err := OpenSQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	ls, err := NewSQL(ctx, lite, SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	pg := testsvc.StartPostgres(t)
	pdb, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	ps, err := NewSQL(ctx, pdb, Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()

	seed := uint64(64)
	if s := os.Getenv("REVIEW64O_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	rng := rand.New(rand.NewPCG(seed, 15))
	strs := review64oStrings()
	times := review64oTimes()
	zones := review64oZones()
	pick := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return strs[rng.IntN(len(strs))]
	}
	small := func(p ...string) string { return p[rng.IntN(len(p))] }
	argsPool := []map[string]any{nil, {}, {"a": 1.0}, {"s": "x\x00y", "k\xff": "v"}, {"n": json.Number("1e400")},
		{"nested": map[string]any{"b": []any{true, nil, "é"}}}, {"big": json.Number("12345678901234567")}}
	rolesPool := [][]string{nil, {}, {"admin"}, {"", "a\xff", "b\x00"}, {"x", "x"}}
	var evs []Event
	fan := Fanout(j, ls, ps)
	rawPool := []string{"", "null", "{}", `{"a":1}`, `{"a":1.0}`, `{"A":1,"a":2}`, "{", `{"s":"\u0000"}`,
		"{\"k\":\"\xff\"}", ` {"a" : 1} `, `[1,2]`, `"x"`, `{"b":2,"a":1}`}
	for i := range 200 {
		e := Event{
			Time:            times[rng.IntN(len(times))].In(zones[rng.IntN(len(zones))]),
			CorrelationID:   small("c1", "c2", "C1", "c1\x00", strs[rng.IntN(len(strs))]) + fmt.Sprint(i%7),
			ParentID:        small("", "c10", "p\xff", strings.Repeat("😀", 300)+"x"),
			RequestID:       small("", "r1", "R1", "r1\x00"),
			SessionID:       pick(),
			Subject:         pick(),
			Roles:           rolesPool[rng.IntN(len(rolesPool))],
			Tool:            pick(),
			Class:           small("", "read", "write"),
			Phase:           []Phase{PhaseIntent, PhaseOutcome}[rng.IntN(2)],
			Allowed:         rng.IntN(2) == 0,
			DryRun:          rng.IntN(2) == 0,
			Code:            small("", "FORBIDDEN", "forbidden", "X\x00"),
			Detail:          pick(),
			LatencyMS:       []float64{0, 1.5, 5e-324, 1e308, 0.1, -1e-300, 9.223372036854775807e18, -9.223372036854775808e18, 1.8446744073709552e19, 9007199254740993, 1 << 62, 123456789012345.67, math.MaxFloat64, -math.SmallestNonzeroFloat64}[rng.IntN(14)],
			ArgsSHA256:      small("", "abc"),
			Cost:            []float64{0, 1, 0.3, 1e-7}[rng.IntN(4)],
			ProtocolVersion: small("", "2025-06-18"),
			ClientName:      pick(),
			Args:            argsPool[rng.IntN(len(argsPool))],
		}
		mode := rng.IntN(4)
		var raw json.RawMessage
		if mode >= 2 {
			raw = json.RawMessage(rawPool[rng.IntN(len(rawPool))])
			if rng.IntN(2) == 0 {
				e.ArgsSHA256 = ""
			}
		}
		evs = append(evs, e)
		if e.ArgsSHA256 == "" && len(raw) > 0 {
			evs[len(evs)-1].ArgsSHA256 = ArgsSHA256(raw)
		}
		switch mode {
		case 3:
			c := e
			if err := fan.Keep(ctx, &c, raw); err != nil {
				t.Fatalf("fanout keep %d: %v", i, err)
			}
			continue
		case 1:
			c := e
			if err := fan.Write(ctx, &c); err != nil {
				t.Fatalf("fanout write %d: %v", i, err)
			}
			continue
		}
		for _, s := range []Sink{j, ls, ps} {
			c := e
			var err error
			if mode == 2 {
				err = s.(Keeper).Keep(ctx, &c, raw)
			} else {
				err = s.Write(ctx, &c)
			}
			if err != nil {
				t.Fatalf("%T write %d: %v", s, i, err)
			}
		}
	}
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ls.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ps.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(a, b Event) int { return a.Time.Compare(b.Time) })
	readers := []struct {
		name string
		q    func(Filter) ([]Event, error)
	}{
		{"QueryJSONL", func(f Filter) ([]Event, error) { return QueryJSONL(path, f) }},
		{"SQLite Query", func(f Filter) ([]Event, error) { return ls.Query(ctx, f) }},
		{"SQLite QuerySQL", func(f Filter) ([]Event, error) { return QuerySQL(ctx, lite, SQLite, f) }},
		{"PG Query", func(f Filter) ([]Event, error) { return ps.Query(ctx, f) }},
		{"PG QuerySQL", func(f Filter) ([]Event, error) { return QuerySQL(ctx, pdb, Postgres, f) }},
	}
	tpick := func() time.Time {
		if rng.IntN(3) == 0 {
			return time.Time{}
		}
		return times[rng.IntN(len(times))].In(zones[rng.IntN(len(zones))]).Add(time.Duration(rng.IntN(3) - 1))
	}
	fails := 0
	nf := 120
	if s := os.Getenv("REVIEW64O_FILTERS"); s != "" {
		fmt.Sscan(s, &nf)
	}
	for n := range nf {
		var f Filter
		if rng.IntN(4) == 0 {
			f.SessionID = strs[rng.IntN(len(strs))]
		}
		if rng.IntN(4) == 0 {
			f.Subject = strs[rng.IntN(len(strs))]
		}
		if rng.IntN(4) == 0 {
			f.Tool = strs[rng.IntN(len(strs))]
		}
		if rng.IntN(5) == 0 {
			f.CorrelationID = evs[rng.IntN(len(evs))].CorrelationID
		}
		if rng.IntN(5) == 0 {
			f.RequestID = small("r1", "R1", "r1\x00", "r1\uFFFD")
		}
		if rng.IntN(5) == 0 {
			f.ParentID = small("c10", "p\xff", "p\uFFFD", strings.Repeat("😀", 300)+"x", strings.Repeat("😀", 300))
		}
		if rng.IntN(4) == 0 {
			f.Phase = []Phase{PhaseIntent, PhaseOutcome, "INTENT"}[rng.IntN(3)]
		}
		if rng.IntN(4) == 0 {
			f.Code = small("FORBIDDEN", "forbidden", "X\x00", "X\uFFFD", "X\xff")
		}
		if rng.IntN(4) == 0 {
			b := rng.IntN(2) == 0
			f.Allowed = &b
		}
		f.Since, f.Until = tpick(), tpick()
		if rng.IntN(2) == 0 {
			f.Limit = rng.IntN(6) - 1
		}
		if rng.IntN(3) == 0 {
			f.Offset = rng.IntN(4)
		}
		if rng.IntN(10) == 0 {
			f.Limit = []int{math.MaxInt, math.MaxInt - 1, math.MinInt, math.MaxInt >> 23}[rng.IntN(4)]
		}
		if rng.IntN(10) == 0 {
			f.Offset = []int{math.MaxInt, math.MaxInt - 1, math.MaxInt >> 23, math.MaxInt >> 1}[rng.IntN(4)]
		}
		var want []string
		for _, e := range sorted {
			if f.Match(&e) {
				want = append(want, review64oNorm(&e, true))
			}
		}
		if f.Offset < len(want) {
			want = want[f.Offset:]
		} else {
			want = nil
		}
		if f.Limit > 0 && len(want) > f.Limit {
			want = want[:f.Limit]
		}
		for _, r := range readers {
			if f.Limit > 0 && f.Limit < 6 && f.Offset == 0 && rng.IntN(2) == 0 {
				// Export page by page: every match once, in order.
				var all []string
				for _, e := range sorted {
					if f.Match(&e) {
						all = append(all, review64oNorm(&e, true))
					}
				}
				var got []string
				g := f
				for range 1000 {
					page, err := r.q(g)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range page {
						got = append(got, review64oNorm(&e, false))
					}
					if g = g.Next(page); len(page) < g.Limit {
						break
					}
				}
				if !slices.Equal(got, all) {
					t.Errorf("%d %s export %+v: got %d want %d", n, r.name, f, len(got), len(all))
					fails++
				}
			}
			page, err := r.q(f)
			if err != nil {
				t.Errorf("%d %s: %v", n, r.name, err)
				fails++
				continue
			}
			var got []string
			for _, e := range page {
				got = append(got, review64oNorm(&e, false))
			}
			if !slices.Equal(got, want) {
				fails++
				t.Errorf("%d %s %+v: got %d want %d", n, r.name, f, len(got), len(want))
				for i := range max(len(got), len(want)) {
					var g, w string
					if i < len(got) {
						g = got[i]
					}
					if i < len(want) {
						w = want[i]
					}
					if g != w {
						gf, wf := strings.Split(g, " "), strings.Split(w, " ")
						for k := range min(len(gf), len(wf)) {
							if gf[k] != wf[k] {
								t.Logf("  [%d] field %d\n got %.300q\nwant %.300q", i, k, gf[k], wf[k])
								break
							}
						}
						if len(gf) != len(wf) {
							t.Logf("  [%d]\n got %.300q\nwant %.300q", i, g, w)
						}
						break
					}
				}
			}
			if fails > 8 {
				t.FailNow()
			}
		}
	}
}

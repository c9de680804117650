package pgtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// r28Stored is s as every sink records one of an event's own text fields:
// invalid UTF-8 and NUL as U+FFFD (nul false: as it records a role or a
// string in Args, JSON in which NUL is escaped).
func r28Stored(s string, nul bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || nul && r == 0 {
			b.WriteString("\ufffd")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// r28ReadBack is e as every sink documents it reads back.
func r28ReadBack(e audit.Event, args json.RawMessage) audit.Event {
	for _, f := range []*string{&e.CorrelationID, &e.RequestID, &e.SessionID, &e.Subject, &e.Tool, &e.Class,
		&e.Code, &e.Detail, &e.ArgsSHA256, &e.ProtocolVersion, &e.ClientName} {
		*f = r28Stored(*f, true)
	}
	if e.ArgsSHA256 == "" && len(args) > 0 {
		e.ArgsSHA256 = audit.ArgsSHA256(args)
	}
	var roles []string
	for _, r := range e.Roles {
		roles = append(roles, r28Stored(r, false))
	}
	e.Roles = roles
	if e.Args != nil {
		m := map[string]any{}
		for k, v := range e.Args {
			if s, ok := v.(string); ok {
				v = r28Stored(s, false)
			}
			m[r28Stored(k, false)] = v
		}
		e.Args = m
	}
	return e
}

// r28Events are events with every field at its extremes that each sink
// (SQL: years 1678 to 2261) takes.
func r28Events() []audit.Event {
	base := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	mb := strings.Repeat("0123456789abcdef\u2028\x00\xff\"\\<>&\n", 1<<20/32)
	zones := []*time.Location{time.UTC, time.FixedZone("", -12*3600), time.FixedZone("", 14*3600),
		time.FixedZone("LMT", 3600+61), time.FixedZone("", -(9*3600 + 30*60))}
	var evs []audit.Event
	add := func(e audit.Event) {
		e.CorrelationID = fmt.Sprintf("r28-%03d%s", len(evs), e.CorrelationID)
		evs = append(evs, e)
	}
	texts := []string{"", "a", "\x00", "a\x00b", "\xff\xfe", "\xed\xa0\x80", "\u2028\u2029", "🎉👩‍👩‍👧", "%", "_", "a%_\\",
		`"quoted", 'single'`, "<script>&amp;", "\t\r\n", "\ufffd", strings.Repeat("x", 3000), "ÉCOLE", "école"}
	for i, s := range texts {
		add(audit.Event{
			Time: base.Add(time.Duration(i) * time.Second).In(zones[i%len(zones)]), SessionID: s, Subject: s,
			Tool: s, Class: s, Code: s, Detail: s, ArgsSHA256: s, ProtocolVersion: s, ClientName: s, RequestID: s,
			CorrelationID: s, Phase: audit.PhaseOutcome, Allowed: i%2 == 0, DryRun: i%3 == 0,
			Roles: []string{s, s + ",x", ""},
		})
	}
	for i, r := range [][]string{nil, {}, {""}, {"", ""}, {"a,b", `"c"`, "[d]"}, {"\x00"}, {"\xff"}, {"null"}, {`"],["x`}} {
		add(audit.Event{Time: base.Add(time.Minute + time.Duration(i)*time.Second), Phase: audit.PhaseIntent, Allowed: true, Roles: r})
	}
	for i, f := range []float64{0, math.Copysign(0, -1), -1, -1e300, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
		1e21, 1e-7, 0.1 + 0.2, 123456789.125, 9007199254740993} {
		add(audit.Event{Time: base.Add(2*time.Minute + time.Duration(i)*time.Second), Phase: audit.PhaseOutcome, LatencyMS: f, Cost: f})
	}
	times := []time.Time{
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Unix(-1, 1).In(time.FixedZone("", 5*3600+45*60)),
		time.Unix(0, 0).UTC(),
		time.Unix(0, 0).In(time.FixedZone("LMT", -(7*3600 + 13))),
		base.Add(123_456_789 * time.Nanosecond),
		base.Add(1).In(time.FixedZone("", 14*3600)),
		base.Add(1).In(time.FixedZone("", -12*3600)), // the same instant, another zone
		time.Date(2261, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2262, 1, 1, 0, 59, 59, 0, time.FixedZone("", 3600)), // 2261 in UTC
	}
	for _, tm := range times {
		add(audit.Event{Time: tm, Phase: audit.PhaseOutcome, Detail: "time " + tm.String()})
	}
	for i := range 4 {
		add(audit.Event{Time: base.Add(3 * time.Minute), Phase: []audit.Phase{audit.PhaseIntent, audit.PhaseOutcome}[i%2],
			Allowed: i&1 == 0, DryRun: i&2 == 0, SessionID: "tie", Subject: "tie", Tool: "tie"})
	}
	add(audit.Event{Time: base.Add(4 * time.Minute), Phase: audit.PhaseOutcome, Detail: mb, Roles: []string{mb[:1000]}})
	add(audit.Event{Time: base.Add(5 * time.Minute), Phase: audit.PhaseOutcome, Args: map[string]any{
		"s": "\x00\xff\u2028", "\x00k": true, "n": nil, "f": 1.5, "big": json.Number("12345678901234567"), "l": []any{"a", 2.0},
	}})
	return evs
}

// TestReview28SinkParity writes awkward events (every field at its
// extremes) to the JSONL sink, SQLite and PostgreSQL by Write,
// WriteDurable and Keep, reads them back with every reader (ReadJSONL,
// QueryJSONL, SQLSink.Query, QuerySQL) and compares them field by field,
// and checks that every reader orders them alike.
func TestReview28SinkParity(t *testing.T) {
	ctx := context.Background()
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	for _, how := range []string{"write", "durable", "keep"} {
		t.Run(how, func(t *testing.T) {
			pgDB := srv.db(t)
			pgS, err := audit.NewSQL(ctx, pgDB, audit.Postgres, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer pgS.Close()
			dir := t.TempDir()
			ldb, err := audit.OpenSQLite(filepath.Join(dir, "a.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer ldb.Close()
			liteS, err := audit.NewSQL(ctx, ldb, audit.SQLite, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer liteS.Close()
			path := filepath.Join(dir, "a.jsonl")
			j, err := audit.OpenJSONL(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			evs := r28Events()
			var want []audit.Event
			for i := range evs {
				var args json.RawMessage
				if how == "keep" && i%2 == 0 {
					args = json.RawMessage(fmt.Sprintf(`{"i":%d,"z":"\u0000","a":1}`, i))
				}
				want = append(want, r28ReadBack(evs[i], args))
				for _, s := range []audit.Sink{j, liteS, pgS} {
					e := evs[i] // each sink its own copy: Keep takes e over
					switch how {
					case "write":
						err = s.Write(ctx, &e)
					case "durable":
						err = audit.WriteDurable(ctx, s, &e)
					case "keep":
						err = s.(audit.Keeper).Keep(ctx, &e, args)
					}
					if err != nil {
						t.Fatalf("%T %s of %s: %v", s, how, evs[i].CorrelationID[:7], err)
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
			// In time order, ties in the order written.
			slices.SortStableFunc(want, func(a, b audit.Event) int { return a.Time.Compare(b.Time) })
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var streamed []audit.Event
			for e, err := range audit.ReadJSONL(f) {
				if err != nil {
					t.Fatalf("ReadJSONL: %v", err)
				}
				streamed = append(streamed, e)
			}
			slices.SortStableFunc(streamed, func(a, b audit.Event) int { return a.Time.Compare(b.Time) })
			readers := []struct {
				name string
				read func() ([]audit.Event, error)
			}{
				{"ReadJSONL", func() ([]audit.Event, error) { return streamed, nil }},
				{"QueryJSONL", func() ([]audit.Event, error) {
					evs, err := audit.QueryJSONL(path, audit.Filter{})
					slices.SortStableFunc(evs, func(a, b audit.Event) int { return a.Time.Compare(b.Time) })
					return evs, err
				}},
				{"postgres Query", func() ([]audit.Event, error) { return pgS.Query(ctx, audit.Filter{}) }},
				{"postgres QuerySQL", func() ([]audit.Event, error) { return audit.QuerySQL(ctx, pgDB, audit.Postgres, audit.Filter{}) }},
				{"sqlite Query", func() ([]audit.Event, error) { return liteS.Query(ctx, audit.Filter{}) }},
				{"sqlite QuerySQL", func() ([]audit.Event, error) { return audit.QuerySQL(ctx, ldb, audit.SQLite, audit.Filter{}) }},
			}
			for _, r := range readers {
				got, err := r.read()
				if err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				if len(got) != len(want) {
					t.Errorf("%s: %d events, want %d", r.name, len(got), len(want))
					continue
				}
				bad := 0
				for i := range want {
					if diff := cmp.Diff(want[i], got[i]); diff != "" {
						if bad++; bad <= 3 {
							if len(diff) > 2000 {
								diff = diff[:2000] + "..."
							}
							t.Errorf("%s: event %d (%.7s) read back differently (-want +got):\n%s", r.name, i, want[i].CorrelationID, diff)
						}
					}
				}
			}
			if how != "write" {
				return
			}
			// Every filter selects the same events, in the same order, from
			// every reader.
			var fs []audit.Filter
			for _, e := range evs {
				fs = append(fs, audit.Filter{SessionID: e.SessionID}, audit.Filter{Subject: e.Subject},
					audit.Filter{Tool: e.Tool}, audit.Filter{CorrelationID: e.CorrelationID},
					audit.Filter{RequestID: e.RequestID, Limit: 2}, audit.Filter{Code: e.Code, Phase: e.Phase})
				for _, d := range []time.Duration{-1, 0, 1} {
					at := e.Time.Add(d).In(time.FixedZone("", 13*3600))
					fs = append(fs, audit.Filter{Since: at, Limit: 3}, audit.Filter{Until: at},
						audit.Filter{Since: at, Until: at.Add(time.Nanosecond)})
				}
			}
			seen := map[string]bool{}
			for _, f := range fs {
				if k := fmt.Sprintf("%+v", f); seen[k] {
					continue
				} else {
					seen[k] = true
				}
				// What QueryJSONL selects (through Filter.Match, over the
				// records ReadJSONL read), in time order: the file is not.
				var want []audit.Event
				for _, e := range streamed {
					if f.Match(&e) && (f.Limit <= 0 || len(want) < f.Limit) {
						want = append(want, e)
					}
				}
				for name, q := range map[string]func(context.Context, audit.Filter) ([]audit.Event, error){
					"postgres Query": pgS.Query, "sqlite Query": liteS.Query,
					"postgres QuerySQL": func(ctx context.Context, f audit.Filter) ([]audit.Event, error) {
						return audit.QuerySQL(ctx, pgDB, audit.Postgres, f)
					},
					"sqlite QuerySQL": func(ctx context.Context, f audit.Filter) ([]audit.Event, error) {
						return audit.QuerySQL(ctx, ldb, audit.SQLite, f)
					},
				} {
					got, err := q(ctx, f)
					if err != nil {
						t.Fatalf("%s(%+v): %v", name, f, err)
					}
					var a, b []string
					for _, e := range want {
						a = append(a, e.CorrelationID)
					}
					for _, e := range got {
						b = append(b, e.CorrelationID)
					}
					if diff := cmp.Diff(a, b); diff != "" {
						t.Errorf("%s(%.200v) selects other events than QueryJSONL (-jsonl +sql):\n%.2000s", name, f, diff)
					}
				}
			}
		})
	}
}

// TestReview28Refused: an event a sink cannot store is refused with
// ErrInvalidEvent, by every sink alike where the docs say so.
func TestReview28Refused(t *testing.T) {
	ctx := context.Background()
	var srv server
	pgS, err := audit.NewSQL(ctx, srv.db(t), audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pgS.Close()
	dir := t.TempDir()
	ldb, err := audit.OpenSQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ldb.Close()
	liteS, err := audit.NewSQL(ctx, ldb, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer liteS.Close()
	j, err := audit.OpenJSONL(filepath.Join(dir, "a.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	base := audit.Event{CorrelationID: "c", Phase: audit.PhaseOutcome, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, tt := range []struct {
		name string
		mod  func(e *audit.Event)
	}{
		{"zero time", func(e *audit.Event) { e.Time = time.Time{} }},
		{"zero time in a zone", func(e *audit.Event) { e.Time = time.Time{}.In(time.FixedZone("", 3600)) }},
		{"no correlation", func(e *audit.Event) { e.CorrelationID = "" }},
		{"no phase", func(e *audit.Event) { e.Phase = "" }},
		{"bad phase", func(e *audit.Event) { e.Phase = "Outcome" }},
		{"NaN latency", func(e *audit.Event) { e.LatencyMS = math.NaN() }},
		{"Inf cost", func(e *audit.Event) { e.Cost = math.Inf(-1) }},
	} {
		for name, s := range map[string]audit.Sink{"jsonl": j, "sqlite": liteS, "postgres": pgS} {
			e := base
			tt.mod(&e)
			if err := s.Write(ctx, &e); !errors.Is(err, audit.ErrInvalidEvent) {
				t.Errorf("%s: Write(%s) = %v, want ErrInvalidEvent", name, tt.name, err)
			}
		}
	}
	// The times the sinks store differ, as ErrInvalidEvent says: a SQL
	// sink stores years 1678-2261 in UTC, the JSONL sink years 0-9999 in
	// the time's own location, with an offset under a day.
	for _, tt := range []struct {
		t          time.Time
		jsonl, sql bool // stored
	}{
		{time.Date(1677, 12, 31, 23, 59, 59, 999_999_999, time.UTC), true, false},
		{time.Date(1678, 1, 1, 0, 30, 0, 0, time.FixedZone("", 3600)), true, false},
		{time.Date(2261, 12, 31, 23, 30, 0, 0, time.FixedZone("", -3600)), true, false},
		{time.Date(2262, 1, 1, 0, 30, 0, 0, time.FixedZone("", 3600)), true, true},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), true, false},
		{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), true, false},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)), false, true},
	} {
		for name, s := range map[string]audit.Sink{"jsonl": j, "sqlite": liteS, "postgres": pgS} {
			e := base
			e.Time = tt.t
			err := s.Write(ctx, &e)
			if stored := name == "jsonl" && tt.jsonl || name != "jsonl" && tt.sql; stored && err != nil || !stored && !errors.Is(err, audit.ErrInvalidEvent) {
				t.Errorf("%s: Write at %v = %v, want it stored: %v", name, tt.t, err, stored)
			}
		}
	}
}

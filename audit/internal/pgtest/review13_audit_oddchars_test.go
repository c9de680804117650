package pgtest

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpguard/mcpguard/audit"
)

// oddEvents are events whose strings hold every character a client can put
// in a name, an id or a detail: NUL and other controls, U+2028/U+2029,
// invalid UTF-8 (a Go string may hold any bytes: lone surrogates encoded
// as CESU, stray continuation bytes), characters outside the BMP, and
// very long values.
func oddEvents() []audit.Event {
	base := time.Date(2026, 7, 28, 1, 2, 3, 456789000, time.UTC)
	odd := "nul\x00 tab\t nl\n cr\r \x01\x1f\x7f \u2028\u2029 <>&\"\\ é 日本 🎉 \ufeff \ufffd"
	bad := "lone surrogate \xed\xa0\x80 stray \x80 truncated \xe6\x97 overlong \xc0\xaf end \xff"
	var evs []audit.Event
	add := func(id string, f func(e *audit.Event)) {
		e := audit.Event{Time: base.Add(time.Duration(len(evs)) * time.Millisecond), CorrelationID: id,
			Phase: audit.PhaseOutcome, SessionID: "s", Subject: "u", Tool: "t", Class: "read"}
		f(&e)
		evs = append(evs, e)
	}
	add("odd_detail", func(e *audit.Event) { e.Detail = odd })
	add("odd_names", func(e *audit.Event) {
		e.SessionID, e.Subject, e.Tool, e.ClientName, e.ProtocolVersion, e.Code = odd, odd, odd, odd, odd, odd
	})
	add("odd_roles", func(e *audit.Event) { e.Roles = []string{odd, "", "\x00"} })
	add("odd_args", func(e *audit.Event) {
		e.Args = map[string]any{odd: odd, "nested": map[string]any{"\x00": []any{odd, 1.5, nil, true}}}
	})
	add("invalid_utf8", func(e *audit.Event) {
		e.Detail, e.Subject, e.Tool, e.Roles = bad, bad, bad, []string{bad}
		e.Args = map[string]any{bad: bad}
	})
	add("long", func(e *audit.Event) {
		e.Detail = strings.Repeat("ü\u2028x", 300_000) // 1.8 MB
		e.Tool = strings.Repeat("t", 5000)
	})
	add("numbers", func(e *audit.Event) { e.LatencyMS, e.Cost = math.SmallestNonzeroFloat64, math.MaxFloat64 })
	return evs
}

// TestOddCharactersSameInEverySink: the same events written to JSONL,
// SQLite and PostgreSQL read back equal in all three (one schema): a
// reader of the trail finds the same subject, tool and detail whichever
// sink recorded them.
func TestOddCharactersSameInEverySink(t *testing.T) {
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
	evs := oddEvents()
	for i := range evs {
		for name, s := range map[string]audit.Sink{"postgres": pgS, "sqlite": liteS, "jsonl": j} {
			e := evs[i]
			write := s.Write
			if i%2 == 0 {
				write = func(ctx context.Context, e *audit.Event) error { return audit.WriteDurable(ctx, s, e) }
			}
			if err := write(ctx, &e); err != nil {
				t.Fatalf("%s: write %s: %v", name, e.CorrelationID, err)
			}
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	read := map[string]func() ([]audit.Event, error){
		"postgres": func() ([]audit.Event, error) {
			if err := pgS.Flush(ctx); err != nil {
				return nil, err
			}
			return pgS.Query(ctx, audit.Filter{})
		},
		"sqlite": func() ([]audit.Event, error) {
			if err := liteS.Flush(ctx); err != nil {
				return nil, err
			}
			return liteS.Query(ctx, audit.Filter{})
		},
		"jsonl": func() ([]audit.Event, error) {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			var out []audit.Event
			for e, err := range audit.ReadJSONL(f) {
				if err != nil {
					return out, err
				}
				out = append(out, e)
			}
			return out, nil
		},
	}
	got := map[string][]audit.Event{}
	for name, r := range read {
		evs, err := r()
		if err != nil {
			t.Fatalf("%s: read back: %v", name, err)
		}
		got[name] = evs
	}
	for _, name := range []string{"sqlite", "postgres"} {
		if diff := cmp.Diff(got["jsonl"], got[name]); diff != "" {
			t.Errorf("jsonl and %s read back different events (-jsonl +%s):\n%s", name, name, shorten(diff))
		}
	}
	// Each sink finds each event by the values it was written with.
	for _, e := range evs {
		for name, q := range map[string]func(audit.Filter) ([]audit.Event, error){
			"postgres": func(f audit.Filter) ([]audit.Event, error) { return pgS.Query(ctx, f) },
			"sqlite":   func(f audit.Filter) ([]audit.Event, error) { return liteS.Query(ctx, f) },
			"jsonl":    func(f audit.Filter) ([]audit.Event, error) { return audit.QueryJSONL(path, f) },
		} {
			res, err := q(audit.Filter{CorrelationID: e.CorrelationID, Subject: e.Subject, Tool: e.Tool, SessionID: e.SessionID})
			if err != nil || len(res) != 1 {
				t.Errorf("%s: Query by the fields of %s: %d events, %v; want 1", name, e.CorrelationID, len(res), err)
			}
		}
	}
}

// shorten keeps a diff of very long strings readable.
func shorten(s string) string {
	if len(s) > 4000 {
		return s[:4000] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

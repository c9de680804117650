package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// rtPieces are what an attacker puts in the fields: line breaks (a second
// record after one), separators JavaScript takes for line ends, NUL,
// invalid UTF-8, a lone surrogate encoded in UTF-8, characters escaped for
// HTML, a forged record.
var rtPieces = []string{"", "a", "Z9", "\n", "\r\n", "\r", "\u2028", "\u2029", "\x00", "\xff", "\xed\xa0\x80",
	"\xc3", "\ufffd", "<script>&", `"`, `\`, "é", "日本", "🎉", "\t", "\x1f", "\x7f", " ",
	"\"}\n{\"time\":\"2026-01-01T00:00:00Z\",\"correlation_id\":\"forged\",\"phase\":\"outcome\",\"allowed\":true}\n"}

// rtNumbers are numbers a client sends and a tool records (json.Number, as
// the guard decodes arguments): integers past 2^53 (an account id),
// decimals with more digits than a float64 holds, beyond its range.
var rtNumbers = []string{"0", "-0", "1", "1.50", "1E+2", "0.1", "12345678901234567", "9007199254740993",
	"123456789012345678901234567890", "1e400", "-1e400", "1e-400", "4611686018427387904",
	"3.141592653589793238462643383279", "5e-324", "1.7976931348623157e308", "0.30000000000000004", "100000000000000000000000"}

// rtSecret is in arguments handed over with Keep: no sink may record it.
const rtSecret = "4111-1111-SECRET"

type rtGen struct{ r *rand.Rand }

func (g rtGen) str() string {
	var b strings.Builder
	for range g.r.IntN(5) {
		b.WriteString(rtPieces[g.r.IntN(len(rtPieces))])
	}
	return b.String()
}

func (g rtGen) float() float64 {
	switch g.r.IntN(5) {
	case 0:
		return 0
	case 1:
		return float64(g.r.IntN(100000)) / 8
	case 2:
		return g.r.NormFloat64() * 1e6
	case 3:
		return []float64{1e-7, 1e21, 5e-324, 1.7976931348623157e308, 123456789.125}[g.r.IntN(5)]
	}
	return g.r.Float64()
}

func (g rtGen) value(depth int) any {
	switch n := g.r.IntN(8); {
	case n == 0:
		return g.str()
	case n == 1:
		return g.r.IntN(2) == 0
	case n == 2:
		return nil
	case n == 3 || n == 4:
		return json.Number(rtNumbers[g.r.IntN(len(rtNumbers))])
	case n == 5:
		return g.float()
	case n == 6 && depth < 3:
		l := make([]any, g.r.IntN(3))
		for i := range l {
			l[i] = g.value(depth + 1)
		}
		return l
	case depth < 3:
		m := map[string]any{}
		for range g.r.IntN(3) {
			m[g.key()] = g.value(depth + 1)
		}
		return m
	}
	return g.str()
}

// key returns a key of Args: the guard's are field names it was
// configured with, valid UTF-8.
func (g rtGen) key() string {
	return []string{"amount", "customer_id", "note", "é", "k\u2028", "<a>", "x y", ""}[g.r.IntN(8)]
}

func (g rtGen) event(i int) (e *audit.Event, args json.RawMessage) {
	zone := time.FixedZone("", (g.r.IntN(28*60)-14*60)*60)
	e = &audit.Event{
		Time:          time.Unix(g.r.Int64N(1<<33), g.r.Int64N(1e9)).In(zone),
		CorrelationID: fmt.Sprintf("c%04d", i) + g.str(),
		RequestID:     g.str(), SessionID: g.str(), Subject: g.str(), Tool: g.str(), Class: g.str(),
		Phase:   []audit.Phase{audit.PhaseIntent, audit.PhaseOutcome}[g.r.IntN(2)],
		Allowed: g.r.IntN(2) == 0, DryRun: g.r.IntN(2) == 0, Code: g.str(), Detail: g.str(),
		LatencyMS: g.float(), ArgsSHA256: g.str(), Cost: g.float(), ProtocolVersion: g.str(), ClientName: g.str(),
	}
	for range g.r.IntN(3) {
		e.Roles = append(e.Roles, g.str())
	}
	switch g.r.IntN(3) {
	case 0:
		e.Args = map[string]any{}
		for range 1 + g.r.IntN(4) {
			e.Args[g.key()] = g.value(0)
		}
	case 1:
		// Arguments no field of which was opted in: only their hash
		// may be recorded.
		args = json.RawMessage(fmt.Sprintf(`{"n":%d,"s":%q,"card":"%s"}`, i, g.str(), rtSecret))
	}
	if i%50 == 7 {
		// A field of a megabyte full of line breaks and forged records.
		e.Detail = strings.Repeat(rtPieces[len(rtPieces)-1]+"\u2028\x00\xff", 1<<20/96)
	}
	return e, args
}

// replaced is s as the sinks record it: each byte of invalid UTF-8 (and
// with nul each NUL, which PostgreSQL refuses in text) as U+FFFD.
func replaced(s string, nul bool) string {
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

// readNumber is what a recorded number reads back as: a float64 when the
// float64 is the number as written (its shortest decimal has the same
// value), else the json.Number itself, so that what is read back is what
// was recorded (an account id past 2^53 is not rounded to another one).
func readNumber(n string) any {
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return json.Number(n)
	}
	a, _ := new(big.Rat).SetString(n)
	b, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if a.Cmp(b) != 0 {
		return json.Number(n)
	}
	return f
}

func readValue(v any) any {
	switch v := v.(type) {
	case string:
		return replaced(v, false)
	case json.Number:
		return readNumber(string(v))
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = readValue(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[replaced(k, false)] = readValue(x)
		}
		return out
	}
	return v
}

// readBack is e as every sink reads it back.
func readBack(e audit.Event, args json.RawMessage) audit.Event {
	for _, f := range []*string{&e.CorrelationID, &e.RequestID, &e.SessionID, &e.Subject, &e.Tool, &e.Class,
		&e.Code, &e.Detail, &e.ArgsSHA256, &e.ProtocolVersion, &e.ClientName} {
		*f = replaced(*f, true)
	}
	if e.ArgsSHA256 == "" && len(args) > 0 {
		e.ArgsSHA256 = audit.ArgsSHA256(args)
	}
	roles := e.Roles
	e.Roles = nil
	for _, r := range roles {
		e.Roles = append(e.Roles, replaced(r, false))
	}
	if e.Args != nil {
		e.Args = readValue(e.Args).(map[string]any)
	}
	return e
}

// rtWrite writes n random events to s (by Keep when it is a Keeper and
// the event has arguments to hash), and returns them as they read back.
func rtWrite(t *testing.T, s audit.Sink, seed uint64, n int) []audit.Event {
	t.Helper()
	g := rtGen{rand.New(rand.NewPCG(seed, 17))}
	ctx := context.Background()
	var want []audit.Event
	for i := range n {
		e, args := g.event(i)
		w := readBack(*e, args)
		var err error
		if k, ok := s.(audit.Keeper); ok && args != nil {
			err = k.Keep(ctx, e, args)
		} else {
			if args != nil {
				e.ArgsSHA256 = audit.ArgsSHA256(args)
			}
			err = s.Write(ctx, e)
		}
		if err != nil {
			t.Fatalf("write of event %d: %v", i, err)
		}
		want = append(want, w)
	}
	return want
}

func rtCompare(t *testing.T, name string, want, got []audit.Event) {
	t.Helper()
	byID := func(a, b audit.Event) int { return strings.Compare(a.CorrelationID, b.CorrelationID) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if len(got) != len(want) {
		t.Errorf("%s: read back %d records, wrote %d", name, len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			if bad++; bad > 3 {
				t.Errorf("%s: more differences left out", name)
				return
			}
			d := diff
			if len(d) > 4000 {
				d = d[:4000] + "..."
			}
			t.Errorf("%s: record %q read back differently (-written +read):\n%s", name, want[i].CorrelationID[:5], d)
		}
	}
}

// TestReview17RoundTrip writes random events an attacker shaped (every
// text field, the roles and the recorded arguments) and checks that each
// reads back as exactly one record, equal to what was written but for
// what the sinks document they replace: invalid UTF-8 (and NUL outside the
// JSON of roles and arguments) as U+FFFD. Numbers in the arguments read
// back as a float64 only where that float64 is the number as written: an
// integer id past 2^53 (12345678901234567) came back as another number
// (12345678901234568), from the JSONL file and from SQL.
func TestReview17RoundTrip(t *testing.T) {
	const n = 300
	t.Run("jsonl", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.jsonl")
		s, err := audit.OpenJSONL(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := rtWrite(t, s, 1, n)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := audit.QueryJSONL(path, audit.Filter{})
		if err != nil {
			t.Fatalf("QueryJSONL: %v", err)
		}
		rtCompare(t, "jsonl", want, got)
		// One line per record: nothing an attacker wrote made a line of
		// its own.
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(b, []byte("\n")); lines != n {
			t.Errorf("the file has %d lines for %d records", lines, n)
		}
		if bytes.Contains(b, []byte(rtSecret)) {
			t.Errorf("the file holds arguments no field of which was opted in")
		}
	})
	t.Run("sqlite", func(t *testing.T) {
		db := openSQLite(t)
		s := newSQLiteSink(t, db, nil)
		want := rtWrite(t, s, 2, n)
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, err := s.Query(context.Background(), audit.Filter{})
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		rtCompare(t, "sqlite", want, got)
		rtNoSecret(t, db)
	})
	t.Run("fanout", func(t *testing.T) {
		// JSONL and SQLite take the events over by Keep, the slog sink
		// by Write; its JSON lines are one per record too.
		path := filepath.Join(t.TempDir(), "a.jsonl")
		j, err := audit.OpenJSONL(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		db := openSQLite(t)
		sq := newSQLiteSink(t, db, nil)
		var logged bytes.Buffer
		f := audit.Fanout(j, sq, audit.NewSlogSink(slog.NewJSONHandler(&logged, nil), nil))
		want := rtWrite(t, f, 3, n)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := audit.QueryJSONL(path, audit.Filter{})
		if err != nil {
			t.Fatalf("QueryJSONL: %v", err)
		}
		rtCompare(t, "fanout jsonl", want, got)
		got, err = audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{})
		if err != nil {
			t.Fatalf("QuerySQL: %v", err)
		}
		rtCompare(t, "fanout sqlite", want, got)
		rtNoSecret(t, db)
		if lines := bytes.Count(logged.Bytes(), []byte("\n")); lines != n {
			t.Errorf("the slog handler wrote %d lines for %d records", lines, n)
		}
		if bytes.Contains(logged.Bytes(), []byte(rtSecret)) {
			t.Errorf("the slog handler wrote arguments no field of which was opted in")
		}
	})
}

// rtNoSecret checks that no column of audit_log holds rtSecret.
func rtNoSecret(t *testing.T, db *sql.DB) {
	t.Helper()
	rs, err := db.Query(`SELECT * FROM audit_log`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if bytes.Contains(v, []byte(rtSecret)) {
				t.Fatalf("column %s holds arguments no field of which was opted in", cols[i])
			}
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
}

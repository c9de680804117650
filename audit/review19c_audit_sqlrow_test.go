package audit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestReview19cPostgresRowTextBound: toRow refuses, on PostgreSQL, a row of
// more than maxPostgresRowText bytes of text, counted after invalid UTF-8
// and NUL bytes are replaced (each by three bytes), and takes one of
// exactly that many. SQLite is unchanged.
func TestReview19cPostgresRowTextBound(t *testing.T) {
	if testing.Short() {
		t.Skip("an event of 1 GiB")
	}
	e := &Event{Time: time.Unix(1_800_000_000, 0), CorrelationID: "c", Phase: PhaseOutcome, Tool: "t"}
	base, err := toRow(e, Postgres)
	if err != nil {
		t.Fatal(err)
	}
	room := maxPostgresRowText - base.textLen()
	detail := strings.Repeat("d", room+1)
	for _, tc := range []struct {
		name         string
		detail, code string
		d            Dialect
		ok           bool
	}{
		{"at_the_bound", detail[:room], "", Postgres, true},
		{"one_byte_over", detail, "", Postgres, false},
		{"over_by_replacement", detail[:room-2], "\x00", Postgres, false}, // U+FFFD: three bytes
		{"over_on_sqlite", detail, "", SQLite, true},
	} {
		e.Detail, e.Code = tc.detail, tc.code
		r, err := toRow(e, tc.d)
		if ok := err == nil; ok != tc.ok || (!ok && !errors.Is(err, ErrInvalidEvent)) {
			t.Errorf("%s: toRow(event of %d bytes of text) = %v, want ok %v (or ErrInvalidEvent)", tc.name, r.textLen(), err, tc.ok)
		}
	}
}

package audit_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview64gQuerySQLNilDB: NewSQL refuses a nil *sql.DB ("audit: nil
// *sql.DB"), but QuerySQL, its sink-less twin, panicked on one (a
// dereference in database/sql). It must return an error.
func TestReview64gQuerySQLNilDB(t *testing.T) {
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("QuerySQL with a nil *sql.DB panicked: %v", v)
		}
	}()
	if _, err := audit.QuerySQL(context.Background(), nil, audit.SQLite, audit.Filter{}); err == nil {
		t.Error("QuerySQL with a nil *sql.DB: no error")
	}
}

// TestReview64gNilSinks: a zero JSONLSink or SQLSink answers every method
// with ErrClosed ("the zero sink was never opened"), but a nil *JSONLSink
// or *SQLSink (the variable of an OpenJSONL or NewSQL that failed, given
// to Options.Audit or closed in a defer) panicked in each. Write and Close
// must return an error wrapping ErrClosed.
func TestReview64gNilSinks(t *testing.T) {
	ctx := context.Background()
	e := &audit.Event{CorrelationID: "c", Phase: audit.PhaseOutcome, Tool: "t", Subject: "u"}
	for name, s := range map[string]interface {
		audit.Sink
		Close() error
	}{
		"*JSONLSink": (*audit.JSONLSink)(nil),
		"*SQLSink":   (*audit.SQLSink)(nil),
	} {
		for op, f := range map[string]func() error{
			"Write": func() error { return s.Write(ctx, e) },
			"Close": s.Close,
		} {
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Errorf("%s of a nil %s panicked: %v", op, name, v)
					}
				}()
				if err := f(); err == nil {
					t.Errorf("%s of a nil %s: no error", op, name)
				}
			}()
		}
	}
}

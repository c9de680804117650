package audit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/audit/audittest"
)

// plainSink hides the Keeper of the sink it wraps: the fanout must Write
// to it.
type plainSink struct{ audit.Sink }

// fanoutHarness is a fanout of two sinks whose events must agree.
func fanoutHarness(second func(audit.Sink) audit.Sink) func(t *testing.T) audittest.Harness {
	return func(t *testing.T) audittest.Harness {
		first := jsonlHarness(nil)(t)
		other := sqlHarness(func(t *testing.T) *sql.DB { return openSQLite(t) }, audit.SQLite)(t)
		f := audit.Fanout(first.Sink, nil, second(other.Sink))
		return audittest.Harness{Sink: f, Read: func(ctx context.Context) ([]audit.Event, error) {
			a, err := first.Read(ctx)
			if err != nil {
				return nil, err
			}
			b, err := other.Read(ctx)
			if err != nil {
				return nil, err
			}
			sortEvents(a)
			sortEvents(b)
			if diff := gocmp.Diff(a, b); diff != "" {
				return nil, errors.New("fanout sinks differ: " + diff)
			}
			return a, nil
		}}
	}
}

// TestFanoutKeeper runs the Keeper conformance tests on a fanout of two
// Keepers (each takes its own copy, and each hashes the arguments) and on a
// fanout of a Keeper and a plain sink (the fanout hashes once for both).
func TestFanoutKeeper(t *testing.T) {
	t.Run("keepers", func(t *testing.T) {
		audittest.RunKeeper(t, fanoutHarness(func(s audit.Sink) audit.Sink { return s }))
	})
	t.Run("keeper_and_plain", func(t *testing.T) {
		audittest.RunKeeper(t, fanoutHarness(func(s audit.Sink) audit.Sink { return plainSink{s} }))
	})
}

// recordingKeeper records what Keep was handed.
type recordingKeeper struct {
	audit.Sink
	events []*audit.Event
	args   []json.RawMessage
}

func (k *recordingKeeper) Keep(_ context.Context, e *audit.Event, args json.RawMessage) error {
	k.events = append(k.events, e)
	k.args = append(k.args, args)
	return nil
}

// TestFanoutKeepHandsOver checks what each sink of a fanout gets from Keep:
// each Keeper its own event (the last the caller's), the hash left to the
// Keepers when all sinks are Keepers, and computed before a plain sink's
// Write otherwise.
func TestFanoutKeepHandsOver(t *testing.T) {
	args := json.RawMessage(`{"b":1,"a":2}`)
	a, b := &recordingKeeper{}, &recordingKeeper{}
	e := &audit.Event{CorrelationID: "c1", Tool: "t"}
	if err := audit.Fanout(a, b).Keep(context.Background(), e, args); err != nil {
		t.Fatal(err)
	}
	if len(a.events) != 1 || len(b.events) != 1 || a.events[0] == b.events[0] || b.events[0] != e {
		t.Fatalf("keepers got %p and %p for %p: want a copy, then the event itself", a.events, b.events, e)
	}
	if a.events[0].ArgsSHA256 != "" || e.ArgsSHA256 != "" || string(a.args[0]) != string(args) {
		t.Errorf("all Keepers: hash %q %q, args %s; want the hash left to them with the arguments", a.events[0].ArgsSHA256, e.ArgsSHA256, a.args[0])
	}

	var written []audit.Event
	plain := sinkFunc(func(_ context.Context, e *audit.Event) error { written = append(written, *e); return nil })
	k := &recordingKeeper{}
	e = &audit.Event{CorrelationID: "c2", Tool: "t"}
	if err := audit.Fanout(k, plain).Keep(context.Background(), e, args); err != nil {
		t.Fatal(err)
	}
	want := audit.ArgsSHA256(args)
	if len(written) != 1 || written[0].ArgsSHA256 != want || len(k.events) != 1 || k.events[0].ArgsSHA256 != want {
		t.Errorf("keeper and plain sink: wrote %+v, kept %+v; want both with hash %s", written, k.events, want)
	}
}

type sinkFunc func(context.Context, *audit.Event) error

func (f sinkFunc) Write(ctx context.Context, e *audit.Event) error { return f(ctx, e) }

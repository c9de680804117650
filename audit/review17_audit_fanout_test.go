package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// failingMember is a Keeper whose every method fails with its own error,
// Close included, and that counts its Close calls; slow members wait d
// first.
type failingMember struct {
	err    error
	d      time.Duration
	closes atomic.Int32
}

func (m *failingMember) Write(context.Context, *audit.Event) error { time.Sleep(m.d); return m.err }
func (m *failingMember) Keep(context.Context, *audit.Event, json.RawMessage) error {
	time.Sleep(m.d)
	return m.err
}
func (m *failingMember) Close() error { m.closes.Add(1); return m.err }

// TestReview17FanoutFailingAndSlowMembers: a fanout whose members fail,
// one of them slowly, still records every event in the member that works,
// by Write, Keep and WriteDurable; each call returns every member's error
// (none lost in the join); Close closes every member once, returns every
// Close error, and a second Close returns ErrClosed without closing them
// again.
func TestReview17FanoutFailingAndSlowMembers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &failingMember{err: errors.New("member a down")}
	b := &failingMember{err: errors.New("member b slow and down"), d: 50 * time.Millisecond}
	plain := errors.New("plain sink down")
	f := audit.Fanout(a, j, audit.SinkFunc(func(context.Context, *audit.Event) error { return plain }), b)
	calls := map[string]func(e *audit.Event) error{
		"write":   func(e *audit.Event) error { return f.Write(ctx, e) },
		"keep":    func(e *audit.Event) error { return f.Keep(ctx, e, json.RawMessage(`{"x":1}`)) },
		"durable": func(e *audit.Event) error { return audit.WriteDurable(ctx, f, e) },
	}
	for name, call := range calls {
		err := call(event(name, 1))
		for _, want := range []error{a.err, b.err, plain} {
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want it to hold %q", name, err, want)
			}
		}
	}
	err = f.Close()
	for _, want := range []error{a.err, b.err} {
		if !errors.Is(err, want) {
			t.Errorf("Close: %v, want it to hold %q", err, want)
		}
	}
	if err := f.Close(); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if na, nb := a.closes.Load(), b.closes.Load(); na != 1 || nb != 1 {
		t.Errorf("members closed %d and %d times, want once each", na, nb)
	}
	if err := j.Write(ctx, event("late", 2)); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("the JSONL member after the fanout's Close: %v, want ErrClosed", err)
	}
	got, err := audit.QueryJSONL(path, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range got {
		ids[e.CorrelationID] = true
		if e.CorrelationID == "keep" && e.ArgsSHA256 != event("keep", 1).ArgsSHA256 {
			t.Errorf("kept event's hash %q, want its own", e.ArgsSHA256)
		}
	}
	for name := range calls {
		if !ids[name] {
			t.Errorf("the working member did not record the %s event: %v", name, ids)
		}
	}
}

package audit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestFanoutEmptyAndClosed checks that a fanout refuses what it cannot
// record: one of no sinks (Fanout(nil, nil)) refuses Write and Keep with
// ErrNoSink, as it refuses WriteDurable, where it returned nil and the
// events went nowhere; a closed one refuses every write with ErrClosed,
// even when its sinks do not close (a SinkFunc), as the conformance kit
// asks of every sink.
func TestFanoutEmptyAndClosed(t *testing.T) {
	ctx := context.Background()
	empty := audit.Fanout(nil, nil)
	if err := empty.Write(ctx, event("a", 1)); !errors.Is(err, audit.ErrNoSink) {
		t.Errorf("Write on a fanout of no sinks = %v, want ErrNoSink", err)
	}
	if err := empty.Keep(ctx, event("a", 1), nil); !errors.Is(err, audit.ErrNoSink) {
		t.Errorf("Keep on a fanout of no sinks = %v, want ErrNoSink", err)
	}
	var n int
	f := audit.Fanout(audit.SinkFunc(func(context.Context, *audit.Event) error { n++; return nil }))
	if err := f.Write(ctx, event("b", 1)); err != nil || n != 1 {
		t.Fatalf("Write = %v, %d calls", err, n)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"Write":        func() error { return f.Write(ctx, event("c", 1)) },
		"Keep":         func() error { return f.Keep(ctx, event("c", 1), nil) },
		"WriteDurable": func() error { return f.WriteDurable(ctx, event("c", 1)) },
	} {
		if err := write(); !errors.Is(err, audit.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if n != 1 {
		t.Errorf("the sink got %d events, want 1 (none after Close)", n)
	}
}

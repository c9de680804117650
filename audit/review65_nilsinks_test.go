package audit_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview65NilFanoutSlogSinks: a nil *FanoutSink, a nil *SlogSink and a
// nil SinkFunc answer every method with an error, as the 64th session made
// nil JSONL and SQL sinks do, instead of panicking in the caller's
// goroutine (the guard's outcome record, a fanout's other sinks).
func TestReview65NilFanoutSlogSinks(t *testing.T) {
	ctx := context.Background()
	e := &audit.Event{CorrelationID: "c", Phase: audit.PhaseOutcome, Tool: "t", Subject: "u"}
	var fan *audit.FanoutSink
	var sl *audit.SlogSink
	var fn audit.SinkFunc
	for name, f := range map[string]func() error{
		"FanoutSink.Write":        func() error { return fan.Write(ctx, e) },
		"FanoutSink.Keep":         func() error { return fan.Keep(ctx, e, json.RawMessage(`{}`)) },
		"FanoutSink.WriteDurable": func() error { return fan.WriteDurable(ctx, e) },
		"FanoutSink.Close":        fan.Close,
		"SlogSink.Write":          func() error { return sl.Write(ctx, e) },
		"SlogSink.Close":          sl.Close,
		"SinkFunc.Write":          func() error { return fn.Write(ctx, e) },
		// A fanout holding one of them: the failure is reported, and the
		// panic does not reach the log as a sink's bug.
		"Fanout(nil SinkFunc).Write": func() error { return audit.Fanout(fn).Write(ctx, e) },
	} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s of a nil sink panicked: %v", name, v)
				}
			}()
			if err := f(); err == nil {
				t.Errorf("%s of a nil sink: no error", name)
			}
		}()
	}
}

package audit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestZeroSinksRefuse: the zero JSONLSink and SQLSink are not usable (their
// docs say to open one), and every method says so with an error wrapping
// ErrClosed, at once: Write blocked forever on the writer's nil channel,
// and Close panicked closing it.
func TestZeroSinksRefuse(t *testing.T) {
	ev := &audit.Event{Time: time.Now(), CorrelationID: "c", Phase: audit.PhaseOutcome, Tool: "t", Allowed: true}
	ctx := context.Background()
	var j audit.JSONLSink
	var s audit.SQLSink
	ops := map[string]func() error{
		"jsonl Write":        func() error { return j.Write(ctx, ev) },
		"jsonl WriteDurable": func() error { return j.WriteDurable(ctx, ev) },
		"jsonl Keep":         func() error { return j.Keep(ctx, ev, nil) },
		"jsonl Flush":        j.Flush,
		"jsonl Sync":         j.Sync,
		"jsonl Close":        j.Close,
		"jsonl Reopen":       j.Reopen,
		"sql Write":          func() error { return s.Write(ctx, ev) },
		"sql WriteDurable":   func() error { return s.WriteDurable(ctx, ev) },
		"sql Keep":           func() error { return s.Keep(ctx, ev, nil) },
		"sql Flush":          func() error { return s.Flush(ctx) },
		"sql Query":          func() error { _, err := s.Query(ctx, audit.Filter{}); return err },
		"sql Close":          s.Close,
	}
	for name, op := range ops {
		done := make(chan error, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- fmt.Errorf("panicked: %v", p)
				}
			}()
			done <- op()
		}()
		select {
		case err := <-done:
			if !errors.Is(err, audit.ErrClosed) {
				t.Errorf("%s on a zero sink: %v, want an error wrapping ErrClosed", name, err)
			}
		case <-time.After(2 * time.Second):
			t.Errorf("%s on a zero sink: still blocked after 2 s", name)
		}
	}
}

package audit_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// r62PanicHandler is a slog.Handler whose Handle panics (its bug).
type r62PanicHandler struct{ slog.Handler }

func (r62PanicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (r62PanicHandler) Handle(context.Context, slog.Record) error {
	panic("review62: the handler's bug")
}

// TestReview62SlogBoundedHandlerPanic: a SlogSink's Write with a context
// that can end runs the handler on a goroutine of its own (so that the
// caller may leave it at its deadline); a handler that panics there must
// not end the process, which no caller's recover could prevent: it is
// the write's error, and the next write is not held by the first.
func TestReview62SlogBoundedHandlerPanic(t *testing.T) {
	s := audit.NewSlogSink(r62PanicHandler{}, nil)
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := s.Write(ctx, diskEvent("p", 10))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("write %d: %v, want the handler's panic as an error", i, err)
		}
	}
}

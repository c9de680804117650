package mcpguard

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"
)

// safeLogger returns a logger whose handler is l's, but for a panic of
// that handler (the operator's code: a custom slog.Handler's bug), which is
// contained: the record is lost, said on standard error. The guard logs on
// the call's goroutine, also in the deferred function that recovers a
// handler's panic; a log handler that panicked there ended the process
// (the go-sdk recovers none), the call without an answer or a record.
func safeLogger(l *slog.Logger) *slog.Logger {
	h := l.Handler()
	if _, ok := h.(safeHandler); ok {
		return l
	}
	return slog.New(safeHandler{h})
}

// safeHandler is a slog.Handler that contains its handler's panics (see
// safeLogger).
type safeHandler struct{ h slog.Handler }

func (s safeHandler) Enabled(ctx context.Context, level slog.Level) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			lostLog("Enabled", v, "")
			ok = false
		}
	}()
	return s.h.Enabled(ctx, level)
}

func (s safeHandler) Handle(ctx context.Context, r slog.Record) (err error) {
	defer func() {
		if v := recover(); v != nil {
			lostLog("Handle", v, r.Message)
			err = fmt.Errorf("mcpguard: the log handler panicked: %s", panicText(v))
		}
	}()
	return s.h.Handle(ctx, r)
}

func (s safeHandler) WithAttrs(attrs []slog.Attr) (h slog.Handler) {
	defer func() {
		if v := recover(); v != nil {
			lostLog("WithAttrs", v, "")
			h = s
		}
	}()
	return safeHandler{s.h.WithAttrs(attrs)}
}

func (s safeHandler) WithGroup(name string) (h slog.Handler) {
	defer func() {
		if v := recover(); v != nil {
			lostLog("WithGroup", v, "")
			h = s
		}
	}()
	return safeHandler{s.h.WithGroup(name)}
}

// lostLog says on standard error that the log handler's method panicked
// with v, and the message of the record lost, if any.
func lostLog(method string, v any, msg string) {
	fmt.Fprintf(os.Stderr, "mcpguard: the Logger's handler panicked in %s (%s); log record lost: %q\n", method, panicText(v), logText(msg))
}

// safeNow returns now, but for a panic of it (the operator's code: a test
// clock's bug), which is logged with its stack, time.Now read instead. The
// guard reads its clock before its pipeline's recover, and in it: a clock
// that panicked there ended the process (the go-sdk recovers none).
func safeNow(now func() time.Time, log *slog.Logger) func() time.Time {
	return func() (t time.Time) {
		defer func() {
			if v := recover(); v != nil {
				log.Error("mcpguard: Options.Now panicked; time.Now is read instead", "panic", panicText(v), "stack", string(debug.Stack()))
				t = time.Now()
			}
		}()
		return now()
	}
}

// Package logsafe contains the panics of an operator's slog.Handler, so
// that a log line the library writes (on a call's goroutine, in a
// deferred recover, on a reader goroutine of its own) cannot end the
// process.
package logsafe

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// maxText bounds the panic text said on standard error.
const maxText = 2048

// stderr is where a lost record is said; a variable for the tests.
var stderr io.Writer = os.Stderr

// Logger returns a logger whose handler is l's, but for a panic of that
// handler (the operator's code: a custom slog.Handler's bug), which is
// contained: the record is lost, said on standard error (its message, and
// the panic's value, quoted and cut when it is long or not plain text).
// A nil l is returned as it is; so is one Logger made.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	h := l.Handler()
	if _, ok := h.(handler); ok {
		return l
	}
	return slog.New(handler{h})
}

// handler is a slog.Handler that contains its handler's panics.
type handler struct{ h slog.Handler }

func (s handler) Enabled(ctx context.Context, level slog.Level) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			lost("Enabled", v, "")
			ok = false
		}
	}()
	return s.h.Enabled(ctx, level)
}

func (s handler) Handle(ctx context.Context, r slog.Record) (err error) {
	defer func() {
		if v := recover(); v != nil {
			lost("Handle", v, r.Message)
			err = fmt.Errorf("the log handler panicked: %s", text(v))
		}
	}()
	return s.h.Handle(ctx, r)
}

func (s handler) WithAttrs(attrs []slog.Attr) (h slog.Handler) {
	defer func() {
		if v := recover(); v != nil {
			lost("WithAttrs", v, "")
			h = s
		}
	}()
	return handler{s.h.WithAttrs(attrs)}
}

func (s handler) WithGroup(name string) (h slog.Handler) {
	defer func() {
		if v := recover(); v != nil {
			lost("WithGroup", v, "")
			h = s
		}
	}()
	return handler{s.h.WithGroup(name)}
}

// lost says on standard error that the log handler's method panicked
// with v, and the message of the record lost, if any.
func lost(method string, v any, msg string) {
	fmt.Fprintf(stderr, "mcpguard: the Logger's handler panicked in %s (%s); log record lost: %q\n", method, text(v), clean(msg))
}

// text is the text of a panic's value v: fmt's, or, when formatting v
// panics too, its type.
func text(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("a %T whose text panics", v)
		}
	}()
	return clean(fmt.Sprint(v))
}

// clean is s as it is when short and plain, else quoted, escaped and cut.
func clean(s string) string {
	if len(s) <= maxText && textsafe.Plain(s) {
		return s
	}
	return textsafe.Quoted(s, maxText)
}

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

// MaxText is the most bytes of an error's or a panic's text a log line
// shows (see Text).
const MaxText = 2048

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
			err = fmt.Errorf("the log handler panicked: %s", PanicText(v))
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
	fmt.Fprintf(stderr, "mcpguard: the Logger's handler panicked in %s (%s); log record lost: %q\n", method, PanicText(v), Text(msg))
}

// PanicText is [Text] of v, a recovered panic's value. fmt recovers a
// panic of v's String or Error method, but panics again when the value it
// panicked with panics so too; in a deferred function that recovered v,
// that panic ended the process. Such a value is shown by its type.
func PanicText(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("a %T whose text panics", v)
		}
	}()
	return Text(fmt.Sprint(v))
}

// Text returns s, the text of an error or a panic value, as a log line
// shows it: as it is when it is short and plain, else quoted, escaped and
// cut as textsafe.Quoted does at MaxText bytes. Such text often quotes what a
// client chose: up to the size of a request, invisible characters (a bidi
// override, which a JSON log keeps as itself) included.
func Text(s string) string {
	if len(s) <= MaxText && textsafe.Plain(s) {
		return s
	}
	return textsafe.Quoted(s, MaxText)
}

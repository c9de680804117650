package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync/atomic"

	"github.com/mcpguard/mcpguard/internal/logsafe"
)

// FanoutSink writes each event to several sinks. Safe for concurrent use if
// its sinks are. It implements [Keeper]: see [FanoutSink.Keep].
type FanoutSink struct {
	sinks  []Sink
	closed atomic.Bool
}

// Fanout returns a sink that writes each event to every non-nil sink, in
// order. Write returns the errors of the sinks that failed, joined; the other
// sinks still record the event. A sink that panics (its bug) has failed:
// the panic is logged to slog.Default at Error, with its stack. A fanout
// of no sinks refuses every event with [ErrNoSink]; after Close, every
// write returns [ErrClosed], as every method of a nil *FanoutSink does.
func Fanout(sinks ...Sink) *FanoutSink {
	f := &FanoutSink{}
	for _, s := range sinks {
		if s != nil {
			f.sinks = append(f.sinks, s)
		}
	}
	return f
}

// Write writes e to every sink.
func (f *FanoutSink) Write(ctx context.Context, e *Event) error {
	if err := f.usable(); err != nil {
		return err
	}
	var errs []error
	for _, s := range f.sinks {
		if err := writeOne(ctx, s, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// errSinkPanicked is the failure of a fanout's sink that panicked.
var errSinkPanicked = errors.New("audit: a sink of the fanout panicked")

// contain turns a panic of s, a fanout's sink (its bug), with v into that
// sink's failure, logged to slog.Default at Error with its stack, so that
// the fanout's other sinks still record the event, as for a sink that
// fails.
func contain(s Sink, v any, err *error) {
	logsafe.Logger(slog.Default()).Error("audit: a sink of the fanout panicked", "sink", fmt.Sprintf("%T", s), "panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
	*err = errSinkPanicked
}

// writeOne is s.Write(ctx, e), a panic of s's its failure (see contain).
func writeOne(ctx context.Context, s Sink, e *Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			contain(s, v, &err)
		}
	}()
	return s.Write(ctx, e)
}

// keepOne is k.Keep(ctx, e, args), a panic of k's its failure.
func keepOne(ctx context.Context, k Keeper, e *Event, args json.RawMessage) (err error) {
	defer func() {
		if v := recover(); v != nil {
			contain(k, v, &err)
		}
	}()
	return k.Keep(ctx, e, args)
}

// durableOne is WriteDurable(ctx, s, e), a panic of s's its failure.
func durableOne(ctx context.Context, s Sink, e *Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			contain(s, v, &err)
		}
	}()
	return WriteDurable(ctx, s, e)
}

// Keep implements [Keeper]. The sinks that are not Keepers get e by Write
// first, then the Keepers by Keep, each its own copy of e (the last one e
// itself; the copies share args and what e references, which no sink
// modifies). When every sink is a Keeper, the hash of args is put off to
// them; otherwise it is computed here, once, for all. Keep returns the
// errors of the sinks that failed, joined; the other sinks still record e.
func (f *FanoutSink) Keep(ctx context.Context, e *Event, args json.RawMessage) error {
	if err := f.usable(); err != nil {
		return err
	}
	if e == nil {
		return f.Write(ctx, e) // each sink refuses it
	}
	keepers := 0
	for _, s := range f.sinks {
		if _, ok := s.(Keeper); ok {
			keepers++
		}
	}
	if keepers < len(f.sinks) && e.ArgsSHA256 == "" && len(args) > 0 {
		e.ArgsSHA256 = ArgsSHA256(args)
	}
	var errs []error
	for _, s := range f.sinks {
		if _, ok := s.(Keeper); ok {
			continue
		}
		if err := writeOne(ctx, s, e); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range f.sinks {
		k, ok := s.(Keeper)
		if !ok {
			continue
		}
		ev := e
		if keepers--; keepers > 0 {
			c := *e
			ev = &c
		}
		if err := keepOne(ctx, k, ev, args); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteDurable writes e durably (see [WriteDurable]) to every sink; it
// returns nil only if every sink made e durable, so a write tool's intent is
// on every configured trail before its handler runs. A fanout of no sinks
// returns [ErrNoSink].
func (f *FanoutSink) WriteDurable(ctx context.Context, e *Event) error {
	if err := f.usable(); err != nil {
		return err
	}
	var errs []error
	for _, s := range f.sinks {
		if err := durableOne(ctx, s, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeOne is c.Close(), c being s, a panic of s's its failure.
func closeOne(s Sink, c io.Closer) (err error) {
	defer func() {
		if v := recover(); v != nil {
			contain(s, v, &err)
		}
	}()
	return c.Close()
}

// usable returns the error that refuses a write: [ErrClosed] after Close
// (and for a nil *FanoutSink), [ErrNoSink] for a fanout of no sinks.
func (f *FanoutSink) usable() error {
	switch {
	case f == nil, f.closed.Load():
		return ErrClosed
	case len(f.sinks) == 0:
		return ErrNoSink
	}
	return nil
}

// Close closes every sink that implements io.Closer and returns their errors,
// joined; later writes return [ErrClosed], and so does a second Close (and
// Close of a nil *FanoutSink).
func (f *FanoutSink) Close() error {
	if f == nil || f.closed.Swap(true) {
		return ErrClosed
	}
	var errs []error
	for _, s := range f.sinks {
		if c, ok := s.(io.Closer); ok {
			if err := closeOne(s, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

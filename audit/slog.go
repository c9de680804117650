package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/mcpguard/mcpguard/internal/logsafe"
)

// LogValue implements slog.LogValuer: a group of the event's fields under
// their JSON names, empty optional fields left out as in the JSON encoding.
func (e *Event) LogValue() slog.Value {
	var arr [nAttrs]slog.Attr
	return slog.GroupValue(e.attrs(arr[:0], true)...)
}

// nAttrs is the most attributes attrs gives: one per field of [Event].
const nAttrs = 20

func (e *Event) attrs(as []slog.Attr, withTime bool) []slog.Attr {
	if withTime {
		as = append(as, slog.Time("time", e.Time))
	}
	as = append(as, slog.String("correlation_id", e.CorrelationID))
	as = appendStringAttr(as, "parent_id", e.ParentID)
	as = appendStringAttr(as, "session_id", e.SessionID)
	as = appendStringAttr(as, "subject", e.Subject)
	if len(e.Roles) > 0 {
		as = append(as, slog.Any("roles", e.Roles))
	}
	as = appendStringAttr(as, "tool", e.Tool)
	as = appendStringAttr(as, "class", e.Class)
	as = append(as,
		slog.String("phase", string(e.Phase)),
		slog.Bool("allowed", e.Allowed),
		slog.Bool("dry_run", e.DryRun))
	as = appendStringAttr(as, "code", e.Code)
	as = appendStringAttr(as, "detail", e.Detail)
	as = append(as, slog.Float64("latency_ms", e.LatencyMS))
	as = appendStringAttr(as, "args_sha256", e.ArgsSHA256)
	if e.Cost != 0 {
		as = append(as, slog.Float64("cost", e.Cost))
	}
	as = appendStringAttr(as, "protocol_version", e.ProtocolVersion)
	as = appendStringAttr(as, "client_name", e.ClientName)
	as = appendStringAttr(as, "request_id", e.RequestID)
	if len(e.Args) > 0 {
		as = append(as, slog.Any("args", e.Args))
	}
	return as
}

func appendStringAttr(as []slog.Attr, k, v string) []slog.Attr {
	if v == "" {
		return as
	}
	return append(as, slog.String(k, v))
}

// SlogSinkOptions configures a [SlogSink]. A nil *SlogSinkOptions means defaults.
type SlogSinkOptions struct {
	// Message is the record message. Zero: "audit".
	Message string
	// Level is the level of allowed events. Nil: slog.LevelInfo.
	Level slog.Leveler
	// DeniedLevel is the level of events with Allowed false. Nil: slog.LevelWarn.
	DeniedLevel slog.Leveler
}

// SlogSink hands each event to a slog.Handler as one record whose time is the
// event's time and whose attributes are the event's fields (see
// [Event.LogValue]). Its durability is the handler's: it does not implement
// [DurableWriter]. Safe for concurrent use if the handler is.
type SlogSink struct {
	h      slog.Handler
	opts   SlogSinkOptions
	closed atomic.Bool
	// busy holds the one handler call made for a Write whose context can
	// end (see Write) while it runs.
	busy chan struct{}
}

// NewSlogSink returns a sink writing to h, with options opts (nil means
// defaults). With a nil h every Write fails.
func NewSlogSink(h slog.Handler, opts *SlogSinkOptions) *SlogSink {
	s := &SlogSink{h: h, busy: make(chan struct{}, 1)}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Message == "" {
		s.opts.Message = "audit"
	}
	if s.opts.Level == nil {
		s.opts.Level = slog.LevelInfo
	}
	if s.opts.DeniedLevel == nil {
		s.opts.DeniedLevel = slog.LevelWarn
	}
	return s
}

// Write records e as one slog record. Records below the handler's level are
// dropped by the handler, as slog does; Write then returns nil.
//
// Write returns ctx's error once ctx ends, as the package's other sinks do,
// though a handler heeds no context: the record then stays on its way,
// handed to the handler once it takes it (a pipe nobody read, drained),
// even after Close, and whatever the handler then says is not reported.
// Writes with a context that can end reach the handler one at a time
// (each waits for the one before, or for its context). A Write whose ctx
// cannot end (the guard's outcome records) is the handler's Handle, as
// long as it takes, and may reach the handler before a record whose Write
// gave up: the records of one call may then be out of order.
func (s *SlogSink) Write(ctx context.Context, e *Event) error {
	if s == nil || s.closed.Load() {
		return ErrClosed
	}
	if e == nil {
		return fmt.Errorf("%w: nil event", ErrInvalidEvent)
	}
	if s.h == nil {
		return errors.New("audit: slog sink without handler")
	}
	lvl := s.opts.Level.Level()
	if !e.Allowed {
		lvl = s.opts.DeniedLevel.Level()
	}
	if !s.h.Enabled(ctx, lvl) {
		return nil
	}
	// Refuse what the other sinks refuse (no correlation id, a year
	// outside 0-9999, NaN, an argument that cannot be encoded) instead of
	// letting the handler print "!ERROR" values.
	if err := e.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	var scratch [512]byte
	if _, err := e.AppendJSON(scratch[:0]); err != nil {
		return err
	}
	bounded := ctx.Done() != nil
	if bounded && (len(e.Roles) > 0 || len(e.Args) > 0) {
		// The record may reach the handler after Write returned, when e
		// is the caller's again (Sink: Write must not retain e): it
		// holds copies of what e references.
		c := *e
		c.Roles = slices.Clone(e.Roles)
		c.Args = detached(e.Args).(map[string]any)
		e = &c
	}
	r := slog.NewRecord(e.Time, lvl, s.opts.Message, 0)
	var arr [nAttrs]slog.Attr
	r.AddAttrs(e.attrs(arr[:0], false)...)
	if !bounded {
		return s.h.Handle(ctx, r)
	}
	return s.handleBounded(ctx, r)
}

// detached returns v with the maps and slices of a decoded JSON value (and
// byte and string slices) copied, so that it shares none of them with v.
func detached(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = detached(x)
		}
		return m
	case []any:
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = detached(x)
		}
		return c
	case json.RawMessage:
		return slices.Clone(v)
	case []byte:
		return slices.Clone(v)
	case []string:
		return slices.Clone(v)
	}
	return v
}

// handleBounded hands r to the handler on a goroutine of its own, which the
// caller leaves when ctx ends: a handler whose writer stops taking writes
// would hold the caller past a deadline it was given (the guard's
// write-ahead bound). One such call at a time (busy), so that a stalled
// handler does not gather goroutines. A handler's panic (its bug) is the
// write's error, as it would be the caller's.
func (s *SlogSink) handleBounded(ctx context.Context, r slog.Record) error {
	if err := acquire(ctx, s.busy); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-s.busy }()
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("audit: the slog handler panicked: %s", logsafe.PanicText(v))
			}
		}()
		done <- s.h.Handle(context.WithoutCancel(ctx), r)
	}()
	return await(ctx, done)
}

// Close makes later writes fail with [ErrClosed], like every other sink,
// and so does a second Close; it does not close the handler's destination,
// which the sink does not own. Write and Close of a nil *SlogSink return
// [ErrClosed].
func (s *SlogSink) Close() error {
	if s == nil || s.closed.Swap(true) {
		return ErrClosed
	}
	return nil
}

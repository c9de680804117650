package limiter_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// r62PanicHandler is a slog.Handler whose Handle panics (its bug).
type r62PanicHandler struct{}

func (r62PanicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (r62PanicHandler) Handle(context.Context, slog.Record) error {
	panic("review62: the handler's bug")
}
func (h r62PanicHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h r62PanicHandler) WithGroup(string) slog.Handler      { return h }

// TestReview62DefaultLoggerPanicContained: the limiter logs a store's
// panic on slog.Default, in the recover that contains it; a default
// handler that panicked too (the operator's, set with slog.SetDefault)
// panicked again there, and the call whose store failed ended the
// process. Such a log record is lost (said on standard error), as the
// guard's own loggers' are (internal/logsafe), and the store's failure
// is the decision's.
func TestReview62DefaultLoggerPanicContained(t *testing.T) {
	old := slog.Default()
	slog.SetDefault(slog.New(r62PanicHandler{}))
	t.Cleanup(func() { slog.SetDefault(old) })
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Hour}},
		&limiter.Options{Store: r61BadValue{limiter.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("a panic reached the caller: %v", v)
		}
	}()
	d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "u", Tool: "t", Calls: 1})
	if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
		t.Errorf("decision %+v, want refused, ErrStoreUnavailable", d)
	}
}

package limiter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testlog"
	"github.com/mcpguard/mcpguard/limiter"
)

// r61RefundPanics is a MemoryStore (as a store of its own: not the
// limiter's in-memory fast path) whose refunds panic (a custom store's
// bug).
type r61RefundPanics struct{ *limiter.MemoryStore }

func (s r61RefundPanics) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if b.Refund {
		panic("review61: the store's refund bug")
	}
	return s.MemoryStore.Apply(ctx, now, b)
}

// TestReview61RefundPanicContained: a Refund whose store panics (a
// custom store's bug) is the store failing, as Store's doc says: an error
// that unwraps to ErrStoreUnavailable, logged, not a panic of the caller's
// (a guard answered a call refused after its charge as its tool's panic).
func TestReview61RefundPanicContained(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}},
		&limiter.Options{Store: r61RefundPanics{limiter.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := lim.AllowAt(context.Background(), now, limiter.Request{User: "u", Tool: "t", Calls: 1, Cost: 5})
	if !d.Allowed || d.Err != nil {
		t.Fatalf("decision %+v", d)
	}
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("the store's panic reached Refund's caller: %v", v)
		}
	}()
	if err := lim.Refund(context.Background(), now, d); !errors.Is(err, limiter.ErrStoreUnavailable) {
		t.Errorf("Refund: %v, want an error that unwraps to ErrStoreUnavailable", err)
	}
	if !strings.Contains(logged.String(), "the store panicked") {
		t.Errorf("the panic was not logged: %q", logged.String())
	}
}

// r61TextPanics is a panic value whose text panics too.
type r61TextPanics struct{}

func (r61TextPanics) String() string { panic(r61TextPanics{}) }

// r61BadValue is a store whose every Apply panics with r61TextPanics.
type r61BadValue struct{ *limiter.MemoryStore }

func (r61BadValue) Apply(context.Context, time.Time, *limiter.Batch) error { panic(r61TextPanics{}) }

// TestReview61StorePanicValueTextPanics: the log line of a store's panic
// formatted its value with fmt, which panics again, in the deferred
// recover, on a value whose String panics with such a value: the call
// whose store failed ended the process. The value is shown by its type.
func TestReview61StorePanicValueTextPanics(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Hour}},
		&limiter.Options{Store: r61BadValue{limiter.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("the store's panic reached the caller: %T", v)
		}
	}()
	d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "u", Tool: "t", Calls: 1})
	if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
		t.Errorf("decision %+v, want refused, ErrStoreUnavailable", d)
	}
	if !strings.Contains(logged.String(), "whose text panics") {
		t.Errorf("log: %q", logged.String())
	}
}

package limiter_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview29NilMemoryStoreApply pins MemoryStore.Apply's doc: "It fails
// only on a store not made by NewMemoryStore [...] and then changes
// nothing". A nil *MemoryStore is not made by NewMemoryStore (New refuses
// it), and its Apply must return that error, not panic.
func TestReview29NilMemoryStoreApply(t *testing.T) {
	var s *limiter.MemoryStore
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute}
	b := &limiter.Batch{Checks: []limiter.Check{{ID: lim.ID(), Kind: limiter.Rate, Max: 5, Window: time.Minute, N: 1}}}
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Apply on a nil *MemoryStore panicked: %v", p)
			}
		}()
		err = s.Apply(context.Background(), time.Now(), b)
	}()
	if err == nil {
		t.Errorf("Apply on a nil *MemoryStore: nil error (denied %d)", b.Denied)
	}
}

// TestReview29ZeroLimiter pins the Limiter doc: "The zero Limiter has no
// limits and allows every call"; its Release, Refund and Kept then have
// nothing to do, and an invalid request is still refused (Decision.Err:
// "never allowed").
func TestReview29ZeroLimiter(t *testing.T) {
	var l limiter.Limiter
	ctx := context.Background()
	now := time.Now()
	r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 3}
	d := l.AllowAt(ctx, now, r)
	if !d.Allowed || d.Err != nil {
		t.Fatalf("zero Limiter AllowAt(%+v) = allowed %v, err %v; want allowed, nil", r, d.Allowed, d.Err)
	}
	if got := l.Limits(); len(got) != 0 {
		t.Errorf("zero Limiter Limits() = %v, want none", got)
	}
	if err := l.Refund(ctx, now, d); err != nil {
		t.Errorf("zero Limiter Refund: %v, want nil (nothing was taken)", err)
	}
	if k := l.Kept(now, d); k != 0 {
		t.Errorf("zero Limiter Kept = %v, want 0", k)
	}
	l.Release(d)
	for _, bad := range []limiter.Request{{Calls: -1}, {Calls: 1, Cost: -1}} {
		d := l.AllowAt(ctx, now, bad)
		if d.Allowed || d.Err == nil {
			t.Errorf("zero Limiter AllowAt(%+v) = allowed %v, err %v; want refused with an error", bad, d.Allowed, d.Err)
		}
		if !errors.Is(d.Err, limiter.ErrInvalidCost) && !errors.Is(d.Err, limiter.ErrInvalidRequest) {
			t.Errorf("zero Limiter AllowAt(%+v): err %v, want ErrInvalidCost or ErrInvalidRequest", bad, d.Err)
		}
	}
}

// TestReview29Strings pins the documented forms of Kind.String,
// Scope.String, Limit.String and Limit.ID.
func TestReview29Strings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{limiter.Rate.String(), "rate"},
		{limiter.Spend.String(), "spend"},
		{limiter.Concurrency.String(), "concurrency"},
		{limiter.Kind(0).String(), "kind(0)"},
		{limiter.Kind(9).String(), "kind(9)"},
		{limiter.Session.String(), "session"},
		{limiter.User.String(), "user"},
		{limiter.Global.String(), "global"},
		{limiter.Scope(0).String(), "scope(0)"},
		{limiter.Scope(7).String(), "scope(7)"},
		{limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute}.String(), "rate 60/1m0s per user"},
		{limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 32, Tool: "refund"}.String(), `concurrency 32 global for tool "refund"`},
		{limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute}.ID(), `rate:user:1m0s:""`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	// "Changing a limit's Max keeps its ID."
	a := limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 1, Window: time.Hour, Tool: "x"}
	b := a
	b.Max = 99
	if a.ID() != b.ID() {
		t.Errorf("ID changed with Max: %q vs %q", a.ID(), b.ID())
	}
}

// TestReview29NewBounds pins New's documented refusals: more than 64
// limits, two limits with the same ID, and the bounds of Limit's fields.
func TestReview29NewBounds(t *testing.T) {
	many := make([]limiter.Limit, 65)
	for i := range many {
		many[i] = limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Duration(i+1) * time.Second}
	}
	if _, err := limiter.New(many, nil); err == nil {
		t.Error("New with 65 limits: nil error")
	}
	if _, err := limiter.New(many[:64], nil); err != nil {
		t.Errorf("New with 64 limits: %v", err)
	}
	for name, l := range map[string]limiter.Limit{
		"rate_under_one":       {Kind: limiter.Rate, Scope: limiter.User, Max: 0.5, Window: time.Minute},
		"window_under_min":     {Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: limiter.MinWindow - 1},
		"window_over_max":      {Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: limiter.MaxWindow + 1},
		"concurrency_window":   {Kind: limiter.Concurrency, Scope: limiter.User, Max: 1, Window: time.Second},
		"concurrency_fraction": {Kind: limiter.Concurrency, Scope: limiter.User, Max: 1.5},
		"concurrency_zero":     {Kind: limiter.Concurrency, Scope: limiter.User},
		"tool_star":            {Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Minute, Tool: "admin_*"},
		"zero_kind":            {Scope: limiter.User, Max: 1, Window: time.Minute},
		"zero_scope":           {Kind: limiter.Rate, Max: 1, Window: time.Minute},
	} {
		if _, err := limiter.New([]limiter.Limit{l}, nil); err == nil {
			t.Errorf("%s: New(%+v): nil error", name, l)
		}
	}
	for name, l := range map[string]limiter.Limit{
		"window_min": {Kind: limiter.Spend, Scope: limiter.User, Max: 0.01, Window: limiter.MinWindow},
		"window_max": {Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: limiter.MaxWindow},
		"slots_max":  {Kind: limiter.Concurrency, Scope: limiter.User, Max: math.MaxInt32},
	} {
		if _, err := limiter.New([]limiter.Limit{l}, nil); err != nil {
			t.Errorf("%s: New(%+v): %v", name, l, err)
		}
	}
}

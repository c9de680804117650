package limiter_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestNewValidates(t *testing.T) {
	rate := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute}
	tests := []struct {
		name    string
		limits  []limiter.Limit
		wantErr string // "" means valid
	}{
		{"starter_template", []limiter.Limit{rate, {Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute}}, ""},
		{"roboshop", []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute}, {Kind: limiter.Concurrency, Scope: limiter.Global, Max: 32}}, ""},
		{"none", nil, ""},
		{"per_tool_beside_all_tools", []limiter.Limit{rate, {Kind: limiter.Rate, Scope: limiter.Session, Tool: "refund", Max: 1, Window: time.Minute}}, ""},
		{"no_kind", []limiter.Limit{{Scope: limiter.Session, Max: 1, Window: time.Second}}, "invalid kind"},
		{"no_scope", []limiter.Limit{{Kind: limiter.Rate, Max: 1, Window: time.Second}}, "invalid scope"},
		{"zero_max", []limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Window: time.Second}}, "not a positive finite"},
		{"nan_max", []limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: math.NaN(), Window: time.Second}}, "not a positive finite"},
		{"inf_max", []limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: math.Inf(1), Window: time.Second}}, "not a positive finite"},
		{"rate_below_one_call", []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 0.5, Window: time.Second}}, "less than one call"},
		{"fractional_slots", []limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1.5}}, "whole number"},
		{"concurrency_window", []limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1, Window: time.Second}}, "no window"},
		{"no_window", []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1}}, "shorter than 1ms"},
		{"tiny_window", []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Microsecond}}, "shorter than 1ms"},
		{"duplicate", []limiter.Limit{rate, rate}, "same kind, scope, window and tool"},
		{"too_many", make([]limiter.Limit, 65), "at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := limiter.New(tt.limits, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("New: %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckCost(t *testing.T) {
	tests := []struct {
		name string
		cost float64
		ok   bool
	}{
		{"zero", 0, true},
		{"fraction", 0.25, true},
		{"large", 1e300, true},
		{"negative", -1, false},
		{"negative_zero", math.Copysign(0, -1), true},
		{"nan", math.NaN(), false},
		{"inf", math.Inf(1), false},
		{"minus_inf", math.Inf(-1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := limiter.CheckCost(tt.cost)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, limiter.ErrInvalidCost)) {
				t.Errorf("CheckCost(%v) = %v, want ok=%v or an ErrInvalidCost", tt.cost, err, tt.ok)
			}
		})
	}
}

// TestAllowAt runs the seeds' scenarios as sequences of calls at given
// times.
func TestAllowAt(t *testing.T) {
	type call struct {
		at   time.Duration
		req  limiter.Request
		want string // "ok", or "kind scope retry"
	}
	starter := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute},
	}
	roboshop := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 32},
	}
	read := func(sess string) limiter.Request { return limiter.Request{Session: sess, Calls: 1, Cost: 1} }
	write := func(sess string, cost float64) limiter.Request {
		return limiter.Request{Session: sess, Write: true, Calls: 1, Cost: cost}
	}
	repeat := func(n int, c call) []call {
		var cs []call
		for range n {
			cs = append(cs, c)
		}
		return cs
	}
	tests := []struct {
		name   string
		limits []limiter.Limit
		calls  []call
	}{
		{"starter_burst_of_n_plus_one", starter, append(repeat(5, call{0, read("burst"), "ok"}),
			call{0, read("burst"), "rate session 12s"},
			call{11 * time.Second, read("burst"), "rate session 1s"},
			call{12 * time.Second, read("burst"), "ok"},
		)},
		{"starter_sessions_isolated", starter, append(repeat(5, call{0, read("a"), "ok"}),
			call{0, read("a"), "rate session 12s"},
			call{0, read("b"), "ok"},
		)},
		{"starter_cost_cap_independent_of_calls", starter, []call{
			{0, write("c", 4), "ok"},
			{0, write("c", 4), "ok"},
			{0, write("c", 4), "spend session 12s"},
			{0, write("c", 2), "ok"},
			{0, read("c"), "spend session 6s"},
		}},
		{"starter_denied_write_consumes_nothing", starter, []call{
			{0, write("d", 11), "spend session never"},
			{0, write("d", 10), "ok"},
			{0, read("d"), "spend session 6s"},
			{0, limiter.Request{Session: "d", Calls: 1}, "ok"},
		}},
		{"starter_dry_run_counts_calls_not_spend", starter, append(repeat(5, call{0, write("e", 0), "ok"}),
			call{0, write("e", 0), "rate session 12s"},
		)},
		{"starter_confirmation_retry_counts_once", starter, append(repeat(5, call{0, read("f"), "ok"}),
			call{0, limiter.Request{Session: "f", Calls: 0}, "ok"},
		)},
		{"roboshop_per_user", roboshop, append(repeat(60, call{0, limiter.Request{Session: "s1", User: "ann", Calls: 1}, "ok"}),
			call{0, limiter.Request{Session: "s2", User: "ann", Calls: 1}, "rate user 1s"},
			call{0, limiter.Request{Session: "s3", User: "bob", Calls: 1}, "ok"},
			call{time.Second, limiter.Request{Session: "s2", User: "ann", Calls: 1}, "ok"},
		)},
		{"invalid_requests", starter, []call{
			{0, limiter.Request{Session: "g", Calls: 1, Cost: math.NaN()}, "error limiter: invalid cost: NaN is not a finite number at least zero"},
			{0, limiter.Request{Session: "g", Calls: -1}, "error limiter: invalid request: -1 calls"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := limiter.New(tt.limits, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range tt.calls {
				d := l.AllowAt(context.Background(), t0.Add(c.at), c.req)
				got := "ok"
				switch {
				case d.Err != nil:
					got = "error " + d.Err.Error()
				case !d.Allowed && d.RetryAfter == 0 && d.Limit.Kind != limiter.Concurrency:
					got = d.Limit.Kind.String() + " " + d.Limit.Scope.String() + " never"
				case !d.Allowed:
					got = d.Limit.Kind.String() + " " + d.Limit.Scope.String() + " " + d.RetryAfter.String()
				}
				if got != c.want {
					t.Errorf("call %d: AllowAt(t0+%v, %+v) = %q, want %q", i, c.at, c.req, got, c.want)
				}
				l.Release(d)
			}
		})
	}
}

func TestDecisionLimit(t *testing.T) {
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Tool: "refund", Max: 1, Window: time.Minute}
	l, err := limiter.New([]limiter.Limit{lim}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := limiter.Request{Session: "s", Tool: "refund", Calls: 1}
	l.AllowAt(context.Background(), t0, r)
	d := l.AllowAt(context.Background(), t0, r)
	if diff := cmp.Diff(lim, d.Limit); diff != "" {
		t.Errorf("Decision.Limit mismatch (-want +got):\n%s", diff)
	}
	if got, want := d.Limit.String(), `rate 1/1m0s per session for tool "refund"`; got != want {
		t.Errorf("Limit.String() = %q, want %q", got, want)
	}
	if got, want := d.Limit.ID(), `rate:session:1m0s:"refund"`; got != want {
		t.Errorf("Limit.ID() = %q, want %q", got, want)
	}
}

func TestStoreFailure(t *testing.T) {
	down := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
		return errors.New("connection refused")
	})
	limits := []limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1}}
	tests := []struct {
		name             string
		opts             limiter.Options
		wantRead, wantWr bool
	}{
		{"default_fails_closed", limiter.Options{}, false, false},
		{"fail_open_reads", limiter.Options{FailOpenReads: true}, true, false},
		{"fail_open_writes", limiter.Options{FailOpenWrites: true}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Store = down
			l, err := limiter.New(limits, &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			dr := l.AllowAt(context.Background(), t0, limiter.Request{Calls: 1})
			dw := l.AllowAt(context.Background(), t0, limiter.Request{Calls: 1, Write: true})
			if diff := cmp.Diff([]bool{tt.wantRead, tt.wantWr}, []bool{dr.Allowed, dw.Allowed}); diff != "" {
				t.Errorf("allowed read, write mismatch (-want +got):\n%s", diff)
			}
			for _, d := range []limiter.Decision{dr, dw} {
				if !errors.Is(d.Err, limiter.ErrStoreUnavailable) || !strings.Contains(d.Err.Error(), "connection refused") {
					t.Errorf("Err = %v, want ErrStoreUnavailable with the cause", d.Err)
				}
				l.Release(d)
			}
		})
	}
}

// TestEndToEndTiming runs handlers that take (fake) time, inside a synctest
// bubble: clients that wait RetryAfter always get through, and in-flight
// slots come back after a panic, an error or a cancellation.
func TestEndToEndTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute},
			{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 4},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// call runs a handler of the given duration that ends in the given
		// way, with the slot released by defer as the guard does.
		call := func(ctx context.Context, user string, d time.Duration, end string) (dec limiter.Decision, err error) {
			dec = l.AllowAt(ctx, time.Now(), limiter.Request{User: user, Calls: 1})
			if !dec.Allowed {
				return dec, nil
			}
			defer l.Release(dec)
			defer func() {
				if p := recover(); p != nil {
					err = errors.New("recovered")
				}
			}()
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return dec, ctx.Err()
			}
			switch end {
			case "panic":
				panic("handler failed")
			case "error":
				return dec, errors.New("handler error")
			}
			return dec, nil
		}

		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var retries, done int
		// 3 users x 100 calls, each retried after RetryAfter until allowed.
		for u := range 3 {
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 25 {
						for {
							ends := [...]string{"ok", "panic", "error"}
							dec, _ := call(context.Background(), string(rune('a'+u)), 10*time.Millisecond, ends[i%3])
							if dec.Allowed {
								mu.Lock()
								done++
								mu.Unlock()
								break
							}
							mu.Lock()
							retries++
							mu.Unlock()
							wait := dec.RetryAfter
							if wait == 0 { // in-flight cap: retry when a call ends
								wait = time.Millisecond
							}
							time.Sleep(wait)
						}
					}
				}()
			}
		}
		wg.Wait()
		elapsed := time.Since(start)
		if done != 300 {
			t.Errorf("%d calls done, want 300", done)
		}
		// 100 calls per user at 60/min with a burst of 60: the last passes
		// at 40s, up to one handler duration later.
		if elapsed < 40*time.Second || elapsed > 41*time.Second {
			t.Errorf("300 calls took %v (fake time), want 40s to 41s", elapsed)
		}
		t.Logf("%d calls, %d denials, %v", done, retries, elapsed)

		// Cancelled calls give their slots back.
		time.Sleep(time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := call(ctx, "z", time.Hour, "ok"); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("call: %v, want deadline exceeded", err)
				}
			}()
		}
		synctest.Wait()
		if d := l.AllowAt(context.Background(), time.Now(), limiter.Request{User: "y"}); d.Allowed {
			t.Errorf("fifth call while 4 are in flight allowed")
			l.Release(d)
		}
		wg.Wait()
		for i := range 4 {
			d := l.AllowAt(context.Background(), time.Now(), limiter.Request{User: "y"})
			if !d.Allowed {
				t.Errorf("call %d after cancellations denied: %v", i, d.Limit)
			}
		}
	})
}

package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review42aAt returns ctx with a deadline d from now (past for d < 0),
// cancelled when t ends.
func review42aAt(t *testing.T, ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithDeadline(ctx, time.Now().Add(d))
	t.Cleanup(cancel)
	return ctx
}

// pastCallerDeadline is true only for the context of a guarded call's
// handler (one that carries the call) whose deadline has passed: not for a
// top-level call's, however late, nor for a nested one with time left or
// no deadline at all.
func TestReview42aPastCallerDeadline(t *testing.T) {
	bg := context.Background()
	nested := context.WithValue(bg, callKey{}, &call{})
	cases := []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"top_level_past_deadline", review42aAt(t, bg, -time.Second), false},
		{"nested_past_deadline", review42aAt(t, nested, -time.Second), true},
		{"nested_deadline_ahead", review42aAt(t, nested, time.Hour), false},
		{"nested_no_deadline", nested, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pastCallerDeadline(tc.ctx); got != tc.want {
				t.Errorf("pastCallerDeadline = %v, want %v", got, tc.want)
			}
		})
	}
}

// undecidedAtDeadline holds a limiter's refusal for a timeout only when
// all of it holds: the call was refused, for the store (ErrStoreUnavailable),
// which timed out (context.DeadlineExceeded), once the deadline of the
// nested call's context had passed. A fail-open allowance, a store that
// failed otherwise, a deadline error not of the store, a refusal by a
// limit, time left or a top-level call: each keeps the limiter's answer.
func TestReview42aUndecidedAtDeadline(t *testing.T) {
	bg := context.Background()
	nested := context.WithValue(bg, callKey{}, &call{})
	late, ahead, top := review42aAt(t, nested, -time.Second), review42aAt(t, nested, time.Hour), review42aAt(t, bg, -time.Second)
	timedOut := fmt.Errorf("%w: %w", limiter.ErrStoreUnavailable, context.DeadlineExceeded)
	failed := fmt.Errorf("%w: connection refused", limiter.ErrStoreUnavailable)
	odd := fmt.Errorf("store answered late: %w", context.DeadlineExceeded)
	cases := []struct {
		name string
		ctx  context.Context
		ld   limiter.Decision
		want bool
	}{
		{"store_timed_out_past_deadline", late, limiter.Decision{Err: timedOut}, true},
		{"allowed_fail_open", late, limiter.Decision{Allowed: true, Err: timedOut}, false},
		{"store_failed_otherwise", late, limiter.Decision{Err: failed}, false},
		{"deadline_error_not_the_stores", late, limiter.Decision{Err: odd}, false},
		{"refused_by_a_limit", late, limiter.Decision{Limit: limiter.Limit{Kind: limiter.Rate}}, false},
		{"deadline_ahead", ahead, limiter.Decision{Err: timedOut}, false},
		{"top_level_call", top, limiter.Decision{Err: timedOut}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := undecidedAtDeadline(tc.ctx, tc.ld); got != tc.want {
				t.Errorf("undecidedAtDeadline(%+v) = %v, want %v", tc.ld, got, tc.want)
			}
		})
	}
}

// review42aSpendLimiter returns a limiter of 3 spend units per user an
// hour, on store (nil: the memory store).
func review42aSpendLimiter(t *testing.T, store limiter.Store) *limiter.Limiter {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 3, Window: time.Hour}},
		&limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// review42aCharged returns a call of bob's to the read tool "a" that lim
// has charged 3 units, and lim's decision on it.
func review42aCharged(t *testing.T, g *Guard, lim *limiter.Limiter) (*call, limiter.Decision) {
	t.Helper()
	c := newCall(g.now(), &g.ids)
	c.name, c.rule, c.cost, c.charged = "a", &policy.ToolRule{Name: "a", Class: policy.Read}, 3, 3
	c.id = &Identity{Principal: &policy.Principal{Subject: "bob"}}
	var ld limiter.Decision
	if lim != nil {
		ld = lim.AllowAt(context.Background(), g.now(), limiter.Request{User: "bob", Tool: "a", Calls: 1, Cost: 3})
		if !ld.Allowed {
			t.Fatalf("premise: the charge was refused: %+v", ld)
		}
		t.Cleanup(func() { lim.Release(ld) })
	}
	return c, ld
}

// refund gives a refused call's charge back: its record's cost becomes 0,
// with or without a limiter, and the limiter has the room again. A refund
// the limiter's store cannot make is logged at Error, and the record's
// cost stays what was charged.
func TestReview42aRefund(t *testing.T) {
	const lost = `level=ERROR msg="mcpguard: the charge of a refused call was not given back"`
	cases := []struct {
		name        string
		lim         func(t *testing.T) *limiter.Limiter
		wantCharged float64
		wantRoom    bool // the limiter takes 3 units again
		wantLogged  bool
	}{
		{name: "no_limiter", lim: func(*testing.T) *limiter.Limiter { return nil }},
		{name: "memory_store", lim: func(t *testing.T) *limiter.Limiter { return review42aSpendLimiter(t, nil) }, wantRoom: true},
		{name: "store_cannot_refund", lim: func(t *testing.T) *limiter.Limiter {
			return review42aSpendLimiter(t, limiter.StoreFunc(limiter.NewMemoryStore().Apply))
		}, wantCharged: 3, wantLogged: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.lim(t)
			g, log := review41cGuardWith(t, Options{Limiter: lim}, "a")
			c, ld := review42aCharged(t, g, lim)
			g.refund(context.Background(), c, ld)
			if c.charged != tc.wantCharged {
				t.Errorf("charged after the refund = %v, want %v", c.charged, tc.wantCharged)
			}
			if lim != nil {
				d := lim.AllowAt(context.Background(), g.now(), limiter.Request{User: "bob", Tool: "a", Calls: 1, Cost: 3})
				lim.Release(d)
				if d.Allowed != tc.wantRoom {
					t.Errorf("3 more units allowed = %v, want %v", d.Allowed, tc.wantRoom)
				}
			}
			if got := strings.Contains(log.String(), lost); got != tc.wantLogged {
				t.Errorf("log:\n%s\nhas %s: %v, want %v", log, lost, got, tc.wantLogged)
			}
		})
	}
}

// notStarted refuses a call whose deadline passed before its tool ran as
// timed out before it ran (retryable, for nothing was done) and gives its
// charge back: the record's cost is 0 and the limiter has the room again.
func TestReview42aNotStartedGivesBack(t *testing.T) {
	lim := review42aSpendLimiter(t, nil)
	g, _ := review41cGuardWith(t, Options{Limiter: lim}, "a")
	c, ld := review42aCharged(t, g, lim)
	res, err := g.notStarted(context.Background(), c, ld)
	d, ok := DenialOf(res, err)
	if !ok {
		t.Fatalf("notStarted: %v, %v; want a refusal", res, err)
	}
	type outcome struct {
		Code            Code
		Message, Detail string
		RetryAfter      time.Duration
		Charged         float64
	}
	want := outcome{Code: CodeUpstreamUnavailable,
		Message: "the tool timed out before it ran: the call's deadline passed before it could start",
		Detail:  "the call's deadline passed before the tool ran; the tool was not run"}
	got := outcome{d.Code, d.Message, c.detail, d.RetryAfter, c.charged}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notStarted (-want +got):\n%s", diff)
	}
	again := lim.AllowAt(context.Background(), g.now(), limiter.Request{User: "bob", Tool: "a", Calls: 1, Cost: 3})
	lim.Release(again)
	if !again.Allowed {
		t.Errorf("3 more units refused after notStarted: %+v; want its charge given back", again)
	}
}

// The limiter's session key is the session's id, for each session its
// own, when Options.SessionKey is not set.
func TestReview42aLimitSessionKey(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := review41cGuardWith(t, Options{Limiter: lim}, "a")
	c := &call{name: "a", rule: &policy.ToolRule{Name: "a", Class: policy.Read},
		id: &Identity{Principal: &policy.Principal{Subject: "bob"}}}
	one := &mcp.CallToolRequest{Session: review41bSession(t, "s1")}
	two := &mcp.CallToolRequest{Session: review41bSession(t, "s2")}
	var got []bool
	for _, req := range []*mcp.CallToolRequest{one, two, one} {
		d := g.limit(context.Background(), req, c, 1, 0, false)
		lim.Release(d)
		got = append(got, d.Allowed)
	}
	if diff := cmp.Diff([]bool{true, true, false}, got); diff != "" {
		t.Errorf("allowed: session s1, s2, s1 again (-want +got):\n%s", diff)
	}
}

// A limiter whose store fails: a read goes through only under
// FailOpenReads (a read is no write to the limiter), and the failure is
// logged at Error as the limiter's, with whether it let the call through;
// a live call is not taken for a client that left.
func TestReview42aLimiterFailureLogged(t *testing.T) {
	down := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
		return errors.New("connection refused")
	})
	cases := []struct {
		name     string
		opts     limiter.Options
		wantCode Code
		allowed  string
	}{
		{"fail_open_reads", limiter.Options{FailOpenReads: true}, "", "allowed=true"},
		{"fail_open_writes_only", limiter.Options{FailOpenWrites: true}, CodeRateLimitExceeded, "allowed=false"},
		{"fail_closed", limiter.Options{}, CodeRateLimitExceeded, "allowed=false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Store = down
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Hour}}, &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			g, log := review41cGuardWith(t, Options{Limiter: lim}, "a")
			cs := review41cServe(t, g, &review41cBelow{})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a", Arguments: map[string]any{}})
			var code Code
			if d, ok := DenialOf(res, err); ok {
				code = d.Code
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("call: code %q, want %q", code, tc.wantCode)
			}
			l := log.String()
			if !strings.Contains(l, `level=ERROR msg="mcpguard: limiter failed"`) || !strings.Contains(l, tc.allowed) ||
				strings.Contains(l, "before the limiter decided") {
				t.Errorf("log:\n%s\nwant the limiter's failure at Error with %s, not a client's leaving", l, tc.allowed)
			}
		})
	}
}

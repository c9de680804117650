package mcpguard_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview9bElicitUnsupportedKeepsCharge: Options.Limiter says that a
// call the limiter admitted and that is refused before its handler runs is
// given back its calls, "a refused call consumes nothing", and 26262d4 made
// confirmStep refund when the confirmation state cannot be issued ("No one
// was asked: the call consumes nothing"). A user of an older client
// (protocol 2025-11-25) that does not support elicitation expects a call of
// a confirmed tool, refused with CONFIRMATION_REQUIRED because nobody could
// be asked, to consume nothing. Instead confirmStep (serve.go, the
// req.Session.Elicit error branch, "elicitation failed") returns the
// refusal without g.refund: the call stays charged against the call rate
// although the go-sdk refused to send the elicitation (no human was asked,
// nothing ran), and the caller's next call of any tool is refused with
// RATE_LIMIT_EXCEEDED.
func TestReview9bElicitUnsupportedKeepsCharge(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim})
	cs := h.connect(bob, clientOpts{version: "2025-11-25"}) // no elicitation handler
	res, err := call(t, cs, "wipe", map[string]any{"target": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != string(mcpguard.CodeConfirmationRequired) {
		t.Fatalf("wipe from a client without elicitation: code %q, want CONFIRMATION_REQUIRED", got)
	}
	if n := h.down.calls.Load(); n != 0 {
		t.Fatalf("the downstream ran %d times", n)
	}
	res, err = call(t, cs, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "" {
		t.Errorf("echo after a wipe refused because nobody could be asked: code %q, want it allowed (the refused call ran nowhere, asked nobody, and should have consumed nothing)", got)
	}
}

// review9bClock is a settable time source for Options.Now.
type review9bClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *review9bClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *review9bClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// review9bSlowIntentSink, once fail is set, fails every intent record
// after taking a while (the clock moves on by slow, as a sink timing out
// would); it records everything else.
type review9bSlowIntentSink struct {
	clock *review9bClock
	slow  time.Duration
	fail  atomic.Bool
	memSink
}

func (s *review9bSlowIntentSink) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent && s.fail.Load() {
		s.clock.add(s.slow)
		return errors.New("audit store timed out")
	}
	return s.memSink.Write(ctx, e)
}

// TestReview9bLateRefundRecordsNoCost: audit.Event.Cost is "what the call
// was charged against the spend caps ... so that the costs of a trail add
// up to the spend", and Guard.refund (serve.go) says "a refund the limiter
// could not make is logged, and the record's cost stays what was charged".
// Since 26262d4 Limiter.Refund gives nothing back when it comes an
// increment or more after the decision, and still returns nil. A write
// whose intent record fails slowly (here its sink takes a minute, a spend
// unit's increment, then fails) is refused with AUDIT_UNAVAILABLE; the
// Guard calls Refund, which returns nil having given nothing back, and
// sets c.charged = 0 (serve.go refund): the outcome record says cost 0
// while the spend stayed charged (the limiter has one unit where a refund
// would have left two). The trail no longer adds up to the spend. Refund
// needs to tell the caller what it gave back (or the Guard must not zero
// the cost when nothing came back); the same holds for limitCtx.refund in
// execute.go, which copies c.charged into the Audit middleware's record.
func TestReview9bLateRefundRecordsNoCost(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := &review9bClock{now: t0}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 2, Window: 2 * time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &review9bSlowIntentSink{clock: clock, slow: time.Minute}
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim, Audit: sink, Now: clock.Now})
	cs := h.connect(alice, clientOpts{})
	// A first note at t0 takes one unit (the intent is quick).
	res, err := call(t, cs, "add_note", map[string]any{"title": "one"})
	if err != nil || errorCode(t, res) != "" {
		t.Fatalf("first add_note: %v %v", err, errorCode(t, res))
	}
	// The second one's intent takes a minute and fails.
	sink.fail.Store(true)
	res, err = call(t, cs, "add_note", map[string]any{"title": "two"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != string(mcpguard.CodeAuditUnavailable) {
		t.Fatalf("second add_note: code %q, want AUDIT_UNAVAILABLE", got)
	}
	// Premise: the second call's unit stayed charged. At t0+1m the first
	// call's unit is back and, had the refund given anything, two units
	// would be free; one is.
	if d := lim.AllowAt(context.Background(), clock.Now(), limiter.Request{User: "alice", Tool: "add_note", Cost: 2}); d.Allowed {
		t.Fatalf("2 units free at t0+1m: the refund did give the charge back; the test's premise is wrong")
	}
	var last *audit.Event
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome && e.Tool == "add_note" {
			last = &e
		}
	}
	if last == nil || last.Allowed {
		t.Fatalf("no refused outcome record for the second add_note: %+v", last)
	}
	if last.Cost != 1 {
		t.Errorf("the refused add_note's outcome record has cost %v, want 1: its spend unit was not given back (the refund came a full increment after the decision), so the trail's costs no longer add up to the spend", last.Cost)
	}
}

// TestReview9bConfirmedRoundChargedAtCallStart: on an older client the
// human answers the confirmation inside the call (serve.go confirmStep,
// Elicit), and only then is the call charged its spend (step 8). A user
// expects a spend limit of 1 unit per minute to refuse a second cost-1
// call made right after a first one that ran. Instead Guard.limit
// (serve.go) asks the limiter at c.start, the time the call arrived, not
// at the time it is admitted: when the answer took longer than the spend's
// increment (here 90 s under 1 per minute), the charge lands in the past
// and the bucket is already full again when the handler runs, so the call
// spent nothing; the next cost-1 call passes at once. The client controls
// how long its elicitation answer takes, so any such client can make its
// confirmed calls free of spend limits. (The same stale time makes a
// refund after such a call late: Refund measures from c.start.) The
// charge should be made at g.now().
func TestReview9bConfirmedRoundChargedAtCallStart(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := &review9bClock{now: t0}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := basePolicy(false)
	for i := range cfg.Tools {
		if cfg.Tools[i].Name == "wipe" {
			cfg.Tools[i].Cost = 1
		}
	}
	h := newHarness(t, cfg, &mcpguard.Options{Limiter: lim, Now: clock.Now})
	cs := h.connect(alice, clientOpts{version: "2025-11-25", elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		clock.add(90 * time.Second) // the human reads, thinks, accepts
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	res, err := call(t, cs, "wipe", map[string]any{"target": "x"})
	if err != nil || errorCode(t, res) != "" {
		t.Fatalf("wipe, confirmed after 90s: %v %q", err, errorCode(t, res))
	}
	if n := h.down.calls.Load(); n != 1 {
		t.Fatalf("the downstream ran %d times, want 1", n)
	}
	// The wipe ran at t0+90s and spent 1 unit then: nothing is left until
	// t0+2m30s.
	res, err = call(t, cs, "add_note", map[string]any{"title": "n"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != string(mcpguard.CodeSpendLimitExceeded) {
		t.Errorf("add_note (cost 1) right after a wipe (cost 1) ran at t0+90s: code %q, want SPEND_LIMIT_EXCEEDED under 1 unit per minute (the wipe's charge was made at t0, its arrival, and had refilled before it ran)", got)
	}
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outerLimitChain is a chain with a Limit outside the stand-alone Confirm,
// both given the same limiter (opts is shared, as it usually is): a spend
// cap of 10 and 5 calls an hour per user, and a wipe that costs 6.
func outerLimitChain(t *testing.T, next mcp.ToolHandler) (mcp.ToolHandler, *limiter.Limiter, *memSink) {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	six := func(map[string]any) (float64, error) { return 6, nil }
	opts := &mcpguard.Options{
		Limiter: lim, Logger: quiet, Now: func() time.Time { return dsT0 },
		Tools: map[string]mcpguard.ToolOptions{"wipe": {Cost: six}},
	}
	p, m := stepPolicy(t), must(t)
	sink := &memSink{}
	h := mcpguard.Chain(
		m(mcpguard.Audit(sink, opts)),
		mcpguard.Authenticate(fixed(bob)),
		m(mcpguard.Limit(lim, p, opts)),
		m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
	)(next)
	return h, lim, sink
}

// left reports how many calls and cost units bob has left in lim (it takes
// them: call it once, at the end).
func left(lim *limiter.Limiter) (calls, cost int) {
	for lim.AllowAt(context.Background(), dsT0, limiter.Request{User: "bob", Calls: 1}).Allowed {
		calls++
	}
	for lim.AllowAt(context.Background(), dsT0, limiter.Request{User: "bob", Cost: 1}).Allowed {
		cost++
	}
	return calls, cost
}

// TestConfirmStepUnderAnOuterLimit checks a Confirm given a limiter with a
// Limit of the same limiter outside it. The Limit has counted the call and
// taken its cost when Confirm asks, so Confirm does not count it again:
// before, its asking round checked the cost of 6 a second time against the
// 4 the Limit had left, and every such call was refused
// SPEND_LIMIT_EXCEEDED before anyone was asked (and kept the Limit's
// charge). The logical call counts one call and 6 in all.
func TestConfirmStepUnderAnOuterLimit(t *testing.T) {
	var s stub
	h, lim, _ := outerLimitChain(t, s.handle)
	const args = `{"target":"db-1"}`
	ask, err := h(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking round of a call of 6 with 10 left: %q %s; want the human asked", codeOf(t, ask, err), mustJSON(ask))
	}
	res, err := confirmRound(h, "wipe", args, ask.RequestState, "accept")
	if got := codeOf(t, res, err); got != "" || s.ran != 1 {
		t.Fatalf("confirmed round: %q, handler ran %d times; want it run once", got, s.ran)
	}
	if calls, cost := left(lim); calls != 4 || cost != 4 {
		t.Errorf("after one confirmed call: %d calls and %d cost left, want 4 and 4", calls, cost)
	}
}

// TestConfirmStepRefusalGivesOuterLimitBack checks that a call the
// stand-alone Confirm refuses (a confirmation that does not verify, a
// decline) gives back what a Limit outside it charged, as a refusal by a
// Limit or WriteAhead inside that Limit does: a refused call consumes
// nothing. Before, each such call kept one call and its cost.
func TestConfirmStepRefusalGivesOuterLimitBack(t *testing.T) {
	var s stub
	h, lim, sink := outerLimitChain(t, s.handle)
	const args = `{"target":"db-1"}`
	res, err := confirmRound(h, "wipe", args, "AQAAAAB.bogus", "accept")
	if got := codeOf(t, res, err); got != string(mcpguard.CodeConfirmationRequired) {
		t.Fatalf("a bogus confirmation: %q, want CONFIRMATION_REQUIRED", got)
	}
	if s.ran != 0 {
		t.Fatalf("the handler ran")
	}
	recs := sink.all()
	if len(recs) != 1 || recs[0].Cost != 0 {
		t.Errorf("audit records %+v; want one, with cost 0 (given back)", recs)
	}
	if calls, cost := left(lim); calls != 5 || cost != 10 {
		t.Errorf("after a refused call: %d calls and %d cost left, want 5 and 10", calls, cost)
	}
}

// TestConfirmStepUnderAnOuterLimitAtOnce sends the accepted round of one
// confirmation 16 times at once through a Limit outside Confirm (run with
// -race): exactly one runs, the others are refused, and the logical call
// has counted one call and 6 in all (the refusals give back nothing they
// did not take).
func TestConfirmStepUnderAnOuterLimitAtOnce(t *testing.T) {
	var ran atomic.Int32
	h2, lim2, _ := outerLimitChain(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		return textResult("wiped"), nil
	})
	const args = `{"target":"db-1"}`
	ask, err := h2(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking round: %q %s", codeOf(t, ask, err), mustJSON(ask))
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := confirmRound(h2, "wipe", args, ask.RequestState, "accept")
			if err == nil && !res.IsError {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ran.Load() != 1 || ok.Load() != 1 {
		t.Errorf("16 accepted rounds at once: the handler ran %d times, %d succeeded; want 1 and 1", ran.Load(), ok.Load())
	}
	if calls, cost := left(lim2); calls != 4 || cost != 4 {
		t.Errorf("after one confirmed call: %d calls and %d cost left, want 4 and 4", calls, cost)
	}
}

// TestConfirmStepUnderAnOuterLimitOlderClient is the outer Limit on
// protocol 2025-11-25, whose human answers inside the call: an accepted
// call runs once and counts one call and 6 (before, the asking round's
// second check of the cost refused it: SPEND_LIMIT_EXCEEDED); a declined
// call gives back what the Limit charged (before, it kept one call and 6).
func TestConfirmStepUnderAnOuterLimitOlderClient(t *testing.T) {
	for _, tc := range []struct {
		action     string
		code       string
		ran        int32
		calls, sum int
	}{
		{"accept", "", 1, 4, 4},
		{"decline", "CONFIRMATION_REQUIRED", 0, 5, 10},
	} {
		t.Run(tc.action, func(t *testing.T) {
			var ran atomic.Int32
			h, lim, _ := outerLimitChain(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran.Add(1)
				return textResult("wiped"), nil
			})
			srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			srv.AddTool(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)}, h)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			var asked atomic.Int64
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answer(tc.action, &asked)})
			cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close(); ss.Close() })
			res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); got != tc.code || ran.Load() != tc.ran || asked.Load() != 1 {
				t.Errorf("%s inside the call: code %q, ran %d, asked %d; want %q, %d, 1", tc.action, got, ran.Load(), asked.Load(), tc.code, tc.ran)
			}
			if calls, cost := left(lim); calls != tc.calls || cost != tc.sum {
				t.Errorf("after it: %d calls and %d cost left, want %d and %d", calls, cost, tc.calls, tc.sum)
			}
		})
	}
}

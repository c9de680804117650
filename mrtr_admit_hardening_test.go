package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slotHolder is a handler that, for tool "hold", blocks until release is
// closed (holding the caller's in-flight slot); any other tool behaves as
// asker.
type slotHolder struct {
	asker
	entered chan struct{}
	release chan struct{}
}

func (h *slotHolder) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.Name == "hold" {
		close(h.entered)
		<-h.release
		return textResult("held"), nil
	}
	return h.asker.handle(ctx, req)
}

// nextRound sends the next round of a handler's multi round-trip.
func nextRound(h mcp.ToolHandler, name, args, state string) (*mcp.CallToolResult, error) {
	r := req(name, args)
	r.Params.RequestState = state
	r.Params.InputResponses = mcp.InputResponseMap{sealAskKey: &mcp.ElicitResult{Action: "accept"}}
	return h(context.Background(), r)
}

// TestSealedStateSurvivesRetryableDenial checks DESIGN.md's "a denied call
// consumes nothing" for the next round of a handler's multi round-trip:
// refused for the in-flight cap (CONCURRENCY_LIMIT_EXCEEDED, retryable), it
// keeps its sealed state, and the same round sent again once the slot is
// free completes. Were the state used up when it is opened, the user's
// answer would be lost and the logical call charged again from the start.
// For the Guard and for the stand-alone Limit.
func TestSealedStateSurvivesRetryableDenial(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "ask", Class: policy.Read, Cost: 1},
			{Name: "hold", Class: policy.Read},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)
	newLim := func() *limiter.Limiter {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	build := map[string]func(h mcp.ToolHandler) (ask, hold mcp.ToolHandler){
		"guard": func(h mcp.ToolHandler) (mcp.ToolHandler, mcp.ToolHandler) {
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Limiter: newLim(), Logger: quiet, Audit: &memSink{}})
			if err != nil {
				t.Fatal(err)
			}
			a, err := g.Wrap(&mcp.Tool{Name: "ask", InputSchema: schema}, h)
			if err != nil {
				t.Fatal(err)
			}
			b, err := g.Wrap(&mcp.Tool{Name: "hold", InputSchema: schema}, h)
			if err != nil {
				t.Fatal(err)
			}
			return a, b
		},
		"standalone_limit": func(h mcp.ToolHandler) (mcp.ToolHandler, mcp.ToolHandler) {
			step := must(t)(mcpguard.Limit(newLim(), pol, &mcpguard.Options{Logger: quiet}))
			w := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), step)(h)
			return w, w
		},
	}
	for name, mk := range build {
		t.Run(name, func(t *testing.T) {
			hd := &slotHolder{entered: make(chan struct{}), release: make(chan struct{})}
			ask, hold := mk(hd.handle)
			args := `{"target":"db-1"}`
			first, err := ask(context.Background(), req("ask", args))
			if err != nil || first.InputRequests == nil || !strings.HasPrefix(first.RequestState, "mcpguard.mrtr1") {
				t.Fatalf("first round: %v %s", err, mustJSON(first))
			}
			// Another call of the same user holds the only in-flight slot.
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				hold(context.Background(), req("hold", args))
			}()
			select {
			case <-hd.entered:
			case <-time.After(5 * time.Second):
				close(hd.release)
				t.Fatal("the holding call never reached its handler")
			}
			res, err := nextRound(ask, "ask", args, first.RequestState)
			if got := codeOf(t, res, err); got != "CONCURRENCY_LIMIT_EXCEEDED" {
				close(hd.release)
				wg.Wait()
				t.Fatalf("next round while the slot is held: %q, want CONCURRENCY_LIMIT_EXCEEDED (test setup)", got)
			}
			close(hd.release)
			wg.Wait()
			// The slot is free: the same next round, sent again as the
			// refusal invited, must go through.
			res, err = nextRound(ask, "ask", args, first.RequestState)
			if got := codeOf(t, res, err); got != "" || hd.ran.Load() != 1 {
				t.Errorf("the same next round after a CONCURRENCY_LIMIT_EXCEEDED refusal, slot now free: %q, handler finished %d times; "+
					"want success (a denied call consumes nothing, yet the refusal used up the one-time sealed state)", got, hd.ran.Load())
			}
		})
	}
}

// TestSealedStateSurvivesWriteAheadFailure checks the same for the refusal
// that says "the write was not attempted": the next round of a write tool's
// multi round-trip whose write-ahead intent cannot be recorded
// (AUDIT_UNAVAILABLE) keeps its sealed state, and completes once the audit
// trail is back.
func TestSealedStateSurvivesWriteAheadFailure(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "asknote", Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{"asknote"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var a asker
	schema := json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)
	h, err := g.Wrap(&mcp.Tool{Name: "asknote", InputSchema: schema}, a.handle)
	if err != nil {
		t.Fatal(err)
	}
	args := `{"target":"db-1"}`
	first, err := h(context.Background(), req("asknote", args))
	if err != nil || first.InputRequests == nil || !strings.HasPrefix(first.RequestState, "mcpguard.mrtr1") {
		t.Fatalf("first round: %v %s", err, mustJSON(first))
	}
	sink.fail.Store(true)
	res, err := nextRound(h, "asknote", args, first.RequestState)
	if got := codeOf(t, res, err); got != "AUDIT_UNAVAILABLE" {
		t.Fatalf("next round with the audit trail down: %q, want AUDIT_UNAVAILABLE (test setup)", got)
	}
	sink.fail.Store(false)
	res, err = nextRound(h, "asknote", args, first.RequestState)
	if got := codeOf(t, res, err); got != "" || a.ran.Load() != 1 {
		t.Errorf("the same next round once the audit trail is back: %q, handler finished %d times; "+
			"want success (the write was not attempted, yet its one-time sealed state was used up)", got, a.ran.Load())
	}
}

// TestConfirmationSurvivesRetryableDenial checks that a confirmed round the
// Guard refuses for the in-flight cap keeps its confirmation: the human's
// answer is used up only when the call is admitted, so the same round sent
// again once the slot is free runs, and runs once.
func TestConfirmationSurvivesRetryableDenial(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "wipe", Class: policy.Write, Confirm: true},
			{Name: "hold", Class: policy.Read},
		},
		WriteAllowlist: []string{"wipe"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Limiter: lim, Confirmer: testSigner(t, nil), Logger: quiet, Audit: &memSink{}})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)
	hd := &slotHolder{entered: make(chan struct{}), release: make(chan struct{})}
	var wiped stub
	wipe, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: schema}, wiped.handle)
	if err != nil {
		t.Fatal(err)
	}
	hold, err := g.Wrap(&mcp.Tool{Name: "hold", InputSchema: schema}, hd.handle)
	if err != nil {
		t.Fatal(err)
	}
	args := `{"target":"db-1"}`
	ask, err := wipe(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking round: %v %s", err, mustJSON(ask))
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		hold(context.Background(), req("hold", args))
	}()
	<-hd.entered
	res, err := confirmRound(wipe, "wipe", args, ask.RequestState, "accept")
	if got := codeOf(t, res, err); got != "CONCURRENCY_LIMIT_EXCEEDED" || wiped.ran != 0 {
		t.Fatalf("confirmed round while the slot is held: %q, ran %d (test setup)", got, wiped.ran)
	}
	close(hd.release)
	wg.Wait()
	for i, want := range []string{"", "CONFIRMATION_REQUIRED"} {
		res, err = confirmRound(wipe, "wipe", args, ask.RequestState, "accept")
		if got := codeOf(t, res, err); got != want || wiped.ran != 1 {
			t.Errorf("confirmed round sent again (%d): %q, handler ran %d times; want %q and one run", i+1, got, wiped.ran, want)
		}
	}
}

// TestRetryRoundAuditsNoCost checks that the audit record of a multi
// round-trip's next round, charged nothing, says cost 0: the first round's
// record carries the logical call's cost, so a sum over the trail counts it
// once.
func TestRetryRoundAuditsNoCost(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "ask", Class: policy.Read, Cost: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	var a asker
	h, err := g.Wrap(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, a.handle)
	if err != nil {
		t.Fatal(err)
	}
	first, err := h(context.Background(), req("ask", `{}`))
	if err != nil || first.RequestState == "" {
		t.Fatalf("first round: %v %s", err, mustJSON(first))
	}
	if res, err := nextRound(h, "ask", `{}`, first.RequestState); codeOf(t, res, err) != "" {
		t.Fatalf("next round: %v %s", err, mustJSON(res))
	}
	var costs []float64
	for _, ev := range sink.all() {
		costs = append(costs, ev.Cost)
	}
	if len(costs) != 2 || costs[0] != 3 || costs[1] != 0 {
		t.Errorf("audited costs %v, want [3 0]", costs)
	}
}

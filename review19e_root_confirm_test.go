package mcpguard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmStepDryRunMeetsTheSpendCap checks the stand-alone Confirm
// step with opts.Limiter, which answers the dry runs of a tool with
// Confirm itself (a Limit inside never sees them): a dry run counts one
// call and spends nothing, but is refused with the SPEND_LIMIT_EXCEEDED
// and wait the real call would get when its cost would not fit now, as in
// the Guard; its audit record has dry_run true, that code and cost 0.
func TestConfirmStepDryRunMeetsTheSpendCap(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	six := func(map[string]any) (float64, error) { return 6, nil }
	opts := &mcpguard.Options{
		Limiter: lim, Logger: quiet, Now: func() time.Time { return dsT0 },
		Tools: map[string]mcpguard.ToolOptions{"wipe": {Cost: six}},
	}
	var s stub
	h := mcpguard.Chain(
		m(mcpguard.Audit(sink, opts)),
		mcpguard.Authenticate(fixed(bob)),
		m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
		m(mcpguard.Limit(lim, p, opts)),
	)(s.handle)
	const args = `{"target":"db-1"}`
	dryRun := func() (*mcpguard.DenialError, *mcp.CallToolResult) {
		t.Helper()
		res, err := h(context.Background(), dryReq("wipe", args))
		if err != nil {
			t.Fatalf("dry run: %v", err)
		}
		var de *mcpguard.DenialError
		errors.As(res.GetError(), &de)
		return de, res
	}
	// Twice 6 of 10: each fits, as nothing is spent.
	for i := range 2 {
		if de, res := dryRun(); de != nil || res.StructuredContent == nil {
			t.Fatalf("dry run %d of 6 with 10 left: %v %s, want a simulated result", i, de, mustJSON(res))
		}
	}
	ask, err := h(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking round: %v %s", err, mustJSON(ask))
	}
	res, err := confirmRound(h, "wipe", args, ask.RequestState, "accept")
	if got := codeOf(t, res, err); got != "" || s.ran != 1 {
		t.Fatalf("confirmed round: %q, handler ran %d times; want it run once (6 of 10 spent)", got, s.ran)
	}
	// 6 does not fit in the 4 left: the real call's refusal, 2 units of
	// 10 an hour away.
	de, _ := dryRun()
	if de == nil || de.Code != mcpguard.CodeSpendLimitExceeded || de.RetryAfter != 12*time.Minute {
		t.Errorf("dry run of 6 with 4 left: %+v, want SPEND_LIMIT_EXCEEDED after 12m0s", de)
	}
	evs := sink.all()
	last := evs[len(evs)-1]
	type rec struct {
		DryRun  bool
		Allowed bool
		Code    string
		Cost    float64
	}
	if diff := cmp.Diff(rec{true, false, string(mcpguard.CodeSpendLimitExceeded), 0}, rec{last.DryRun, last.Allowed, last.Code, last.Cost}); diff != "" {
		t.Errorf("record of the refused dry run (-want +got):\n%s", diff)
	}
	// The refused dry runs counted no call: the two that fitted and the
	// asking round leave two of the five.
	if de, _ := dryRun(); de == nil || de.Code != mcpguard.CodeSpendLimitExceeded {
		t.Errorf("second dry run of 6 with 4 left: %+v, want SPEND_LIMIT_EXCEEDED", de)
	}
	for i, want := range []bool{true, true, false} {
		d := lim.AllowAt(context.Background(), dsT0, limiter.Request{User: "bob", Calls: 1})
		if d.Allowed != want {
			t.Errorf("call %d after the dry runs: allowed %v, want %v (a refused dry run counts no call)", i, d.Allowed, want)
		}
		lim.Release(d)
	}
	if s.ran != 1 {
		t.Errorf("the handler ran %d times, want once (the confirmed call)", s.ran)
	}
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sealAskKey is the handler's own input request key.
const sealAskKey = "zz.handler.ask"

// dryRunAwareMRTRServer serves two DryRunAware write tools whose handlers use
// the multi round-trip (in a dry run too, as a preview may need the same
// input): "zzwipe" needs confirmation, "zzspend" costs 5. writes counts the
// real (not dry-run) second rounds. The client does not retry by itself.
func dryRunAwareMRTRServer(t *testing.T, lim *limiter.Limiter) (*mcp.ClientSession, *atomic.Int64, *memSink) {
	t.Helper()
	writes := new(atomic.Int64)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses[sealAskKey].(*mcp.ElicitResult); ok && r.Action == "accept" && req.Params.RequestState == "zz-own" {
			if dryrun.FromContext(ctx) {
				return textResult("would write"), nil
			}
			writes.Add(1)
			return textResult("written"), nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{sealAskKey: &mcp.ElicitParams{
				Mode: "form", Message: "which account?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			}},
			RequestState: "zz-own",
		}, nil
	}
	schema := json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)
	srv.AddTool(&mcp.Tool{Name: "zzwipe", InputSchema: schema}, h)
	srv.AddTool(&mcp.Tool{Name: "zzspend", InputSchema: schema}, h)
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "zzwipe", Class: policy.Write, Confirm: true},
			{Name: "zzspend", Class: policy.Write, Cost: 5},
		},
		WriteAllowlist: []string{"zzwipe", "zzspend"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	opts := mcpguard.Options{
		Audit:     sink,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Confirmer: testSigner(t, nil),
		Limiter:   lim,
		Tools: map[string]mcpguard.ToolOptions{
			"zzwipe":  {DryRunAware: true},
			"zzspend": {DryRunAware: true},
		},
	}
	cs := connectInstalled(t, srv, pol, &opts, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: elicitCaps()}, "")
	return cs, writes, sink
}

// dryRunThenReal runs the first round of tool as a dry run and returns
// the sealed state; then sends the next round WITHOUT the dry-run meta.
func dryRunThenReal(t *testing.T, cs *mcp.ClientSession, tool string) *mcp.CallToolResult {
	t.Helper()
	args := map[string]any{"target": "db-1"}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: tool, Arguments: args, Meta: mcp.Meta{dryrun.MetaKey: true},
	})
	if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "mcpguard.mrtr1") {
		t.Fatalf("dry-run first round of %s: %v %s", tool, err, mustJSON(res))
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: tool, Arguments: args, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{sealAskKey: &mcp.ElicitResult{Action: "accept"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDryRunSealedStateNeedsConfirmation checks that the sealed state of a
// dry run (never confirmed: nothing happens in it) does not open for a
// next round sent without the dry-run meta: otherwise that round would skip
// the confirmation, and the handler would write for real without the human
// ever being asked. The seal records what its round was, not what the
// tool's rule says.
func TestDryRunSealedStateNeedsConfirmation(t *testing.T) {
	cs, writes, _ := dryRunAwareMRTRServer(t, nil)
	res := dryRunThenReal(t, cs, "zzwipe")
	if writes.Load() != 0 {
		t.Fatalf("a real write of a Confirm tool ran without any confirmation (sealed state from a dry run): %s", mustJSON(res))
	}
}

// TestDryRunSealedStateNotFree checks the same for spend: a dry run spends
// nothing, and a next round charges nothing, so a dry run's sealed state
// sent without the dry-run meta would be a real write of cost 5 under a
// spend limit used up. (A dry run is checked against the spend limit, so
// the limit is used up after its first round, which fits.)
func TestDryRunSealedStateNotFree(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, writes, _ := dryRunAwareMRTRServer(t, lim)
	args := map[string]any{"target": "db-1"}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "zzspend", Arguments: args, Meta: mcp.Meta{dryrun.MetaKey: true},
	})
	if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "mcpguard.mrtr1") {
		t.Fatalf("dry-run first round of zzspend: %v %s", err, mustJSON(res))
	}
	if d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: bob.Principal.Subject, Cost: 5}); !d.Allowed {
		t.Fatalf("the dry run took from the spend limit: %+v", d)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "zzspend", Arguments: args, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{sealAskKey: &mcp.ElicitResult{Action: "accept"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if writes.Load() != 0 {
		t.Fatalf("a real write of cost 5 ran under a spend limit used up (charged as the free retry of a dry run): %s", mustJSON(res))
	}
}

// asker is a handler that asks the user for input itself on its first
// round (state "zz-own") and finishes on the next one; ran counts the
// finished rounds.
type asker struct{ ran atomic.Int64 }

func (a *asker) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if r, ok := req.Params.InputResponses[sealAskKey].(*mcp.ElicitResult); ok && r.Action == "accept" && req.Params.RequestState == "zz-own" {
		a.ran.Add(1)
		return textResult("done"), nil
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{sealAskKey: &mcp.ElicitParams{Mode: "form", Message: "ticket?"}},
		RequestState:  "zz-own",
	}, nil
}

// zzNextRound sends the next round of a handler's multi round-trip.
func zzNextRound(h mcp.ToolHandler, name, args string, prev *mcp.CallToolResult, extra mcp.InputResponseMap) (*mcp.CallToolResult, error) {
	r := req(name, args)
	r.Params.RequestState = prev.RequestState
	r.Params.InputResponses = mcp.InputResponseMap{sealAskKey: &mcp.ElicitResult{Action: "accept"}}
	for k, v := range extra {
		r.Params.InputResponses[k] = v
	}
	return h(context.Background(), r)
}

// TestStandaloneLimitCountsHandlerRetryOnce checks DESIGN.md's "the MRTR
// retry of one logical call counts once" for the stand-alone Limit, as for
// the Guard (TestHandlerMultiRoundTripCountsOnce): under a rate of one
// call, a handler's two rounds pass.
func TestStandaloneLimitCountsHandlerRetryOnce(t *testing.T) {
	p := stepPolicy(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var a asker
	h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), must(t)(mcpguard.Limit(lim, p, &mcpguard.Options{Logger: quiet})))(a.handle)
	first, err := h(context.Background(), req("echo", `{"text":"x"}`))
	if err != nil || first.InputRequests == nil {
		t.Fatalf("first round: %v %s", err, mustJSON(first))
	}
	res, err := zzNextRound(h, "echo", `{"text":"x"}`, first, nil)
	if got := codeOf(t, res, err); got != "" || a.ran.Load() != 1 {
		t.Errorf("second round of one logical call under a 1-call rate: %q, handler finished %d times; want success (counted once, as in the Guard)", got, a.ran.Load())
	}
}

// TestStandaloneConfirmLetsHandlerAsk checks that the stand-alone Confirm,
// like the Guard (TestConfirmedToolHandlerMultiRoundTrip), lets a confirmed
// tool's handler ask for input: the next round carries the handler's state,
// sealed as confirmed, and is not taken for a confirmation state.
func TestStandaloneConfirmLetsHandlerAsk(t *testing.T) {
	p := stepPolicy(t)
	var a asker
	h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), must(t)(mcpguard.Confirm(testSigner(t, nil), p, &mcpguard.Options{Logger: quiet})))(a.handle)
	args := `{"target":"db-1"}`
	ask, err := h(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking round: %v %s", err, mustJSON(ask))
	}
	handlerAsks, err := confirmRound(h, "wipe", args, ask.RequestState, "accept")
	if err != nil || handlerAsks.InputRequests == nil {
		t.Fatalf("confirmed round: %v %s; want the handler's own input request", err, mustJSON(handlerAsks))
	}
	res, err := zzNextRound(h, "wipe", args, handlerAsks, nil)
	if got := codeOf(t, res, err); got != "" || a.ran.Load() != 1 {
		t.Errorf("the handler's next round through the stand-alone Confirm: %q, handler finished %d times; want it to finish once (as through the Guard)", got, a.ran.Load())
	}
}

// TestStandaloneStepsApplyArgLimits checks that each stand-alone step
// applies the policy's argument limits too ("a step used alone never acts
// on a call the policy forbids"): a call over a limit is neither charged
// and run by Limit, nor put to the human by Confirm, nor run by DryRun.
func TestStandaloneStepsApplyArgLimits(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "book", Class: policy.Write, ArgLimits: []policy.ArgLimit{{Field: "seats", Max: 10}}},
			{Name: "book_confirmed", Class: policy.Write, Confirm: true, ArgLimits: []policy.ArgLimit{{Field: "seats", Max: 10}}},
		},
		WriteAllowlist: []string{"book", "book_confirmed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	args := `{"seats":500}`
	if d := p.Decide(bob.Principal, "book", policy.MapArgs{"seats": 500.0}); d.Allowed() {
		t.Fatalf("the policy itself allows the call: %+v", d)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := must(t)
	opts := &mcpguard.Options{Logger: quiet}
	for name, step := range map[string]mcpguard.Middleware{
		"limit":   m(mcpguard.Limit(lim, p, opts)),
		"dry_run": m(mcpguard.DryRun(p, opts)),
	} {
		var s stub
		h := mcpguard.Authenticate(fixed(bob))(step(s.handle))
		if got := codeOfCall(t, h, req("book", args)); got != "FORBIDDEN" || s.ran != 0 {
			t.Errorf("%s alone, seats 500 over the policy's limit of 10: %q, handler ran %d times; want FORBIDDEN, not run", name, got, s.ran)
		}
	}
	var s stub
	h := mcpguard.Authenticate(fixed(bob))(m(mcpguard.Confirm(testSigner(t, nil), p, opts))(s.handle))
	ask, err := h(context.Background(), req("book_confirmed", args))
	if err != nil {
		t.Fatal(err)
	}
	if ask.RequestState != "" {
		res, err := confirmRound(h, "book_confirmed", args, ask.RequestState, "accept")
		t.Errorf("confirm alone asked the human to confirm a call the policy forbids; after accept: %q, handler ran %d times", codeOf(t, res, err), s.ran)
	}
}

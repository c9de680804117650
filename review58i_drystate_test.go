package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview58iDryRunPreviewKeepsConfirmedState: a confirmed write whose
// handler asks for more input (the multi round-trip) hands the client a
// sealed state for its next round. A preview of that next round (the same
// state sent with the dry-run _meta key) does nothing: it must not use the
// state up, or the real next round, which the human confirmed, is refused
// and the human must be asked again. (The reverse, a dry run's state on a
// real call, is refused; see TestReview51DryRunStateOnRealCall.)
func TestReview58iDryRunPreviewKeepsConfirmedState(t *testing.T) {
	cs, writes, sink := dryRunAwareMRTRServer(t, nil)
	ctx := context.Background()
	args := map[string]any{"target": "db-1"}
	// Round 1: the guard asks for the confirmation.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "zzwipe", Arguments: args})
	if err != nil || res.InputRequests[confirm.InputKey] == nil {
		t.Fatalf("first round: %v %s", err, mustJSON(res))
	}
	// Confirmed: the handler runs its first round and asks for input.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{
		Name: "zzwipe", Arguments: args, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}},
	})
	if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "mcpguard.mrtr1c~") {
		t.Fatalf("confirmed round: %v %s", err, mustJSON(res))
	}
	sealed := res.RequestState
	answer := mcp.InputResponseMap{sealAskKey: &mcp.ElicitResult{Action: "accept"}}
	// A preview of the next round.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{
		Name: "zzwipe", Arguments: args, RequestState: sealed, InputResponses: answer,
		Meta: mcp.Meta{dryrun.MetaKey: true},
	})
	if err != nil || res.IsError {
		t.Fatalf("preview of the next round: %v %s", err, mustJSON(res))
	}
	if writes.Load() != 0 {
		t.Fatalf("the preview wrote")
	}
	// Its record says it was a preview (it said "next round", as the real
	// round's).
	if e := r51LastOutcome(t, sink); !e.DryRun || !strings.Contains(e.Detail, "dry run of the next round of a multi round-trip call (its state not used up)") {
		t.Errorf("the preview's record: dry_run %v, detail %q", e.DryRun, e.Detail)
	}
	// The real next round, confirmed by the human.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{
		Name: "zzwipe", Arguments: args, RequestState: sealed, InputResponses: answer,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || writes.Load() != 1 {
		t.Errorf("the confirmed next round was refused after a preview of it (the dry run used up its state): %s", mustJSON(res))
	}
}

// TestReview58iStandaloneConfirmPreviewKeepsState is the same through the
// stand-alone Confirm, which seals and opens a handler's state as the Guard
// does.
func TestReview58iStandaloneConfirmPreviewKeepsState(t *testing.T) {
	p := stepPolicy(t)
	var writes atomic.Int64
	h := func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if a, ok := r.Params.InputResponses[sealAskKey].(*mcp.ElicitResult); ok && a.Action == "accept" && r.Params.RequestState == "zz-own" {
			if dryrun.FromContext(ctx) {
				return textResult("would wipe"), nil
			}
			writes.Add(1)
			return textResult("wiped"), nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{sealAskKey: &mcp.ElicitParams{Mode: "form", Message: "ticket?"}},
			RequestState:  "zz-own",
		}, nil
	}
	opts := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"wipe": {DryRunAware: true}}}
	g := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), must(t)(mcpguard.Confirm(testSigner(t, nil), p, opts)))(h)
	args := `{"target":"db-1"}`
	ask, err := g(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking round: %v %s", err, mustJSON(ask))
	}
	handlerAsks, err := confirmRound(g, "wipe", args, ask.RequestState, "accept")
	if err != nil || handlerAsks.InputRequests == nil {
		t.Fatalf("confirmed round: %v %s", err, mustJSON(handlerAsks))
	}
	preview := req("wipe", args)
	preview.Params.Meta = mcp.Meta{dryrun.MetaKey: true}
	preview.Params.RequestState = handlerAsks.RequestState
	preview.Params.InputResponses = mcp.InputResponseMap{sealAskKey: &mcp.ElicitResult{Action: "accept"}}
	if res, err := g(context.Background(), preview); codeOf(t, res, err) != "" || writes.Load() != 0 {
		t.Fatalf("preview: %v %s, %d writes", err, mustJSON(res), writes.Load())
	}
	res, err := zzNextRound(g, "wipe", args, handlerAsks, nil)
	if got := codeOf(t, res, err); got != "" || writes.Load() != 1 {
		t.Errorf("the confirmed next round after a preview of it: %q, %d writes; want it to run (a dry run must not use up the confirmed state)", got, writes.Load())
	}
}

// TestReview58iDryRunOfConfirmedRoundHidesGuardState: the handler of a
// confirmed call runs its first round, its request carrying neither the
// confirmation's state nor its answer (Options.Confirmer). A preview of that
// round (the confirmed round sent with the dry-run _meta key) runs a
// DryRunAware handler: it must not be handed the guard's confirmation state
// and answer either, which it would take for a next round of its own (and
// refuse as a state it never issued).
func TestReview58iDryRunOfConfirmedRoundHidesGuardState(t *testing.T) {
	var seen atomic.Value
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "zzwipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			seen.Store(fmt.Sprintf("dry=%v state=%q responses=%d", dryrun.FromContext(ctx), r.Params.RequestState, len(r.Params.InputResponses)))
			return textResult("ok"), nil
		})
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "zzwipe", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"zzwipe"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInstalled(t, srv, pol, &mcpguard.Options{
		Audit: &memSink{}, Logger: quiet, Confirmer: testSigner(t, nil),
		Tools: map[string]mcpguard.ToolOptions{"zzwipe": {DryRunAware: true}},
	}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: elicitCaps()}, "")
	ctx := context.Background()
	args := map[string]any{"target": "db-1"}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "zzwipe", Arguments: args})
	if err != nil || res.InputRequests[confirm.InputKey] == nil {
		t.Fatalf("first round: %v %s", err, mustJSON(res))
	}
	accept := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}
	prev, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name: "zzwipe", Arguments: args, RequestState: res.RequestState, InputResponses: accept,
		Meta: mcp.Meta{dryrun.MetaKey: true},
	})
	if err != nil || prev.IsError {
		t.Fatalf("preview of the confirmed round: %v %s", err, mustJSON(prev))
	}
	if got, want := seen.Load(), `dry=true state="" responses=0`; got != want {
		t.Errorf("the DryRunAware handler of a preview of the confirmed round saw %v; want %s (a confirmed round's handler sees neither the guard's state nor its answer)", got, want)
	}
	// The real confirmed round still runs, its handler seeing a first round.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "zzwipe", Arguments: args, RequestState: res.RequestState, InputResponses: accept})
	if err != nil || res.IsError {
		t.Fatalf("confirmed round after its preview: %v %s", err, mustJSON(res))
	}
	if got, want := seen.Load(), `dry=false state="" responses=0`; got != want {
		t.Errorf("confirmed round's handler saw %v; want %s", got, want)
	}
}

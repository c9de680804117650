package mcpguard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61hFailOpenSlotOverwritten: 977d6e8 lets only the limiter that
// set the stand-alone Audit's fail-open mark clear it, but keeps one
// limiter in the slot (auditCtx.openLim). In the documented chain
// Chain(Audit, Authenticate, Limit(fleet), Confirm(s, p, {Limiter: local}),
// Limit(local)) on an older client (asked within the call), the fleet
// limiter's store is down (fail open: openLim = fleet); the local
// limiter's check in the round that asks fails open too (openLim = local);
// its store is back by the time the human accepts, and its charge clears
// the mark, the fleet's included. The call ran without the fleet's caps;
// its record does not say audit.DetailFailOpen.
func TestReview61hFailOpenSlotOverwritten(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	rate := []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}
	fleetStore := &r57DownStore{MemoryStore: limiter.NewMemoryStore()}
	fleetStore.down.Store(true) // down for the whole call
	fleet, err := limiter.New(rate, &limiter.Options{Store: fleetStore, FailOpenWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	localStore := &r57DownStore{MemoryStore: limiter.NewMemoryStore()}
	localStore.down.Store(true) // back while the human reads
	local, err := limiter.New(rate, &limiter.Options{Store: localStore, FailOpenWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auditStep, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	limFleet, err := mcpguard.Limit(fleet, pol, &mcpguard.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	confirmStep, err := mcpguard.Confirm(testSigner(t, nil), pol, &mcpguard.Options{Logger: log, Limiter: local})
	if err != nil {
		t.Fatal(err)
	}
	limLocal, err := mcpguard.Limit(local, pol, &mcpguard.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	var ran atomic.Int32
	h := mcpguard.Chain(mcpguard.Recover(log), auditStep, mcpguard.Authenticate(auth), limFleet, confirmStep, limLocal)(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return textResult("wiped"), nil
		})
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		localStore.down.Store(false)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: accept})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || ran.Load() != 1 {
		t.Fatalf("the call was not carried out (ran %d, code %q)", ran.Load(), errorCode(t, res))
	}
	var outcome []audit.Event
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome {
			outcome = append(outcome, e)
		}
	}
	if len(outcome) != 1 {
		t.Fatalf("%d outcome records, want 1: %+v", len(outcome), outcome)
	}
	if !strings.Contains(outcome[0].Detail, audit.DetailFailOpen) {
		t.Errorf("record detail %q: the call ran without the fleet limiter's caps (its store down all "+
			"along, fail open), but the record does not say %q: the local limiter's later charge "+
			"cleared the fleet's mark", outcome[0].Detail, audit.DetailFailOpen)
	}
}

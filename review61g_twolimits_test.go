package mcpguard_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61gFailOpenClearedByOtherLimiter: 8a58e2b makes "the call's
// last limiter decision" set the fail-open mark (audit.DetailFailOpen) of
// the stand-alone Audit's record, which the steps inside it share. With
// two limiters chained (a shared Redis-backed one for the fleet, say, and
// an in-memory one for a tool), a call the first admitted only because its
// store failed is recorded as capped when the second, a different limiter
// with a working store, admits it: its decision clears the first's mark,
// and the operator counting the calls that ran uncapped during the outage
// misses it. The audit doc says the record tells "that the limiter
// admitted the call only because its store failed".
func TestReview61gFailOpenClearedByOtherLimiter(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	down := &r57DownStore{MemoryStore: limiter.NewMemoryStore()}
	down.down.Store(true)
	fleet, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}},
		&limiter.Options{Store: down, FailOpenReads: true})
	if err != nil {
		t.Fatal(err)
	}
	local, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{Logger: slog.New(slog.DiscardHandler)}
	limFleet, err := mcpguard.Limit(fleet, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	limLocal, err := mcpguard.Limit(local, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auditStep, err := mcpguard.Audit(sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	ran := 0
	h := mcpguard.Chain(mcpguard.Recover(opts.Logger), auditStep, mcpguard.Authenticate(auth), limFleet, limLocal)(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	res, err := h(context.Background(), r61cCall("r"))
	if err != nil || res == nil || res.IsError || ran != 1 {
		t.Fatalf("the call was not admitted (ran %d, code %q, err %v)", ran, r61cCode(res), err)
	}
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d records, want 1", len(evs))
	}
	if !strings.Contains(evs[0].Detail, audit.DetailFailOpen) {
		t.Errorf("record detail %q: the call ran without the fleet limiter's caps (its store down, "+
			"fail open), but the record does not say %q", evs[0].Detail, audit.DetailFailOpen)
	}
}

package mcpguard_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview44aWriteAheadFailureIsLogged: the stand-alone WriteAhead, like
// the Guard's step 10, logs at error level the write it refused because its
// intent could not be recorded, with the tool, the correlation id its
// refusal carries and the sink's error, and its outcome record says why.
func TestReview44aWriteAheadFailureIsLogged(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}, WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	opts := &mcpguard.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	sink := &intentFailSink{}
	sink.down.Store(true)
	ahead, err := mcpguard.WriteAhead(sink, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := mcpguard.Chain(mustAudit(t, sink, opts), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol), ahead)(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
		})
	res, err := h(context.Background(), req("pay", `{}`))
	if code := codeOf(t, res, err); code != string(mcpguard.CodeAuditUnavailable) || ran != 0 {
		t.Fatalf("pay with the trail down: %q, handler ran %d times; want AUDIT_UNAVAILABLE, not run", code, ran)
	}
	checkWriteAheadLogged(t, &logs, res, "pay", "disk full")
	evs := sink.all()
	if len(evs) != 1 || evs[0].Phase != audit.PhaseOutcome || evs[0].Code != string(mcpguard.CodeAuditUnavailable) ||
		evs[0].Detail != "write-ahead intent not recorded" {
		t.Errorf("records %+v; want one AUDIT_UNAVAILABLE outcome whose detail says the intent was not recorded", evs)
	}
}

// TestReview44aRefundOncePerAdmission: a Limit step's charge is given back
// once, however often the steps inside it refuse the call: a middleware
// between Limit and WriteAhead that retries a refusal with the same context
// has the charge given back by the first refusal, not a unit another call
// took too (a rate cap of two then still admits only two more calls).
func TestReview44aRefundOncePerAdmission(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}, WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One instant, so that a refund gives back exactly what was charged.
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := &mcpguard.Options{Logger: quiet, Now: func() time.Time { return at }}
	limit, err := mcpguard.Limit(lim, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	sink := &intentFailSink{}
	ahead, err := mcpguard.WriteAhead(sink, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	retry := func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := next(ctx, r)
			if err == nil && res.IsError {
				return next(ctx, r)
			}
			return res, err
		}
	}
	ran := 0
	h := mcpguard.Chain(mustAudit(t, sink, opts), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol), limit, retry, ahead)(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
		})
	for i, s := range []struct {
		down bool
		want string
	}{
		{false, ""},
		{true, string(mcpguard.CodeAuditUnavailable)}, // refused twice, charged once
		{false, ""},
		{false, string(mcpguard.CodeRateLimitExceeded)},
	} {
		sink.down.Store(s.down)
		res, err := h(context.Background(), req("pay", `{}`))
		if got := codeOf(t, res, err); got != s.want {
			t.Fatalf("call %d: %q, want %q", i, got, s.want)
		}
	}
	if ran != 2 {
		t.Errorf("handler ran %d times, want 2", ran)
	}
}

package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowStore decides nothing before its caller's context ends, as a store
// slower than a client that hangs up.
type slowStore struct{}

func (slowStore) Apply(ctx context.Context, _ time.Time, _ *limiter.Batch) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestLimiterClientGoneRecorded: a call whose client went away while the
// limiter's store decided is refused (limiter: never let through by
// fail-open), and its record and log say so: not "the rate limiter is
// unavailable" at Error, which would page an operator for a client that
// hung up.
func TestLimiterClientGoneRecorded(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Hour}},
		&limiter.Options{Store: slowStore{}, FailOpenReads: true})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	var logs bytes.Buffer
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	h, err := g.Wrap(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran = true
			return &mcp.CallToolResult{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "search", Arguments: json.RawMessage(`{}`)}})
	if ran || (err == nil && (res == nil || !res.IsError)) {
		t.Fatalf("a call whose client went away ran (%v) or was answered %+v, %v", ran, res, err)
	}
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d records, want 1", len(evs))
	}
	if d := evs[0].Detail; !strings.Contains(d, "client went away") {
		t.Errorf("record detail %q, want it to say the client went away", d)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("logged at Error for a client that went away:\n%s", logs.String())
	}
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A handler that [mcpguard.Guard.Wrap] protects is a raw one: the go-sdk's
// typed-tool wrapper is never below it. Yet d134a0c took its error for the
// wrapper's refusal of the arguments when its text was the one the wrapper
// would give: a write handler that ran and failed with the caller's text
// (here its note) was answered INVALID_ARGUMENTS, recorded as not run, and
// given back its charge.
func TestReview17hWrappedHandlerIsNeverTheSDKs(t *testing.T) {
	const sdkText = `validating "arguments": validating root: validating /properties/amount: multipleOf: 1261007895663739/18014398509481984 is not a multiple of 0.010000`
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "price", Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{"price"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	var ran atomic.Int64
	err = g.AddTool(srv, &mcp.Tool{Name: "price", InputSchema: json.RawMessage(priceSchema)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in priceIn
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		ran.Add(1) // the price is set
		var res mcp.CallToolResult
		res.SetError(errors.New(in.Note))
		return &res, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectPlain(t, srv, nil)
	res, err := call(t, cs, "price", map[string]any{"amount": json.Number("0.07"), "note": sdkText})
	code, msg, retry := refusalOf(t, res, err)
	if n := ran.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
	if code != string(mcpguard.CodeInternal) || !strings.Contains(msg, "may have been made") || retry {
		t.Errorf("%s %q (retryable %v); want INTERNAL, the write may have been made, not retryable", code, msg, retry)
	}
	if evs := sink.all(); len(evs) != 2 || evs[1].Cost != 1 || strings.Contains(evs[1].Detail, "not run") {
		t.Errorf("records %+v; want the intent and an outcome of cost 1 that does not say the handler was not run", evs)
	}
}

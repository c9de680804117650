package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r65aRefundIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

// TestReview65mDescribeDefaults: doc.go (65j) says the wrapper fills in
// the input schema's defaults, so "the question that asks a human to
// confirm a call of such a tool shows the arguments with them filled in";
// only limits, Cost and a dry run's preview see the arguments as sent. A
// tool with a ToolOptions.Describe (the documented way to word the
// question) is asked about with Describe given the arguments as sent: the
// refund's Describe renders "refund <nil> on order A-1", the human
// approves it, and the handler runs with amount 500, the schema's default.
// Want: Describe, for the question, given the arguments the handler runs
// with (amount 500).
func TestReview65mDescribeDefaults(t *testing.T) {
	const schema = `{"type":"object","properties":{"order":{"type":"string"},` +
		`"amount":{"type":"number","default":500}},"required":["order"],"additionalProperties":false}`
	var mu sync.Mutex
	var got []float64
	r := r65jServeWith(t, "2025-11-25", "refund", mcpguard.Options{
		Tools: map[string]mcpguard.ToolOptions{"refund": {Describe: func(_ string, args map[string]any) string {
			return fmt.Sprintf("refund %v on order %v", args["amount"], args["order"])
		}}},
	}, func(srv *mcp.Server) {
		mcp.AddTool(srv, &mcp.Tool{Name: "refund", InputSchema: json.RawMessage(schema)},
			func(_ context.Context, _ *mcp.CallToolRequest, in r65aRefundIn) (*mcp.CallToolResult, any, error) {
				mu.Lock()
				got = append(got, in.Amount)
				mu.Unlock()
				return textResult("refunded"), nil, nil
			})
	})
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: json.RawMessage(`{"order":"A-1"}`)})
	mu.Lock()
	defer mu.Unlock()
	asked := r.questions()
	if len(got) > 0 && (len(asked) != 1 || !strings.Contains(asked[0], "refund 500 on order A-1")) {
		t.Errorf("the human was asked %q and the handler ran with amount %v (%s, %v); "+
			"want the question to say refund 500", asked, got, mustJSON(res), err)
	}
}

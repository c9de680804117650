package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
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
	ctx := context.Background()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Audit: &memSink{}, Confirmer: testSigner(t, nil), Logger: quiet,
		Tools: map[string]mcpguard.ToolOptions{"refund": {Describe: func(_ string, args map[string]any) string {
			return fmt.Sprintf("refund %v on order %v", args["amount"], args["order"])
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	var mu sync.Mutex
	var got []float64
	var asked []string
	mcp.AddTool(srv, &mcp.Tool{Name: "refund", InputSchema: json.RawMessage(schema)},
		func(_ context.Context, _ *mcp.CallToolRequest, in r65aRefundIn) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			got = append(got, in.Amount)
			mu.Unlock()
			return textResult("refunded"), nil, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth.mu.Lock()
	auth.ids[ss] = alice
	auth.mu.Unlock()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund", Arguments: json.RawMessage(`{"order":"A-1"}`)})
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 0 && (len(asked) != 1 || !strings.Contains(asked[0], "refund 500 on order A-1")) {
		t.Errorf("the human was asked %q and the handler ran with amount %v (%s, %v); "+
			"want the question to say refund 500", asked, got, mustJSON(res), err)
	}
}

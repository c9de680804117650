package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r65gTransferIn struct {
	ToAccount int64 `json:"to_account"`
}

// TestReview65gTypedBigIntConfirmed: a typed tool (mcp.AddTool) whose
// confirmed write takes an int64 account number. The human was asked to
// confirm "to_account=12345678901234567", and approved; the handler then
// got 12345678901234568, another account: go-sdk v1.8.0's wrapper reads
// the arguments into a map with every number a float64 and writes them
// back before it decodes the struct. The confirmation promises that the
// human approves exactly the call that runs (the arguments as the handler
// decodes them): such an integer is refused INVALID_ARGUMENTS before
// anyone is asked (wideints.go), and one a float64 holds exactly
// (9007199254740994, 2^53+2) reaches the handler as sent.
func TestReview65gTypedBigIntConfirmed(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			var got []int64
			r := r65jServe(t, v, func(srv *mcp.Server) {
				mcp.AddTool(srv, &mcp.Tool{Name: "transfer"},
					func(_ context.Context, _ *mcp.CallToolRequest, in r65gTransferIn) (*mcp.CallToolResult, any, error) {
						mu.Lock()
						got = append(got, in.ToAccount)
						mu.Unlock()
						return textResult("sent"), nil, nil
					})
			})
			cs := r.cs
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer",
				Arguments: json.RawMessage(`{"to_account":12345678901234567}`)})
			d, ok := mcpguard.DenialOf(res, err)
			if !ok || d.Code != mcpguard.CodeInvalidArguments || d.Details["field"] != "/to_account" {
				t.Errorf("to_account=12345678901234567: %s, %v; want INVALID_ARGUMENTS at /to_account", mustJSON(res), err)
			}
			mu.Lock()
			if asked := r.questions(); len(asked) != 0 || len(got) != 0 {
				t.Errorf("refused call: asked %q, handler ran with %v; want neither", asked, got)
			}
			got = nil
			mu.Unlock()
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer",
				Arguments: json.RawMessage(`{"to_account":9007199254740994}`)})
			if err != nil || res.IsError {
				t.Fatalf("to_account=9007199254740994: %s, %v; want it run", mustJSON(res), err)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked := r.questions(); len(asked) != 1 || !strings.Contains(asked[0], "9007199254740994") {
				t.Errorf("asked %q; want one question naming to_account=9007199254740994", asked)
			}
			if len(got) != 1 || got[0] != 9007199254740994 {
				t.Errorf("the handler ran with %v; want [9007199254740994]", got)
			}
		})
	}
}

// TestReview65WideIntegerRawWrap: a raw handler guarded by Guard.Wrap gets
// the arguments' bytes as sent, and can read 12345678901234567 exactly:
// the guard does not refuse it there (it refuses it for Install's tools,
// which may be typed ones).
func TestReview65WideIntegerRawWrap(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "lookup", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: &memSink{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var got json.RawMessage
	h, err := g.Wrap(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			got = req.Params.Arguments
			return textResult("ok"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "lookup",
		Arguments: json.RawMessage(`{"id":12345678901234567}`)}})
	if err != nil || res.IsError || string(got) != `{"id":12345678901234567}` {
		t.Errorf("Wrap: %s, %v, handler got %s; want it run with the id as sent", mustJSON(res), err, got)
	}
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r65aAccountIn struct {
	Account uint64 `json:"account"`
}

// TestReview65mUnsignedWithoutMinimum: a typed tool (mcp.AddTool) whose
// account is a uint64, with an input schema of its own that says
// "integer" and no minimum. doc.go promises: "where a tool's input schema
// says "integer", such an integer [one a float64 cannot hold exactly] is
// refused INVALID_ARGUMENTS". The guard takes an "integer" without a
// non-negative minimum for an int64, and lets 12345678901234567890 (beyond
// int64, within uint64) through as one the wrapper would refuse; the
// wrapper decodes it into the uint64 as 12345678901234567168, another
// account. Refusing it costs nothing where the field is an int64 (the
// wrapper refuses it there anyway).
func TestReview65mUnsignedWithoutMinimum(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "lookup", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Audit: &memSink{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	var mu sync.Mutex
	var got []uint64
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"account":{"type":"integer"}}}`)},
		func(_ context.Context, _ *mcp.CallToolRequest, in r65aAccountIn) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			got = append(got, in.Account)
			mu.Unlock()
			return textResult("found"), nil, nil
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
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup",
		Arguments: json.RawMessage(`{"account":12345678901234567890}`)})
	mu.Lock()
	defer mu.Unlock()
	d, ok := mcpguard.DenialOf(res, err)
	if !ok || d.Code != mcpguard.CodeInvalidArguments || len(got) != 0 {
		t.Errorf("account=12345678901234567890: %s, %v, handler ran with %v; want INVALID_ARGUMENTS, not run",
			mustJSON(res), err, got)
	}
}

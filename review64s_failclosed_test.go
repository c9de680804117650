package mcpguard_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64sNoWriteAheadFailClosed: AuditFailClosed lets a write whose
// outcome record could not be written keep its result because "its durable
// intent event stands for it". With NoWriteAhead there is no intent event:
// the pair, which New accepts without a word, answers a write that the
// audit trail has no record of at all as a plain success, the one thing
// AuditFailClosed is set to prevent. Either New refuses the pair, or the
// write's answer must tell the caller its record failed (as a write that
// may have been made, not retryable).
func TestReview64sNoWriteAheadFailClosed(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	var ran atomic.Int64
	mcp.AddTool(srv, &mcp.Tool{Name: "order"},
		func(context.Context, *mcp.CallToolRequest, orderIn) (*mcp.CallToolResult, orderOut, error) {
			ran.Add(1)
			return nil, orderOut{OrderID: "O-1", Status: "placed"}, nil
		})
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "order", Class: policy.Write}},
		WriteAllowlist: []string{"order"},
	})
	if err != nil {
		t.Fatal(err)
	}
	down := audit.SinkFunc(func(context.Context, *audit.Event) error { return errors.New("disk full") })
	opts := &mcpguard.Options{
		Audit: down, NoWriteAhead: true, AuditFailClosed: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if _, err := mcpguard.New(pol, fixed(bob), opts); err != nil {
		return // refusing the pair is a fix
	}
	cs := connectInstalled(t, srv, pol, opts, nil, "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "order", Arguments: map[string]any{"item": "x"}})
	if ran.Load() != 1 {
		t.Fatalf("the write ran %d times, want 1", ran.Load())
	}
	if err == nil && res != nil && !res.IsError {
		t.Errorf("NoWriteAhead with AuditFailClosed: a write of which the trail has no record at all "+
			"(no intent, its outcome failed) is answered as a success: %+v", res.StructuredContent)
	}
}

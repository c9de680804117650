package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAuditFailClosedWithKeeper checks that with AuditFailClosed a read whose
// outcome record cannot be written is refused when the sink is a Keeper: a
// JSONL sink with BufferSize 1 on a file whose writes fail (/dev/full) must
// report the failure of each handed-over record, as Write does.
func TestAuditFailClosedWithKeeper(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := audit.OpenJSONL("/dev/full", &audit.JSONLOptions{BufferSize: 1, FlushInterval: -1})
	if err != nil {
		t.Fatalf("cannot open /dev/full: %v", err)
	}
	defer sink.Close()
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet, AuditFailClosed: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for range 3 {
		r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)}}
		res, err := h(context.Background(), r)
		if err == nil && res != nil && !res.IsError {
			allowed++
		}
	}
	if allowed > 0 {
		t.Errorf("%d of 3 reads allowed with AuditFailClosed although no outcome record can be written (every write fails with ENOSPC)", allowed)
	}
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review41DefaultsIn is the input of a typed tool whose schema gives mode a
// default.
type review41DefaultsIn struct {
	Amount float64 `json:"amount"`
	Mode   string  `json:"mode,omitempty"`
	Note   string  `json:"note,omitempty"`
}

// TestReview41SDKRefusalAfterDefaults: the go-sdk's typed-tool wrapper
// fills in a schema's defaults before it validates, and the guard, which
// validates the arguments as sent, works its refusal out the same way: with
// mode defaulted, dependentRequired asks for a note, so {"amount":1} is
// refused below the guard, before the handler runs, and answered as
// INVALID_ARGUMENTS, charged nothing.
func TestReview41SDKRefusalAfterDefaults(t *testing.T) {
	const schema = `{"type":"object","properties":{"amount":{"type":"number"},` +
		`"mode":{"type":"string","default":"fast"},"note":{"type":"string"}},` +
		`"required":["amount"],"dependentRequired":{"mode":["note"]}}`
	sink := &memSink{}
	var ran atomic.Int64
	cs := writeToolGuard(t, "dflt", &mcpguard.Options{Audit: sink, Logger: quiet}, func(srv *mcp.Server) {
		tool := &mcp.Tool{Name: "dflt", InputSchema: json.RawMessage(schema)}
		mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, in review41DefaultsIn) (*mcp.CallToolResult, any, error) {
			ran.Add(1)
			return textResult("set"), nil, nil
		})
	})
	checkNotRunRefusal(t, cs, "dflt", `{"amount":1}`, &ran, sink, map[string]any{"amount": 1, "note": "x"})
}

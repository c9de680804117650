package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64sOutputCapHandlerRefusal: MaxOutputBytes "caps the size of a
// tool's result (a tool error's too)"; a result over it "is refused as
// INVALID_RESPONSE". A typed tool whose handler refuses with a
// *DenialError (which the go-sdk's wrapper puts in a tool-error result with
// SetError) of a long message or large Details, or a raw one that returns
// such a refusal's Result, is answered with that refusal whatever its size:
// under a cap of 1 KiB the client gets a tool error of some 200 KB (the
// message twice, in the text and the structured content), the cap unchecked.
func TestReview64sOutputCapHandlerRefusal(t *testing.T) {
	const maxOut = 1024
	big := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name string
		d    func() *mcpguard.DenialError
		res  bool // a raw handler returns d.Result() instead
	}{
		{"typed/message", func() *mcpguard.DenialError { return mcpguard.Deny(mcpguard.CodeForbidden, big) }, false},
		{"typed/details", func() *mcpguard.DenialError {
			d := mcpguard.Deny(mcpguard.CodeForbidden, "no")
			d.Details = map[string]any{"rows": big}
			return d
		}, false},
		{"raw/result", func() *mcpguard.DenialError { return mcpguard.Deny(mcpguard.CodeForbidden, big) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			if tc.res {
				srv.AddTool(&mcp.Tool{Name: "look", InputSchema: map[string]any{"type": "object"}},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return tc.d().Result(), nil
					})
			} else {
				mcp.AddTool(srv, &mcp.Tool{Name: "look"},
					func(context.Context, *mcp.CallToolRequest, orderIn) (*mcp.CallToolResult, orderOut, error) {
						return nil, orderOut{}, tc.d()
					})
			}
			pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "look", Class: policy.Read}}})
			if err != nil {
				t.Fatal(err)
			}
			opts := &mcpguard.Options{
				Audit: &memSink{}, MaxOutputBytes: maxOut,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			}
			cs := connectInstalled(t, srv, pol, opts, nil, "")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "look", Arguments: map[string]any{"item": "x"}})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			n := 0
			for _, c := range res.Content {
				if text, ok := c.(*mcp.TextContent); ok {
					n += len(text.Text)
				}
			}
			d, _ := mcpguard.DenialOf(res, nil)
			if n > maxOut {
				code := mcpguard.Code("")
				if d != nil {
					code = d.Code
				}
				t.Errorf("MaxOutputBytes %d: the tool's refusal came through with %d bytes of text (code %s), "+
					"want INVALID_RESPONSE", maxOut, n, code)
			}
		})
	}
}

// TestReview64sDeepHandlerRefusal: step 11 refuses a result with a part
// nested more than 512 levels deep, as the MaxOutputBytes doc says,
// because "the go-sdk's client refuses a message nested beyond 1000 levels
// and closes its session". A handler's own *DenialError whose Details nest
// 1200 levels deep skips that check: the guard renders it as the call's
// refusal (a tool error, or a JSON-RPC error with ProtocolErrors), and the
// client's session is closed; its next request fails.
func TestReview64sDeepHandlerRefusal(t *testing.T) {
	for _, pe := range []bool{false, true} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "look", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var v any = 1
				for range 1200 {
					v = map[string]any{"a": v}
				}
				d := mcpguard.Deny(mcpguard.CodeForbidden, "no")
				d.Details = map[string]any{"x": v}
				return nil, d
			})
		pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "look", Class: policy.Read}}})
		if err != nil {
			t.Fatal(err)
		}
		opts := &mcpguard.Options{
			Audit: &memSink{}, ProtocolErrors: pe,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		cs := connectInstalled(t, srv, pol, opts, nil, "")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "look", Arguments: map[string]any{}})
		if _, lerr := cs.ListTools(context.Background(), nil); lerr != nil {
			t.Errorf("ProtocolErrors %v: the tool's deeply nested refusal closed the client's session "+
				"(call: res %v, err %v; next request: %v)", pe, res != nil, err, lerr)
		}
	}
}

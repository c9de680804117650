package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPrintPinsLongTimeout: --print-pins with the longest --timeout the
// flag takes lists the downstream's tools; its deadline, twice the
// timeout, must not overflow into one already past.
func TestPrintPinsLongTimeout(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup"}, func(context.Context, *mcp.CallToolRequest, pinArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(down.Close)
	for _, timeout := range []time.Duration{time.Duration(math.MaxInt64), time.Duration(math.MaxInt64/2 + 1)} {
		var out bytes.Buffer
		if err := printPins(context.Background(), slog.New(slog.DiscardHandler), down.URL, timeout, &out); err != nil {
			t.Errorf("timeout %v: %v", timeout, err)
			continue
		}
		var pins map[string]string
		if err := json.Unmarshal(out.Bytes(), &pins); err != nil || len(pins["lookup"]) != 64 {
			t.Errorf("timeout %v: wrote %q (%v)", timeout, out.String(), err)
		}
	}
}

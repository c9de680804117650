package gateway

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview59hTransientStatusOK500: the package doc says a go-sdk client
// (v1.8.0) takes 429, 500, 502, 503 and 504 for transient failures of its
// transport, reading no body, and that Options.TransientStatusOK answers
// "those refusals" 200 instead. The gateway's own 500 (INTERNAL: a Cost
// that cannot price a call, a custom Transport that panicked) stayed 500:
// the go-sdk caller saw "Internal Server Error" alone, not -32603 and the
// gateway's message, with the option on.
func TestReview59hTransientStatusOK500(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, gw := sdkBehindGateway(t, &Options{Logger: discardLogger(), TransientStatusOK: true,
		Cost: func(string, policy.Args) float64 { return math.NaN() }}, false)
	cs := connect(t, ctx, gw.URL+"/mcp", "viewer-token")
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record",
		Arguments: map[string]any{"customer_id": "CUST-00001"}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != CodeInternal || !strings.Contains(je.Message, "cost of the call") {
		t.Errorf("a call the Cost cannot price, TransientStatusOK: %v, want the gateway's -32603 and its message", err)
	}

	got := postAs(t, gw.URL, viewer, call("7", "get_customer_record", `{"customer_id":"CUST-00001"}`))
	if got.status != http.StatusOK {
		t.Errorf("over HTTP: status %d, want 200 (TransientStatusOK)", got.status)
	}
}

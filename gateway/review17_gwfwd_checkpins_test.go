package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview17CheckPinsCutListing checks CheckPins against a downstream
// whose tools/list answer is cut inside an event: CheckPins fails, with
// an error that says the answer was cut, and no panic escapes the
// in-process request (the gateway aborts a cut answer with
// http.ErrAbortHandler).
func TestReview17CheckPinsCutListing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var resets atomic.Int64
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer(&resets) }, nil)
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"method":"tools/list"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			chunk("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"na"))
	}))
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.CheckPins(ctx, &policy.Principal{Subject: "pins-check", Roles: []string{"admin"}})
	if err == nil || strings.Contains(err.Error(), "panic") {
		t.Fatalf("CheckPins = %d, %v; want an error, not a panic's", n, err)
	}
	// The same listing through the in-process transport CheckPins uses:
	// its body ends with an error that says the answer was cut.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://mcpguard-gateway.invalid/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := inProcess{g: g, caller: &policy.Principal{Subject: "pins-check"}}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil || !strings.Contains(err.Error(), "cut short") || strings.Contains(err.Error(), "panic") {
		t.Errorf("in process: %d %q, read error %v; want one saying the answer was cut short", resp.StatusCode, b, err)
	}
}

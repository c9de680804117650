package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview59TransientStatusOK: with Options.TransientStatusOK, a go-sdk
// client whose call the gateway refuses for a cap (429) or a downstream
// gone (502) gets the gateway's JSON-RPC error, its code and for the cap
// retry_after_seconds, where without it gets the status text alone (see
// TestReview59dGoSDKSeesStatusOnly); the HTTP answer is 200 with the same
// body and Retry-After; a refusal that is not retryable keeps its status.
func TestReview59TransientStatusOK(t *testing.T) {
	get := &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}}
	for _, c := range []struct {
		name  string
		limit bool
		code  int64
	}{
		{"429", true, CodeLimitExceeded},
		{"502", false, CodeUpstreamUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			down, gw := sdkBehindGateway(t, &Options{Logger: discardLogger(), TransientStatusOK: true}, c.limit)
			cs := connect(t, ctx, gw.URL+"/mcp", "viewer-token")
			if c.limit {
				if _, err := cs.CallTool(ctx, get); err != nil {
					t.Fatalf("the first call: %v", err)
				}
			} else {
				down.Close()
			}
			_, err := cs.CallTool(ctx, get)
			var je *jsonrpc.Error
			switch {
			case !c.limit:
				// The go-sdk reads -32003 as its own "connection
				// closed" code, with the gateway's message.
				if !errors.Is(err, mcp.ErrConnectionClosed) || !strings.Contains(err.Error(), "Upstream unavailable") {
					t.Fatalf("502: %v, want the gateway's -32003 and its message", err)
				}
			case !errors.As(err, &je) || int64(je.Code) != c.code:
				t.Fatalf("%s: %v, want the gateway's JSON-RPC error %d", c.name, err, c.code)
			}
			// The session goes on: a refusal after it is read as ever.
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "admin_reset_key", Arguments: map[string]any{"key_id": "K"}}); !errors.As(err, &je) || je.Code != CodeForbidden {
				t.Errorf("%s: a call after it: %v, want the JSON-RPC error %d", c.name, err, CodeForbidden)
			}
			if c.limit {
				_, err = cs.CallTool(ctx, get)
				if !errors.As(err, &je) || int64(je.Code) != c.code {
					t.Fatalf("429 again: %v", err)
				}
				var data struct {
					RetryAfter int64 `json:"retry_after_seconds"`
				}
				if json.Unmarshal(je.Data, &data) != nil || data.RetryAfter < 1 {
					t.Errorf("429: data %s, want retry_after_seconds", je.Data)
				}
			}

			// The same over plain HTTP: 200, the error and Retry-After.
			rg := &rig{url: gw.URL}
			got := rg.post(t, viewer, call("7", "get_customer_record", `{"customer_id":"CUST-00001"}`), "Mcp-Protocol-Version", "2025-11-25")
			var body struct {
				ID    int `json:"id"`
				Error struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(got.body), &body); err != nil || got.status != http.StatusOK || body.ID != 7 || body.Error.Code != c.code {
				t.Errorf("%s over HTTP: status %d, %+v (%v), want 200 with error %d", c.name, got.status, body, err, c.code)
			}
			if c.limit && got.header.Get("Retry-After") == "" {
				t.Errorf("429 over HTTP: no Retry-After")
			}

			// Not retryable: 403 stays 403.
			if got := rg.post(t, viewer, call("8", "admin_reset_key", `{"key_id":"K"}`)); got.status != http.StatusForbidden {
				t.Errorf("a forbidden call: status %d, want 403", got.status)
			}
		})
	}
}

// sdkBehindGateway serves a go-sdk stateless JSON server (sdkServer) and a
// gateway with opts in front of it, with a per-user rate of one call an
// hour when rateOne; it returns both servers.
func sdkBehindGateway(t *testing.T, opts *Options, rateOne bool) (down, gw *httptest.Server) {
	t.Helper()
	var resets atomic.Int64
	srv := sdkServer(&resets)
	down = newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	if rateOne {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.Limiter = lim
	}
	g, err := New(down.URL, DemoTokens(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return down, newServer(t, g)
}

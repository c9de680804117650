package gateway

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a bearer token to every request, as an agent's HTTP client would.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

type keyArgs struct {
	KeyID string `json:"key_id"`
}

type customerArgs struct {
	CustomerID string `json:"customer_id"`
}

type record struct {
	CustomerID string `json:"customer_id"`
	Found      bool   `json:"found"`
}

// sdkServer is a real go-sdk server with a read tool and an admin tool that
// counts how often it actually ran.
func sdkServer(resets *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "refund-like", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_customer_record"}, func(_ context.Context, _ *mcp.CallToolRequest, a customerArgs) (*mcp.CallToolResult, record, error) {
		return nil, record{CustomerID: a.CustomerID, Found: a.CustomerID == "CUST-00001"}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "admin_reset_key"}, func(_ context.Context, _ *mcp.CallToolRequest, a keyArgs) (*mcp.CallToolResult, map[string]string, error) {
		resets.Add(1)
		return nil, map[string]string{"status": "key_reset", "key_id": a.KeyID}, nil
	})
	return s
}

func connect(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect as %s: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestGoSDKEndToEnd(t *testing.T) {
	modes := []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{name: "stateless_json", opts: &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{name: "stateful_sse", opts: &mcp.StreamableHTTPOptions{}},
	}
	for _, mode := range modes {
		for _, filter := range []bool{false, true} {
			name := mode.name
			if filter {
				name += "_filtered"
			}
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var resets atomic.Int64
				srv := sdkServer(&resets)
				// Cleanups run last-in first-out: client sessions close
				// first, which ends their GET streams, then the gateway,
				// then the downstream.
				down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, mode.opts))
				g, err := New(down.URL, DemoTokens(), &Options{FilterToolsList: filter, Logger: discardLogger()})
				if err != nil {
					t.Fatal(err)
				}
				gw := newServer(t, g)

				v := connect(t, ctx, gw.URL+"/mcp", "viewer-token")
				tools, err := v.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range tools.Tools {
					names = append(names, tl.Name)
				}
				slices.Sort(names)
				want := []string{"admin_reset_key", "get_customer_record"}
				if filter {
					want = want[1:]
				}
				if diff := cmp.Diff(want, names); diff != "" {
					t.Errorf("viewer tools (-want +got):\n%s", diff)
				}
				res, err := v.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}})
				if err != nil || res.IsError {
					t.Fatalf("viewer get_customer_record: %v %+v", err, res)
				}
				_, err = v.CallTool(ctx, &mcp.CallToolParams{Name: "admin_reset_key", Arguments: map[string]any{"key_id": "KEY-PRIMARY"}})
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != CodeForbidden {
					t.Fatalf("viewer admin_reset_key: err %v, want JSON-RPC %d", err, CodeForbidden)
				}
				// The session survives the refusal.
				if _, err := v.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00002"}}); err != nil {
					t.Fatalf("viewer after refusal: %v", err)
				}
				if n := resets.Load(); n != 0 {
					t.Fatalf("admin_reset_key ran %d times for the viewer", n)
				}

				a := connect(t, ctx, gw.URL+"/mcp", "admin-token")
				res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "admin_reset_key", Arguments: map[string]any{"key_id": "KEY-PRIMARY"}})
				if err != nil || res.IsError {
					t.Fatalf("admin admin_reset_key: %v %+v", err, res)
				}
				if n := resets.Load(); n != 1 {
					t.Fatalf("admin_reset_key ran %d times, want 1", n)
				}
				tools, err = a.ListTools(ctx, nil)
				if err != nil || len(tools.Tools) != 2 {
					t.Fatalf("admin tools: %v %+v", err, tools)
				}
			})
		}
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCheckPinsBeforeServing: CheckPins lists the downstream's tools
// through the gateway in process, so that its pins judge them before any
// client lists: a tool changed since it was pinned (here, while no client
// listed) is withheld by the listing and refused from the first call of a
// client that never lists (one that kept its listing from before), and
// the change is recorded as the CheckPins caller's. Trust-on-first-use
// pins learn the definitions the same way, and a fixed set made from them
// checks a new gateway's first call.
func TestCheckPinsBeforeServing(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{name: "stateless_json", opts: &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{name: "stateful_sse", opts: &mcp.StreamableHTTPOptions{}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var runs atomic.Int64
			srv, set := pinnedServer(&runs)
			down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, mode.opts))
			checker := &policy.Principal{Subject: "pin-check", Roles: []string{"admin"}}
			pins := TrustOnFirstUse()
			sink := &memSink{}
			g, err := New(down.URL, DemoTokens(), &Options{Pins: pins, Audit: sink, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			n, err := g.CheckPins(ctx, checker)
			if err != nil || n != 2 {
				t.Fatalf("CheckPins = %d, %v; want 2 tools", n, err)
			}
			approved, _ := json.Marshal(pins)
			if !strings.Contains(string(approved), `"get_customer_record":"`) || !strings.Contains(string(approved), `"admin_reset_key":"`) {
				t.Fatalf("pins after CheckPins: %s", approved)
			}
			fixed, err := ParsePins(approved)
			if err != nil {
				t.Fatal(err)
			}

			set(poisoned) // while no client listed
			if n, err := g.CheckPins(ctx, checker); err != nil || n != 1 {
				t.Errorf("CheckPins after the change = %d, %v; want 1 (the changed tool withheld)", n, err)
			}
			recorded := false
			for _, e := range sink.since(0) {
				if e.Subject == "pin-check" && e.Tool == "get_customer_record" && e.Code == "TOOL_CHANGED" {
					recorded = true
				}
			}
			if !recorded {
				t.Errorf("no TOOL_CHANGED record as pin-check: %+v", sink.since(0))
			}
			// A gateway started now with the fixed set, checked before it serves.
			g2, err := New(down.URL, DemoTokens(), &Options{Pins: fixed, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := g2.CheckPins(ctx, checker); err != nil || n != 1 {
				t.Errorf("fixed set: CheckPins = %d, %v; want 1", n, err)
			}
			for _, gw := range []*Gateway{g, g2} {
				v := connect(t, ctx, newServer(t, gw).URL+"/mcp", "viewer-token")
				_, err = v.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}})
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != CodeForbidden {
					t.Errorf("first call of the changed tool: %v, want JSON-RPC %d", err, CodeForbidden)
				}
			}
			if runs.Load() != 0 {
				t.Fatalf("the changed tool ran %d times", runs.Load())
			}
		})
	}
}

// TestCheckPinsErrors: CheckPins refuses what it cannot do, with an error
// naming it, and a downstream it cannot list leaves the pins as they were.
func TestCheckPinsErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := &policy.Principal{Subject: "pin-check", Roles: []string{"admin"}}

	noPins, err := New("http://127.0.0.1:1", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noPins.CheckPins(ctx, admin); err == nil || !strings.Contains(err.Error(), "no Pins") {
		t.Errorf("without Pins: %v", err)
	}

	pins := TrustOnFirstUse()
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	g, err := New(down.URL, DemoTokens(), &Options{Pins: pins, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*policy.Principal{nil, {Roles: []string{"admin"}}, {Subject: "a\nb"}, {Subject: "a", Roles: []string{"x,y"}}} {
		if _, err := g.CheckPins(ctx, c); err == nil {
			t.Errorf("caller %+v: no error", c)
		}
	}
	if n, err := g.CheckPins(ctx, admin); err == nil || n != 0 {
		t.Errorf("downstream answering 503: %d, %v; want an error", n, err)
	}
	if out, _ := json.Marshal(pins); string(out) != "{}" {
		t.Errorf("pins after a failed listing: %s", out)
	}

	// A downstream that never answers: ctx ends the listing.
	hang := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that net/http sees the gateway hang up
		<-r.Context().Done()
	}))
	g, err = New(hang.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Timeout: time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	start := time.Now()
	if _, err := g.CheckPins(short, admin); err == nil {
		t.Error("a downstream that never answers: no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("CheckPins took %v after its context ended", d)
	}
}

// TestInProcessCallerOnlyInProcess: the caller CheckPins serves its
// listing as is taken only from a request it made; a network request
// without a token is refused as before, whatever its headers.
func TestInProcessCallerOnlyInProcess(t *testing.T) {
	var runs atomic.Int64
	srv, _ := pinnedServer(&runs)
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || runs.Load() != 0 {
		t.Errorf("a request without a token: %d, ran %d; want 401, never run", resp.StatusCode, runs.Load())
	}
}

package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview16HiddenLooksUnknownOverHTTP: over Streamable HTTP on both
// protocol generations, with a raw client, in each reporting mode, bob's
// calls of admin_stats (which exists; he may not see it) and of a name no
// server has get the same HTTP status, content type and JSON-RPC answer
// byte for byte, whatever the arguments, and records that differ only in
// the name; the admin's call of admin_stats runs.
func TestReview16HiddenLooksUnknownOverHTTP(t *testing.T) {
	argShapes := []any{nil, map[string]any{}, map[string]any{"x": 1}, "str", []any{1}, rawJSON(`{"a":1,"A":2}`)}
	for _, v := range r16Versions {
		for name, o := range map[string]*mcpguard.Options{
			"tool_errors":     {},
			"protocol_errors": {ProtocolErrors: true},
			"not_found_32601": {NotFoundCode: -32601},
		} {
			t.Run(v+"/"+name, func(t *testing.T) {
				s := newR16Server(t, v, contractTools(newSlowGate()), contractPolicy(), o)
				bob := s.connect(t, v, "bob-token")
				for i, args := range argShapes {
					p := func(tool string) map[string]any {
						m := map[string]any{"name": tool}
						if args != nil {
							m["arguments"] = args
						}
						return m
					}
					hidden := bob.postID(7, "tools/call", p("admin_stats"), nil)
					unknown := bob.postID(7, "tools/call", p("admin_nothere"), nil)
					// The answers name the tool called, as the go-sdk's does.
					same := bytes.ReplaceAll(unknown.resp, []byte("admin_nothere"), []byte("admin_stats"))
					if hidden.status != unknown.status || hidden.header.Get("Content-Type") != unknown.header.Get("Content-Type") ||
						!bytes.Equal(hidden.resp, same) {
						t.Errorf("arguments %d: hidden and unknown differ:\nhidden:  %s\nunknown: %s", i, hidden, unknown)
					}
				}
				var hid, unk []audit.Event
				for _, e := range s.sink.all() {
					switch e.Tool {
					case "admin_stats":
						hid = append(hid, e)
					case "admin_nothere":
						unk = append(unk, e)
					}
				}
				// The trail, the operator's, tells them apart by the
				// Detail only (the caller cannot).
				for i := range hid {
					if hid[i].Detail != "hidden from the caller: it lacks a role the tool requires" {
						t.Errorf("record of a hidden call: detail %q, want it to say hidden", hid[i].Detail)
					}
				}
				ignore := cmpopts.IgnoreFields(audit.Event{}, "Time", "CorrelationID", "Tool", "LatencyMS", "Detail")
				if diff := cmp.Diff(unk, hid, ignore); diff != "" || len(hid) != len(argShapes) {
					t.Errorf("records of hidden and unknown calls differ (-unknown +hidden):\n%s", diff)
				}
				alice := s.connect(t, v, "alice-token")
				mustSucceed(t, alice.callTool("admin_stats", map[string]any{}, nil))
			})
		}
	}
}

// TestReview16HiddenChangeNotNotifiedOverHTTP: go-sdk clients of alice
// (admin) and bob over Streamable HTTP, on 2026-07-28 (stateless: they
// hear changes on a subscriptions/listen stream) and 2025-11-25 (stateful:
// on the session's stream): a change to admin_stats reaches alice only; a
// change to echo reaches both. Notifications of one stream arrive in
// order, so bob's count after hearing of echo shows none of admin_stats.
func TestReview16HiddenChangeNotNotifiedOverHTTP(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	for _, v := range r16Versions {
		t.Run(v, func(t *testing.T) {
			s := newR16Server(t, v, contractTools(newSlowGate()), contractPolicy(), nil)
			var heard [2]atomic.Int64
			for i, tok := range []string{"alice-token", "bob-token"} {
				tr := &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: bearerRT{tok}}, MaxRetries: -1}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "watch", Version: "1"}, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { heard[i].Add(1) },
				}).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				if _, err := cs.ListTools(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
			}
			version := 0
			change := func(name string) {
				version++
				s.srv.AddTool(&mcp.Tool{Name: name, Description: fmt.Sprint("v", version), InputSchema: obj, Annotations: ro}, ok)
			}
			// Until both streams are open, change echo (both may see it).
			waitChanged(t, func() { change("echo") }, func() bool { return heard[0].Load() > 0 && heard[1].Load() > 0 })
			a0, b0 := heard[0].Load(), heard[1].Load()
			waitChanged(t, func() { change("admin_stats") }, func() bool { return heard[0].Load() > a0 })
			a1 := heard[0].Load()
			change("echo")
			waitFor(t, func() bool { return heard[1].Load() > b0 && heard[0].Load() > a1 })
			time.Sleep(50 * time.Millisecond) // anything else on its way
			if got := heard[1].Load() - b0; got != 1 {
				t.Errorf("bob heard %d notifications for one change to admin_stats (hidden) and one to echo, want 1", got)
			}
		})
	}
}

// waitChanged makes change every 50ms until done, for up to 5s.
func waitChanged(t *testing.T, change func(), done func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		change()
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			if done() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification within 5s")
		}
	}
}

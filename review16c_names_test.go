package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview16cServedToolsRecordedByName: a record names as its tool only
// a name a tool could have (recordedTool); a name policy.CheckName refuses,
// or over 1024 bytes, is the client's and goes to the detail, escaped and
// cut. But the go-sdk registers such names (it only logs them), and a
// policy with a default rule gave them a rule: the guard served the tool,
// and every record of its calls, the write-ahead intent of a write
// included, had no tool. Such a tool is refused like any other the guard
// cannot check: at Install and by Wrap, and, added later, at call time.
func TestReview16cServedToolsRecordedByName(t *testing.T) {
	for _, tc := range []struct{ label, name string }{
		{"white_space_at_end", "report "},
		{"invisible", "echo\u200b"},
		{"over_1024_bytes", strings.Repeat("r", 1100)},
	} {
		t.Run(tc.label, func(t *testing.T) {
			ran := 0
			tool := &mcp.Tool{Name: tc.name, InputSchema: json.RawMessage(`{"type":"object"}`)}
			handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran++
				return textResult("done"), nil
			}
			// callAndCheck calls the tool; it must be refused as unknown,
			// or else recorded by its name.
			callAndCheck := func(srv *mcp.Server, auth *sessionAuth, sink *memSink, addLate bool) {
				t.Helper()
				ctx := context.Background()
				ct, st := mcp.NewInMemoryTransports()
				ss, err := srv.Connect(ctx, st, nil)
				if err != nil {
					t.Fatal(err)
				}
				auth.mu.Lock()
				auth.ids[ss] = alice
				auth.mu.Unlock()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if addLate {
					// Listed first, so that the session hears of the change.
					if _, err := cs.ListTools(ctx, nil); err != nil {
						t.Fatal(err)
					}
					srv.AddTool(tool, handler)
					time.Sleep(relistWait)
				}
				ran = 0
				before := len(sink.all())
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.name, Arguments: map[string]any{}})
				if ran > 0 {
					for _, e := range sink.all()[before:] {
						if e.Tool != tc.name {
							t.Errorf("late %v: the tool ran; its %s record names tool %.40q, detail %.60q", addLate, e.Phase, e.Tool, e.Detail)
						}
					}
				} else if err != nil && !strings.Contains(err.Error(), "unknown tool") || err == nil && errorCode(t, res) != "TOOL_NOT_FOUND" {
					t.Errorf("late %v: a tool named %.20q: %v %s, want an unknown tool", addLate, tc.name, err, mustJSON(res))
				}
			}
			for _, late := range []bool{false, true} {
				g, auth, sink := newNamesGuard(t)
				if !late {
					if _, err := g.Wrap(tool, handler); err == nil {
						t.Errorf("Wrap of a tool named %.20q: no error", tc.name)
					}
				}
				srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if !late {
					srv.AddTool(tool, handler)
				}
				if err := g.Install(srv); err != nil {
					if late || !strings.Contains(err.Error(), "name") {
						t.Errorf("late %v: Install: %v, want an error about the tool's name", late, err)
					}
					continue
				}
				if !late {
					t.Errorf("Install accepted a tool named %.20q", tc.name)
				}
				callAndCheck(srv, auth, sink, late)
			}
		})
	}
}

func newNamesGuard(t *testing.T) (*mcpguard.Guard, *sessionAuth, *memSink) {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "echo", Class: policy.Write}},
		Default:        &policy.ToolRule{Class: policy.Write},
		WriteAllowlist: []string{"*"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return g, auth, sink
}

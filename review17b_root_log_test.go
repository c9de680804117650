package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A handler's error or panic value often quotes its arguments ("no user
// %s"), which the client chose: up to 64 KiB a string, with a bidi
// override (U+202E is no control character: validation lets it through).
// Log lines carried that text uncut and, in a JSON log, unescaped; they
// now cut it at 2048 bytes and escape it as the tool name is escaped.
func TestReview17bLogLinesCutTheHandlersText(t *testing.T) {
	evil := "\u202e" + strings.Repeat("x", 60_000)
	args := `{"user":` + mustJSON(evil) + `}`
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "who", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: "who", InputSchema: json.RawMessage(`{"type":"object","properties":{"user":{"type":"string"}}}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	user := func(r *mcp.CallToolRequest) string {
		var in struct{ User string }
		json.Unmarshal(r.Params.Arguments, &in)
		return in.User
	}
	fails := func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("no user %s", user(r))
	}
	panics := func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("no user " + user(r))
	}
	guarded := func(t *testing.T, log *slog.Logger, h mcp.ToolHandler) mcp.ToolHandler {
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: &memSink{}, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		w, err := g.Wrap(tool, h)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, tc := range []struct {
		name, want, key string
		h               func(t *testing.T, log *slog.Logger) mcp.ToolHandler
	}{
		{"guard_error", "tool handler failed", "err", func(t *testing.T, log *slog.Logger) mcp.ToolHandler { return guarded(t, log, fails) }},
		{"guard_panic", "tool handler panicked", "panic", func(t *testing.T, log *slog.Logger) mcp.ToolHandler { return guarded(t, log, panics) }},
		{"recover_error", "tool handler failed", "err", func(t *testing.T, log *slog.Logger) mcp.ToolHandler { return mcpguard.Recover(log)(fails) }},
		{"recover_panic", "tool handler panicked", "panic", func(t *testing.T, log *slog.Logger) mcp.ToolHandler { return mcpguard.Recover(log)(panics) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf lockedBuffer
			h := tc.h(t, slog.New(slog.NewJSONHandler(&buf, nil)))
			h(context.Background(), req("who", args))
			var line string
			for l := range strings.Lines(buf.String()) {
				if strings.Contains(l, tc.want) {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no log line %q; log:\n%.2000s", tc.want, buf.String())
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %.300s: %v", line, err)
			}
			got, _ := rec[tc.key].(string)
			if len(got) > 2100 || strings.Contains(got, "\u202e") || !strings.Contains(got, `no user \u202exxx`) {
				t.Errorf("%s of %d bytes: %.200q...; want it escaped (\\u202e) and cut at 2048 bytes", tc.key, len(got), got)
			}
		})
	}

	// A short, plain error is logged as it is.
	var buf lockedBuffer
	h := guarded(t, slog.New(slog.NewJSONHandler(&buf, nil)), fails)
	h(context.Background(), req("who", `{"user":"ann"}`))
	if !strings.Contains(buf.String(), `"err":"no user ann"`) {
		t.Errorf("log of a plain error: %s; want err as it is", buf.String())
	}
}

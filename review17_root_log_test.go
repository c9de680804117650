package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// failingKeeper is an audit.Keeper whose every write fails.
type failingKeeper struct{}

func (failingKeeper) Write(context.Context, *audit.Event) error { return errors.New("sink down") }
func (failingKeeper) Keep(context.Context, *audit.Event, json.RawMessage) error {
	return errors.New("sink down")
}

// A tool name is the client's to choose (up to the size of a request) as
// long as no tool has it. Log lines show it as the audit records do: as
// it is only when a record could carry it as its tool, else quoted and
// escaped (a bidi override as \u202e, which a JSON log keeps as itself)
// and cut at 128 bytes. They carried it uncut and unescaped.
func TestReview17LogLinesQuoteTheClientsToolName(t *testing.T) {
	name := "evil\u202e" + strings.Repeat("x", 100_000)
	pol, err := policy.New(policy.Config{
		Tools:   []policy.ToolRule{{Name: "echo", Class: policy.Read}},
		Default: &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	echo := &mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	guarded := func(t *testing.T, log *slog.Logger, authn mcpguard.Authenticator, sink audit.Sink) mcp.ToolHandler {
		g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: sink, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Wrap(echo, ok)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	panics := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { panic("authenticator bug") })
	for _, tc := range []struct {
		name string
		h    func(t *testing.T, log *slog.Logger) mcp.ToolHandler
		want string // the log line's message
	}{
		{"guard_sink_write", func(t *testing.T, log *slog.Logger) mcp.ToolHandler {
			sink := &memSink{}
			sink.fail.Store(true)
			return guarded(t, log, fixed(bob), sink)
		}, "audit record not written"},
		{"guard_sink_keep", func(t *testing.T, log *slog.Logger) mcp.ToolHandler {
			return guarded(t, log, fixed(bob), failingKeeper{})
		}, "audit record not written"},
		{"guard_panic", func(t *testing.T, log *slog.Logger) mcp.ToolHandler {
			return guarded(t, log, panics, &memSink{})
		}, "panicked"},
		{"audit_step", func(t *testing.T, log *slog.Logger) mcp.ToolHandler {
			sink := &memSink{}
			sink.fail.Store(true)
			m, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			return m(ok)
		}, "audit record not written"},
		{"recover_step_panic", func(t *testing.T, log *slog.Logger) mcp.ToolHandler {
			return mcpguard.Recover(log)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("bug") })
		}, "panicked"},
		{"recover_step_error", func(t *testing.T, log *slog.Logger) mcp.ToolHandler {
			return mcpguard.Recover(log)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("boom")
			})
		}, "tool handler failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf lockedBuffer
			h := tc.h(t, slog.New(slog.NewJSONHandler(&buf, nil)))
			h(context.Background(), req(name, `{}`))
			out := buf.String()
			var line string
			for l := range strings.Lines(out) {
				if strings.Contains(l, tc.want) {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no log line %q; log:\n%.2000s", tc.want, out)
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %.300s: %v", line, err)
			}
			got, _ := rec["tool"].(string)
			if want := `"evil\u202e` + strings.Repeat("x", 121) + `"...`; got != want {
				t.Errorf("%s: log line of %d bytes, tool %.200q...; want %s", tc.name, len(line), got, want)
			}
		})
	}

	// A name a record carries as it is is logged as it is.
	var buf lockedBuffer
	sink := &memSink{}
	sink.fail.Store(true)
	h := guarded(t, slog.New(slog.NewJSONHandler(&buf, nil)), fixed(bob), sink)
	h(context.Background(), req("echo", `{}`))
	if !strings.Contains(buf.String(), `"tool":"echo"`) {
		t.Errorf("log of a call of echo: %s; want tool echo as it is", buf.String())
	}
}

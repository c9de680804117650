package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// panicky is a value whose encoding panics (a MarshalJSON with a bug).
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("marshal bug") }

// Step 11 marshals parts of a handler's result (its _meta, its structured
// content) to measure them and to check that they encode. A part whose
// encoding panicked was caught by the guard's recover as if the guard had
// panicked before the handler ran: a write that had run was answered
// INTERNAL "the tool failed unexpectedly", without "the write may have
// been made", as if a retry were safe.
func TestReview17ePanicOnTheResultOfAWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  func() *mcp.CallToolResult
	}{
		{"meta", func() *mcp.CallToolResult {
			r := textResult("paid")
			r.Meta = mcp.Meta{"receipt": panicky{}}
			return r
		}},
		{"structured_content", func() *mcp.CallToolResult {
			r := textResult("paid")
			r.StructuredContent = map[string]any{"receipt": panicky{}}
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}, WriteAllowlist: []string{"pay"}})
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			var ran atomic.Int64
			h, err := g.Wrap(&mcp.Tool{Name: "pay", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran.Add(1) // the payment is made here
				return tc.res(), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), req("pay", `{}`))
			code, msg, retry := refusalOf(t, res, err)
			if ran.Load() != 1 {
				t.Fatalf("the handler ran %d times, want 1", ran.Load())
			}
			if !strings.Contains(msg, "may have been made") || retry {
				t.Errorf("%s %q (retryable %v); want a refusal saying the write may have been made, not retryable", code, msg, retry)
			}
			if evs := sink.all(); len(evs) != 2 || evs[1].Allowed {
				t.Errorf("records %+v; want the intent and an outcome that is not allowed", evs)
			}
		})
	}
}

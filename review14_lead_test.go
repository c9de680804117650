package mcpguard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDescribeTextCleaned: a tool's own Describe usually quotes arguments
// a model wrote; its text reaches the dry-run summary (and the
// confirmation prompt) without the characters that make a text read
// otherwise than it is: bidirectional overrides, carriage returns,
// terminal escapes. Line feeds stay.
func TestDescribeTextCleaned(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{
		NoWriteAhead: true, Logger: quiet,
		Tools: map[string]mcpguard.ToolOptions{"refund": {
			DryRun: true,
			Describe: func(tool string, args map[string]any) string {
				return "Refund " + args["to"].(string) + "\nfrom the shop account"
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "refund", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}}}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	// "CUST-1" then an override that shows "1000 ot" reversed, a carriage
	// return and an escape that would clear a terminal.
	args, _ := json.Marshal(map[string]string{"to": "CUST-1 \u202e0001\u202c \u2066x\u2069\u200b\ufeff\u2028"})
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "refund", Arguments: args}})
	if err != nil || res == nil {
		t.Fatalf("dry run: %v, %v", res, err)
	}
	b, _ := json.Marshal(res)
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	out := text.String() + string(b)
	for _, bad := range []string{"\u202e", "\u202c", "\u2066", "\u2069", "\u200b", "\ufeff", "\u2028", `\u202e`, `\u2028`} {
		if strings.Contains(out, bad) {
			t.Errorf("the dry-run answer holds %q: %s", bad, b)
		}
	}
	if !strings.Contains(text.String(), "Refund CUST-1 0001 x") {
		t.Errorf("the dry-run text %q lost the visible description", text.String())
	}
}

// TestValidatorRefusesHugeCount: a schema whose count bound the validator
// cannot hold is a start-up error, not a bound of another value.
func TestValidatorRefusesHugeCount(t *testing.T) {
	_, err := mcpguard.NewValidator(json.RawMessage(`{"type":"object","properties":{"tags":{"type":"array","minItems":18446744073709551617}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), "minItems") {
		t.Errorf("NewValidator with minItems 2^64+1: %v, want an error naming minItems", err)
	}
}

// TestDescribeArgsCannotAddLines: a string argument's line breaks reach a
// ToolOptions.Describe as the escape \n, so that the model cannot add a
// line of its own under the author's ("Amount: 1.00" under a real 5000),
// while Describe's own line breaks stay.
func TestDescribeArgsCannotAddLines(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{
		NoWriteAhead: true, Logger: quiet,
		Tools: map[string]mcpguard.ToolOptions{"refund": {
			DryRun: true,
			Describe: func(tool string, args map[string]any) string {
				items, _ := args["items"].([]any)
				return "Amount: 5000\nReason: " + args["reason"].(string) + "\nItem: " + items[0].(string)
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "refund", InputSchema: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},"items":{"type":"array","items":{"type":"string"}}}}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"reason":"late\nAmount: 1.00","items":["a\r\tb"]}`)
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "refund", Arguments: args}})
	if err != nil || res == nil {
		t.Fatalf("dry run: %v, %v", res, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var answer struct{ Summary string }
	if err := json.Unmarshal([]byte(text.String()), &answer); err != nil {
		t.Fatalf("dry-run text %q: %v", text.String(), err)
	}
	got := answer.Summary
	if got != "Amount: 5000\nReason: late\\nAmount: 1.00\nItem: a\\r\\tb" {
		t.Errorf("dry-run text %q: want the argument's line breaks escaped and Describe's own kept", got)
	}
}

// TestRequestIDRecorded: with Options.RequestIDHeader, the id a proxy in
// front sent is each record's request_id, when it can be one.
func TestRequestIDRecorded(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{RequestIDHeader: "X Request"}); err == nil {
		t.Errorf("New with RequestIDHeader %q: nil error", "X Request")
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet, RequestIDHeader: "X-Mcp-Gateway-Request-Id"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		values []string
		want   string
	}{
		{[]string{"0193a1b2c3d4-5e6f708192a3"}, "0193a1b2c3d4-5e6f708192a3"},
		{nil, ""},
		{[]string{"a", "b"}, ""},
		{[]string{"x\ny"}, ""},
		{[]string{"<script>"}, ""},
		{[]string{strings.Repeat("a", 129)}, ""},
		{[]string{strings.Repeat("a", 128)}, strings.Repeat("a", 128)},
	} {
		before := len(sink.all())
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "search", Arguments: json.RawMessage(`{}`)}}
		if tc.values != nil {
			req.Extra = &mcp.RequestExtra{Header: http.Header{"X-Mcp-Gateway-Request-Id": tc.values}}
		}
		h(context.Background(), req)
		evs := sink.all()[before:]
		if len(evs) != 1 || evs[0].RequestID != tc.want {
			t.Errorf("header %q: records %+v, want one with request_id %q", tc.values, evs, tc.want)
		}
	}
}

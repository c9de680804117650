package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHandlerDenialIsTheCallsRefusal: a handler that refuses a call with a
// *DenialError, raw or typed (where the go-sdk's wrapper puts the error in
// a tool-error result), gets the same answer as from the stand-alone
// Recover: a refusal of its own code and message, in the contract's shape,
// carrying the correlation id of the call's record, which records it as
// refused with that code. Before, a raw handler's became INTERNAL, and a
// typed handler's reached the client as the go-sdk's bare text, recorded
// as allowed.
func TestHandlerDenialIsTheCallsRefusal(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "raw", Class: policy.Read}, {Name: "typed", Class: policy.Read}, {Name: "rawwrite", Class: policy.Write}},
		WriteAllowlist: []string{"rawwrite"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	refusal := func() error {
		return mcpguard.Deny(mcpguard.CodeInvalidArguments, "amount exceeds the order total")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "raw", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, refusal() })
	// A write's refusal of a retryable kind: once its handler ran, it is
	// not retryable (the write may have been made).
	srv.AddTool(&mcp.Tool{Name: "rawwrite", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &mcpguard.DenialError{Code: mcpguard.CodeUpstreamUnavailable, Message: "amount exceeds the order total", RetryAfter: 5 * time.Second}
		})
	type in struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "typed", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
			return nil, nil, refusal()
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	cs := connectPlain(t, srv, nil)

	for _, tc := range []struct{ tool, code string }{
		{"raw", "INVALID_ARGUMENTS"}, {"typed", "INVALID_ARGUMENTS"}, {"rawwrite", "UPSTREAM_UNAVAILABLE"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			before := len(sink.all())
			res, err := call(t, cs, tc.tool, map[string]any{})
			if err != nil {
				t.Fatalf("protocol error %v, want a tool-error result", err)
			}
			var body struct {
				Error struct {
					Code              string `json:"code"`
					Message           string `json:"message"`
					Retryable         bool   `json:"retryable"`
					CorrelationID     string `json:"correlation_id"`
					RetryAfterSeconds *int64 `json:"retry_after_seconds"`
				} `json:"error"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(raw, &body); err != nil || !res.IsError {
				t.Fatalf("result %s (isError %v), want a refusal in the contract's shape", raw, res.IsError)
			}
			e := body.Error
			if e.Code != tc.code || e.Message != "amount exceeds the order total" || e.CorrelationID == "" {
				t.Errorf("refusal %+v, want %s with the handler's message and a correlation id", e, tc.code)
			}
			if tc.tool == "rawwrite" && (e.Retryable || e.RetryAfterSeconds != nil) {
				t.Errorf("write refusal %+v, want it not retryable: the write may have been made", e)
			}
			var out []audit.Event
			for _, ev := range sink.all()[before:] {
				if ev.Phase == audit.PhaseOutcome {
					out = append(out, ev)
				}
			}
			if len(out) != 1 {
				t.Fatalf("%d outcome records, want 1", len(out))
			}
			if ev := out[0]; ev.Allowed || ev.Code != tc.code || ev.CorrelationID != e.CorrelationID {
				t.Errorf("record allowed=%v code=%q cid=%q, want refused %s with the answer's id %q", ev.Allowed, ev.Code, ev.CorrelationID, tc.code, e.CorrelationID)
			}
		})
	}
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStandAloneRefusalsNameTheAuditRecord checks that in a chain of the
// stand-alone guards, each guard's refusal carries the correlation id of
// the Audit middleware's record of that call, so that a client's error
// names its audit record.
func TestStandAloneRefusalsNameTheAuditRecord(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read},
		{Name: "secret", Class: policy.Read, Roles: []string{"admin"}},
	}, ShowForbidden: true})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	v, err := mcpguard.NewValidator(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	limit, err := mcpguard.Limit(lim, pol, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   *mcpguard.Identity
		tool string
		args string
		code string
	}{
		{"unauthenticated", nil, "echo", `{}`, "UNAUTHENTICATED"},
		{"forbidden", bob, "secret", `{}`, "FORBIDDEN"},
		{"invalid", bob, "echo", `{"text":1}`, "INVALID_ARGUMENTS"},
		{"first_call", bob, "echo", `{"text":"a"}`, ""},
		{"rate_limited", bob, "echo", `{"text":"b"}`, "RATE_LIMIT_EXCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var s stub
			h := mcpguard.Chain(
				mcpguard.Recover(quiet),
				mustAudit(t, sink, &mcpguard.Options{Logger: quiet}),
				mcpguard.Authenticate(fixed(tc.id)),
				mcpguard.Authorize(pol),
				mcpguard.ValidateArguments(v),
				limit,
			)(s.handle)
			res, err := h(context.Background(), req(tc.tool, tc.args))
			if got := codeOf(t, res, err); got != tc.code {
				t.Fatalf("code %q, want %q", got, tc.code)
			}
			evs := sink.all()
			if len(evs) != 1 {
				t.Fatalf("%d audit records, want 1", len(evs))
			}
			if tc.code == "" {
				return
			}
			var body struct {
				Error struct {
					CorrelationID string `json:"correlation_id"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(mustJSON(res.StructuredContent)), &body); err != nil {
				t.Fatalf("result %s: %v", mustJSON(res), err)
			}
			if body.Error.CorrelationID == "" || body.Error.CorrelationID != evs[0].CorrelationID {
				t.Errorf("refusal names correlation id %q, the audit record is %q", body.Error.CorrelationID, evs[0].CorrelationID)
			}
		})
	}
}

// refusalCorr returns the correlation id of a tool-error refusal.
func refusalCorr(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var body struct {
		Error struct {
			CorrelationID string `json:"correlation_id"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return body.Error.CorrelationID
}

// TestRecoverInsideAuditNamesTheRecord checks that Recover's refusals
// (a handler's error, panic, (nil, nil) or denial) inside an Audit
// middleware carry the correlation id of the Audit record.
func TestRecoverInsideAuditNamesTheRecord(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler mcp.ToolHandler
	}{
		{"handler_error", (&stub{err: errors.New("x")}).handle},
		{"panic", (&stub{boom: true}).handle},
		{"nil_nil", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }},
		{"denial_error", (&stub{err: mcpguard.Deny(mcpguard.CodeForbidden, "no")}).handle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), mustAudit(t, sink, &mcpguard.Options{Logger: quiet}), mcpguard.Recover(quiet))(tc.handler)
			res, err := h(context.Background(), req("echo", `{"text":"hi"}`))
			if err != nil || res == nil || !res.IsError {
				t.Fatalf("got %v, %v; want a tool error", mustJSON(res), err)
			}
			evs := sink.all()
			if len(evs) != 1 {
				t.Fatalf("%d records, want 1", len(evs))
			}
			if got := refusalCorr(t, res); got != evs[0].CorrelationID {
				t.Errorf("refusal %s names correlation id %q; the Audit record is %q", mustJSON(res.StructuredContent), got, evs[0].CorrelationID)
			}
		})
	}
}

// TestProtocolErrorRefusalNamesARecordOfItsCode checks that in
// ProtocolErrors mode the Audit record a step's JSON-RPC error names
// records that error's code (RATE_LIMIT_EXCEEDED), not INTERNAL, and that
// an unknown tool's protocol error is recorded as TOOL_NOT_FOUND.
func TestProtocolErrorRefusalNamesARecordOfItsCode(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	limit, err := mcpguard.Limit(lim, pol, &mcpguard.Options{Logger: quiet, ProtocolErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	h := mcpguard.Chain(mustAudit(t, sink, &mcpguard.Options{Logger: quiet}), mcpguard.Authenticate(fixed(bob)), limit)((&stub{}).handle)
	if res, err := h(context.Background(), req("echo", `{"text":"a"}`)); err != nil || res.IsError {
		t.Fatalf("first call: %s %v", mustJSON(res), err)
	}
	_, err = h(context.Background(), req("echo", `{"text":"b"}`))
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("second call: %v, want a JSON-RPC error", err)
	}
	var data struct {
		Code          string `json:"code"`
		CorrelationID string `json:"correlation_id"`
	}
	if err := json.Unmarshal(we.Data, &data); err != nil {
		t.Fatalf("data %s: %v", we.Data, err)
	}
	evs := sink.all()
	if len(evs) != 2 {
		t.Fatalf("%d records, want 2", len(evs))
	}
	ev := evs[1]
	if data.CorrelationID != ev.CorrelationID {
		t.Fatalf("error names %q, the record is %q", data.CorrelationID, ev.CorrelationID)
	}
	if data.Code != "RATE_LIMIT_EXCEEDED" || ev.Code != data.Code {
		t.Errorf("the error (code %s) names record %s, which records code %q (detail %q)", data.Code, ev.CorrelationID, ev.Code, ev.Detail)
	}

	// An unknown tool, refused by Authorize with the go-sdk's own error.
	sink = &memSink{}
	h = mcpguard.Chain(mustAudit(t, sink, &mcpguard.Options{Logger: quiet}), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol))((&stub{}).handle)
	if _, err := h(context.Background(), req("nope", `{}`)); !errors.As(err, &we) {
		t.Fatalf("unknown tool: %v, want a JSON-RPC error", err)
	}
	if evs := sink.all(); len(evs) != 1 || evs[0].Code != "TOOL_NOT_FOUND" {
		t.Errorf("unknown tool recorded as %+v, want code TOOL_NOT_FOUND", evs)
	}
}

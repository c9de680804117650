package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review41aServe installs a guard (audit to sink, options from opts) on a
// server with the read tool "look" and the allowlisted write tool "put",
// raw tools whose handlers return what h returns, and connects a client
// as bob.
func review41aServe(t *testing.T, sink *memSink, opts mcpguard.Options, h func() (*mcp.CallToolResult, error)) *mcp.ClientSession {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "look", Class: policy.Read}, {Name: "put", Class: policy.Write}},
		WriteAllowlist: []string{"put"},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	for _, name := range []string{"look", "put"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return h() })
	}
	opts.Audit, opts.Logger = sink, quiet
	g, err := mcpguard.New(pol, fixed(bob), &opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return connectPlain(t, srv, nil)
}

// review41aOutcome returns the outcome record of the one call sink holds.
func review41aOutcome(t *testing.T, sink *memSink) audit.Event {
	t.Helper()
	for _, ev := range sink.all() {
		if ev.Phase == audit.PhaseOutcome {
			return ev
		}
	}
	t.Fatalf("no outcome record in %+v", sink.all())
	return audit.Event{}
}

// A JSON-RPC error from below the guard goes to the caller as it is, and
// its record says which code it was, in decimal.
func TestReview41aProtocolErrorFromBelow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int64
		detail string
	}{
		{"invalid_params", jsonrpc.CodeInvalidParams, "protocol error -32602"},
		{"server_defined", -32001, "protocol error -32001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			cs := review41aServe(t, sink, mcpguard.Options{}, func() (*mcp.CallToolResult, error) {
				return nil, &jsonrpc.Error{Code: tc.code, Message: "bad cursor"}
			})
			res, err := call(t, cs, "look", map[string]any{})
			we := wireError(err)
			if we == nil || we.Code != tc.code || we.Message != "bad cursor" {
				t.Fatalf("look: %s, %v; want the handler's JSON-RPC error %d", mustJSON(res), err, tc.code)
			}
			if got := review41aOutcome(t, sink).Detail; got != tc.detail {
				t.Errorf("outcome detail %q, want %q", got, tc.detail)
			}
		})
	}
}

// A handler's own refusal keeps its retry advice, but a write's is not
// retryable (it may have written) unless its code says nothing was run.
func TestReview41aHandlerRefusalRetry(t *testing.T) {
	for _, tc := range []struct {
		name, tool string
		code       mcpguard.Code
		retryable  bool
	}{
		{"read_upstream", "look", mcpguard.CodeUpstreamUnavailable, true},
		{"read_rate_limit", "look", mcpguard.CodeRateLimitExceeded, true},
		{"write_upstream", "put", mcpguard.CodeUpstreamUnavailable, false},
		{"write_rate_limit", "put", mcpguard.CodeRateLimitExceeded, true},
		{"write_audit", "put", mcpguard.CodeAuditUnavailable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := review41aServe(t, &memSink{}, mcpguard.Options{}, func() (*mcp.CallToolResult, error) {
				return nil, mcpguard.Deny(tc.code, "not now")
			})
			res, err := call(t, cs, tc.tool, map[string]any{})
			code, msg, retryable := refusalOf(t, res, err)
			if diff := cmp.Diff([]any{string(tc.code), "not now", tc.retryable}, []any{code, msg, retryable}); diff != "" {
				t.Errorf("%s refused by its handler with %s: code, message, retryable (-want +got):\n%s", tc.tool, tc.code, diff)
			}
		})
	}
}

// A result the guard refuses says which way it failed: too large for the
// server's cap, or malformed.
func TestReview41aOutputRefusalMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		msg  string
	}{
		{"too_large", textResult(strings.Repeat("x", 100)), "the tool's result is larger than the server allows"},
		{"malformed", &mcp.CallToolResult{StructuredContent: json.RawMessage(`{`)}, "the tool returned a malformed result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := review41aServe(t, &memSink{}, mcpguard.Options{MaxOutputBytes: 64}, func() (*mcp.CallToolResult, error) {
				return tc.res, nil
			})
			res, err := call(t, cs, "look", map[string]any{})
			code, msg, _ := refusalOf(t, res, err)
			if diff := cmp.Diff([]string{string(mcpguard.CodeInvalidResponse), tc.msg}, []string{code, msg}); diff != "" {
				t.Errorf("look returning %s: code and message (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

// A handler's own context.Canceled, its caller still there, is its own
// failure, not its client's leaving: so its record says, for a read and
// for a write (whose handler's context is detached from its caller's).
func TestReview41aOwnCancelIsHandlerError(t *testing.T) {
	for _, tool := range []string{"look", "put"} {
		t.Run(tool, func(t *testing.T) {
			sink := &memSink{}
			cs := review41aServe(t, sink, mcpguard.Options{}, func() (*mcp.CallToolResult, error) {
				return nil, fmt.Errorf("downstream: %w", context.Canceled)
			})
			res, err := call(t, cs, tool, map[string]any{})
			if code, _, _ := refusalOf(t, res, err); code != string(mcpguard.CodeInternal) {
				t.Errorf("%s: code %s, want INTERNAL", tool, code)
			}
			if got := review41aOutcome(t, sink).Detail; got != "handler error" {
				t.Errorf("%s: outcome detail %q, want %q", tool, got, "handler error")
			}
		})
	}
}

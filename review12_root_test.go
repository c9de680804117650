package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review12Refusal is the error object of a refusal, from a tool-error
// result's structured content or a JSON-RPC error's data.
type review12Refusal struct {
	Code              string `json:"code"`
	Message           string `json:"message"`
	Retryable         bool   `json:"retryable"`
	RetryAfterSeconds *int64 `json:"retry_after_seconds"`
	CorrelationID     string `json:"correlation_id"`
}

// review12Refused calls tool and returns its refusal, in either mode.
func review12Refused(t *testing.T, cs *mcp.ClientSession, tool string) review12Refusal {
	t.Helper()
	res, err := call(t, cs, tool, map[string]any{})
	var r review12Refusal
	if err != nil {
		we := wireError(err)
		if we == nil || json.Unmarshal(we.Data, &r) != nil {
			t.Fatalf("%s: %v, want a refusal", tool, err)
		}
		return r
	}
	var body struct {
		Error review12Refusal `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || json.Unmarshal(raw, &body) != nil || body.Error.Code == "" {
		t.Fatalf("%s: result %s (isError %v), want a refusal", tool, raw, res.IsError)
	}
	return body.Error
}

// TestReview12StepInsideGuardedWriteKeepsItsRetry: a write tool under
// Guard.Install whose handler is wrapped in mcpguard's own stand-alone
// Limit step. The step refuses the second call before the real handler
// runs (RATE_LIMIT_EXCEEDED, wait about a minute): nothing was written, and
// the refusal must stay retryable with its wait, in both modes. Since
// d9b4562 the guard marked every write handler's *DenialError as not
// retryable ("it may have written"), so the client was told never to retry
// a call that a wait would let through. A handler's AUDIT_UNAVAILABLE (the
// write was not attempted) keeps its wait alike; an UPSTREAM_UNAVAILABLE,
// which may follow a write, is still not retryable. The charge of the
// guard's own limiter stays (the handler ran), which the record shows.
func TestReview12StepInsideGuardedWriteKeepsItsRetry(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "note", Class: policy.Write, Cost: 2},
			{Name: "noaudit", Class: policy.Write, Cost: 2},
			{Name: "upstream", Class: policy.Write, Cost: 2},
		},
		WriteAllowlist: []string{"note", "noaudit", "upstream"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []bool{false, true} {
		t.Run(fmt.Sprintf("protocol_errors_%v", protocol), func(t *testing.T) {
			inner, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Minute}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			step, err := mcpguard.Limit(inner, pol, nil)
			if err != nil {
				t.Fatal(err)
			}
			outer, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
			g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: quiet, Limiter: outer, ProtocolErrors: protocol})
			if err != nil {
				t.Fatal(err)
			}
			var ran int
			srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			obj := json.RawMessage(`{"type":"object"}`)
			srv.AddTool(&mcp.Tool{Name: "note", InputSchema: obj}, step(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran++
				return textResult("noted"), nil
			}))
			srv.AddTool(&mcp.Tool{Name: "noaudit", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcpguard.Deny(mcpguard.CodeAuditUnavailable, "the audit trail is unavailable; the write was not attempted").Result(), nil
			})
			srv.AddTool(&mcp.Tool{Name: "upstream", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				d := mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "the bank did not answer")
				d.RetryAfter = 3 * time.Second
				return nil, d
			})
			if err := g.Install(srv); err != nil {
				t.Fatal(err)
			}
			cs := connectPlain(t, srv, nil)
			if res, err := call(t, cs, "note", map[string]any{}); err != nil || res.IsError {
				t.Fatalf("first call: %v %v, want it to run", res, err)
			}

			before := len(sink.all())
			r := review12Refused(t, cs, "note")
			if r.Code != "RATE_LIMIT_EXCEEDED" || !r.Retryable || r.RetryAfterSeconds == nil || *r.RetryAfterSeconds < 30 {
				t.Errorf("second call, refused by the Limit step before the handler ran: %+v, want RATE_LIMIT_EXCEEDED, retryable after about a minute", r)
			}
			if ran != 1 {
				t.Errorf("the handler ran %d times, want 1", ran)
			}
			var outs []audit.Event
			for _, ev := range sink.all()[before:] {
				if ev.Phase == audit.PhaseOutcome {
					outs = append(outs, ev)
				}
			}
			if len(outs) != 1 || outs[0].Allowed || outs[0].Code != "RATE_LIMIT_EXCEEDED" || outs[0].Cost != 2 || outs[0].CorrelationID != r.CorrelationID {
				t.Errorf("records %+v, want one refused RATE_LIMIT_EXCEEDED of cost 2 (the guard's charge stays: the handler ran) naming %q", outs, r.CorrelationID)
			}

			if r := review12Refused(t, cs, "noaudit"); r.Code != "AUDIT_UNAVAILABLE" || !r.Retryable {
				t.Errorf("a write handler's AUDIT_UNAVAILABLE (not attempted): %+v, want retryable", r)
			}
			if protocol {
				return // the go-sdk client reads -32003 as its own ErrConnectionClosed (see the package doc)
			}
			if r := review12Refused(t, cs, "upstream"); r.Code != "UPSTREAM_UNAVAILABLE" || r.Retryable || r.RetryAfterSeconds != nil {
				t.Errorf("a write handler's UPSTREAM_UNAVAILABLE: %+v, want not retryable (it may have written)", r)
			}
		})
	}
}

// TestReview12HandlerDenialWithoutCode: a *DenialError without a code is
// no refusal of the contract (a client switches on the code; the record of
// a refusal names one): the guard treats it as the handler's failure,
// INTERNAL, and a wrapped refusal is answered with its own message only,
// never the text wrapped around it.
func TestReview12HandlerDenialWithoutCode(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "nocode", Class: policy.Read}, {Name: "wrapped", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	obj := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "nocode", InputSchema: obj, Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &mcpguard.DenialError{Message: "no"}
	})
	type in struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "wrapped", Annotations: ro}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("account 4111-1111 secret-token: %w", mcpguard.Deny(mcpguard.CodeForbidden, "not your account"))
	})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	cs := connectPlain(t, srv, nil)

	r := review12Refused(t, cs, "nocode")
	if r.Code != "INTERNAL" {
		t.Errorf("a DenialError without a code: %+v, want INTERNAL", r)
	}
	evs := sink.all()
	if ev := evs[len(evs)-1]; ev.Allowed || ev.Code != "INTERNAL" {
		t.Errorf("record allowed=%v code=%q, want refused INTERNAL", ev.Allowed, ev.Code)
	}

	res, err := call(t, cs, "wrapped", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res)
	if r := review12Refused(t, cs, "wrapped"); r.Code != "FORBIDDEN" || r.Message != "not your account" || strings.Contains(string(raw), "secret") || strings.Contains(string(raw), "4111") {
		t.Errorf("a wrapped refusal: %s, want FORBIDDEN with its own message only", raw)
	}
}

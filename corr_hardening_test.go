package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
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
				mcpguard.Audit(sink, quiet),
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

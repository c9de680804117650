package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRefusalDetailRecorded: the outcome record of a call the guard refused
// says why in its detail, as the caller was told (the seed's audit log
// explains a rate-limit refusal there), except where the message holds
// what the caller chose (invalid arguments: field names) or what an
// authenticator wrote.
func TestRefusalDetailRecorded(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read},
			{Name: "create", Class: policy.Write},
			{Name: "admin_stats", Class: policy.Read, Roles: []string{"admin"}},
		},
		ShowForbidden: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, NoWriteAhead: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}`)
	call := func(name, args string) {
		t.Helper()
		h, err := g.Wrap(&mcp.Tool{Name: name, InputSchema: schema}, noop)
		if err != nil {
			t.Fatal(err)
		}
		h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(args)}})
	}
	call("search", `{"secret_in_a_name":1}`) // invalid arguments
	call("search", `{}`)                     // allowed
	call("search", `{}`)                     // rate limited
	call("create", `{}`)                     // write not allowed
	call("admin_stats", `{}`)                // forbidden
	evs := sink.all()
	if len(evs) != 5 {
		t.Fatalf("%d records, want 5: %+v", len(evs), evs)
	}
	for i, want := range []struct {
		code     mcpguard.Code
		detailed bool
	}{
		{mcpguard.CodeInvalidArguments, false},
		{"", false},
		{mcpguard.CodeRateLimitExceeded, true},
		{mcpguard.CodeWriteNotAllowed, true},
		{mcpguard.CodeForbidden, true},
	} {
		e := evs[i]
		if e.Code != string(want.code) || (e.Detail != "") != want.detailed {
			t.Errorf("record %d: code %q detail %q; want code %q with a detail: %v", i, e.Code, e.Detail, want.code, want.detailed)
		}
	}
	if d := evs[0].Detail; d != "" {
		t.Errorf("invalid arguments recorded the detail %q, which names a field the caller chose", d)
	}
	t.Logf("rate-limit detail: %q", evs[2].Detail)
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLate14DescribeKeysCannotAddLines: the keys of an argument's object
// are as much the model's text as its strings. A Describe that prints a
// nested object (fmt's %v, or a loop over its keys) must not get a key's
// line break as a line of its own in the prompt a human approves.
func TestLate14DescribeKeysCannotAddLines(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen map[string]any
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{
		NoWriteAhead: true, Logger: quiet,
		Tools: map[string]mcpguard.ToolOptions{"refund": {
			DryRun: true,
			Describe: func(tool string, args map[string]any) string {
				seen = args
				meta, _ := args["meta"].(map[string]any)
				var keys []string
				for k := range meta {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				return fmt.Sprintf("Amount: %v\nKeys: %s", args["amount"], strings.Join(keys, ","))
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "refund", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"amount":{"type":"number"},"meta":{"type":"object"}}}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"amount":5000,"meta":{"x\nAmount: 1.00":1,"plain":{"k\r\n":"v"}}}`)
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "refund", Arguments: args}})
	if err != nil || res == nil {
		t.Fatalf("dry run: %v, %v", res, err)
	}
	var answer struct{ Summary string }
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || json.Unmarshal([]byte(tc.Text), &answer) != nil {
		t.Fatalf("dry-run answer %+v", res.Content)
	}
	if want := "Amount: 5000\nKeys: plain,x\\nAmount: 1.00"; answer.Summary != want {
		t.Errorf("dry-run text %q, want %q: a key's line break is a line of the prompt", answer.Summary, want)
	}
	// The numbers stay what the guard decoded (json.Number), nested
	// objects stay maps: a Describe that type-asserts keeps working.
	if _, ok := seen["amount"].(json.Number); !ok {
		t.Errorf("Describe got amount %T, want json.Number", seen["amount"])
	}
	plain, _ := seen["meta"].(map[string]any)["plain"].(map[string]any)
	if plain["k\\r\\n"] != "v" {
		t.Errorf("Describe got meta.plain %#v, want its key escaped and its value kept", plain)
	}
}

// TestLate14WriteAheadTakesAuditRequestID: in a chain, the intent record
// of WriteAhead belongs to the call the Audit middleware outside records,
// as its correlation id does: it carries the same request_id, whatever
// options WriteAhead itself was given.
func TestLate14WriteAheadTakesAuditRequestID(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	const header = "X-Mcp-Gateway-Request-Id"
	auditStep, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: quiet, RequestIDHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	writeAhead, err := mcpguard.WriteAhead(sink, pol, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h := mcpguard.Chain(auditStep, mcpguard.Authenticate(fixed(bob)), writeAhead)(noop)
	req := &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: "refund", Arguments: json.RawMessage(`{}`)},
		Extra:  &mcp.RequestExtra{Header: http.Header{header: {"gw-1"}}},
	}
	if res, err := h(context.Background(), req); err != nil || res == nil || res.IsError {
		t.Fatalf("call: %+v, %v", res, err)
	}
	evs := sink.all()
	if len(evs) != 2 {
		t.Fatalf("records %+v, want an intent and an outcome", evs)
	}
	for _, e := range evs {
		if e.RequestID != "gw-1" || e.CorrelationID != evs[0].CorrelationID {
			t.Errorf("%s record: request_id %q, correlation_id %q; want gw-1 and the call's %q",
				e.Phase, e.RequestID, e.CorrelationID, evs[0].CorrelationID)
		}
	}
	if evs[0].Phase != audit.PhaseIntent {
		t.Errorf("first record %s, want the intent", evs[0].Phase)
	}
}

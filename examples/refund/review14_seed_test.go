package main

// Seed items of shared/seeds/refund-mcp-server-and-gateway.txt (Task 1)
// that had no test of their own, driving the built binary over stdio with
// the helpers of main_test.go.

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestReview14ReasonLengthCountsCharacters: "reason: str >= 10 chars"
// (Pydantic's min_length=10 counts characters): exactly 10 characters
// pass whatever their encoding, 9 do not, and neither do 5 characters
// that take 10 bytes in UTF-8 or 10 units in UTF-16.
func TestReview14ReasonLengthCountsCharacters(t *testing.T) {
	cs, _ := connect(t, "", []string{"-session-cap", "100000", "-user-cap", "100000"}, alice)
	tests := []struct {
		name   string
		reason string
		ok     bool
	}{
		{"ten_ascii", "0123456789", true},
		{"nine_ascii", "012345678", false},
		{"ten_two_byte_letters", strings.Repeat("é", 10), true},
		{"five_two_byte_letters", strings.Repeat("é", 5), false},
		{"ten_cjk", strings.Repeat("日本", 5), true},
		{"five_emoji", strings.Repeat("🎉", 5), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 1, "reason": tt.reason})
			switch {
			case tt.ok && we != nil:
				t.Errorf("reason %q (%d characters): %d %q, want a refund", tt.reason, len([]rune(tt.reason)), we.Code, we.Message)
			case tt.ok && got["status"] != "processed":
				t.Errorf("reason %q: %v, want status processed", tt.reason, got)
			case !tt.ok && (we == nil || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, `"reason"`)):
				t.Errorf("reason %q (%d characters): %v %v, want -32602 naming \"reason\"", tt.reason, len([]rune(tt.reason)), got, we)
			}
		})
	}
}

// TestReview14CustomerIDIsExactlyThePattern: "CUST- + 5 uppercase
// alphanumeric characters" and nothing around them. Python's re lets "$"
// match before a final newline, so ^CUST-[A-Z0-9]{5}$ there would accept
// "CUST-00001\n"; here it is refused, as are a trailing blank, a full-width
// digit and a non-ASCII capital, on both tools.
func TestReview14CustomerIDIsExactlyThePattern(t *testing.T) {
	cs, _ := connect(t, "", nil, alice)
	for _, id := range []string{"CUST-00001\n", "CUST-00001 ", " CUST-00001", "CUST-0000\uff11", "CUST-0000\u00c4", "\nCUST-00001"} {
		for _, tool := range []string{"get_customer_record", "trigger_refund"} {
			args := map[string]any{"customer_id": id}
			if tool == "trigger_refund" {
				args["amount"], args["reason"] = 1, "customer id with extra characters"
			}
			got, we := call(t, cs, tool, args)
			if we == nil || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, `"customer_id"`) {
				t.Errorf("%s(customer_id %q) = %v %v, want -32602 naming \"customer_id\"", tool, id, got, we)
			}
		}
	}
	// Nothing was refunded.
	if got, _ := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"}); got["customer"].(map[string]any)["refunded_total"] != 0.0 {
		t.Errorf("CUST-00001 after the refused refunds: %v, want refunded_total 0", got["customer"])
	}
}

// TestReview14StdioServesTaskOneToolsOnly: Task 1's server exposes
// exactly get_customer_record and trigger_refund. The admin tools of the
// HTTP mode (the gateway demo's downstream) are unknown over stdio:
// -32601, as any unknown tool.
func TestReview14StdioServesTaskOneToolsOnly(t *testing.T) {
	cs, _ := connect(t, "", nil, alice)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"admin_reset_key", map[string]any{"key_id": "KEY-PRIMARY"}},
		{"admin_list_audit_log", map[string]any{}},
	} {
		if got, we := call(t, cs, c.tool, c.args); we == nil || we.Code != -32601 {
			t.Errorf("%s over stdio: %v %v, want JSON-RPC error -32601", c.tool, got, we)
		}
	}
}

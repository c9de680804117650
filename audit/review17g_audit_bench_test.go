package audit_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// BenchmarkReview17gCamelCase measures the canonical argument hash on
// objects whose keys are camelCase (an upper-case ASCII letter in most
// keys) without two that fold alike: the common shape of tool arguments
// and tool definitions (inputSchema, additionalProperties), which take
// the folded-order check since the seventeenth session.
func BenchmarkReview17gCamelCase(b *testing.B) {
	for _, tc := range []struct{ name, args string }{
		{"flat", `{"customerId":"CUST-00001","orderId":"o-1","amountCents":12550,"reasonCode":"damagedOnArrival","notifyCustomer":true}`},
		{"tool", `{"name":"refundOrder","description":"Refund an order","inputSchema":{"type":"object","properties":{"orderId":{"type":"string","maxLength":64},"amountCents":{"type":"integer","minimum":1},"reasonCode":{"type":"string","enum":["damaged","lateDelivery","wrongItem"]}},"required":["orderId","amountCents"],"additionalProperties":false},"annotations":{"destructiveHint":true,"idempotentHint":false,"openWorldHint":false,"readOnlyHint":false}}`},
	} {
		raw := json.RawMessage(tc.args)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			dst := make([]byte, 0, 512)
			for b.Loop() {
				dst = audit.AppendArgsSHA256(dst[:0], raw)
			}
		})
	}
}

package audit_test

import (
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// BenchmarkArgsSHA256 measures the canonical argument hash against the
// bare path, a SHA-256 of the same bytes as they came: the difference is
// the canonical form (validation, sorted members, re-escaped strings).
// "flat" is a tool call's usual argument object, "nested" one with objects
// inside objects, which cost the hash time exponential in their depth
// before the eleventh session.
func BenchmarkArgsSHA256(b *testing.B) {
	for _, tc := range []struct{ name, args string }{
		{"flat", `{"customer_id":"CUST-00001","amount":125.5,"reason":"damaged on arrival"}`},
		{"nested", `{"order":{"id":"o-1","lines":[{"sku":"RB-100","qty":2,"opts":{"gift":true,"note":"<b>hi</b>"}},{"sku":"RB-200","qty":1}],"ship":{"to":{"city":"Köln","zip":"50667"}}},"z":null}`},
	} {
		raw := json.RawMessage(tc.args)
		b.Run(tc.name+"/bare", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				_ = sha256.Sum256(raw)
			}
		})
		b.Run(tc.name+"/canonical", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			dst := make([]byte, 0, 512)
			for b.Loop() {
				dst = audit.AppendArgsSHA256(dst[:0], raw)
			}
		})
	}
}

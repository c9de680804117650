package fastschema

import "testing"

// BenchmarkValidate compares the fast path with the reference pipeline
// (duplicate-key walk, encoding/json with UseNumber, string checks, v6) on
// the refund arguments.
func BenchmarkValidate(b *testing.B) {
	raw := []byte(`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`)
	opts := Options{MaxStringBytes: 65536}
	b.Run("fast", func(b *testing.B) {
		s := mustCompile(b, refundSchema, opts)
		b.ReportAllocs()
		for b.Loop() {
			if e := s.Validate(raw); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("oracle", func(b *testing.B) {
		o := newOracle(b, decodeSchema(b, refundSchema), opts)
		b.ReportAllocs()
		for b.Loop() {
			if err, _ := o.verdict(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package confirm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"testing"
)

var benchArgs = json.RawMessage(`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`)

// BenchmarkConfirm measures the confirmation's own costs. "baseline_hmac" is
// one bare HMAC-SHA256 over a payload of the same size, the floor for both
// Issue and Verify.
func BenchmarkConfirm(b *testing.B) {
	s, err := NewSigner([]Key{{ID: "k1", Secret: secretA}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	sum, _ := ArgsSHA256(benchArgs)
	c := Claims{Subject: "alice@example.com", Tool: "refund", ArgsSHA256: sum}
	b.Run("baseline_hmac", func(b *testing.B) {
		payload := make([]byte, 140)
		b.ReportAllocs()
		for b.Loop() {
			h := hmac.New(sha256.New, secretA)
			h.Write(payload)
			h.Sum(nil)
		}
	})
	b.Run("issue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Issue(t0, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		states := make([]string, b.N)
		for i := range states {
			states[i], _ = s.Issue(t0, c)
		}
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.Verify(ctx, t0, states[i], c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("args_sha256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ArgsSHA256(benchArgs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("describe", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Describe("refund", benchArgs)
		}
	})
}

package confirm_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
)

// TestReview64gNilReceivers: a nil *Signer answers Issue, Check and Verify
// with "the Signer is not usable" and a nil *MemoryNonceStore answers
// Consume and Used with "not usable", but Signer.TTL and
// MemoryNonceStore.Len panicked on them. A nil Signer's TTL is zero (it
// issues nothing), a nil store's Len zero (it remembers nothing).
func TestReview64gNilReceivers(t *testing.T) {
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("a method of a nil *Signer or *MemoryNonceStore panicked: %v", v)
		}
	}()
	if ttl := (*confirm.Signer)(nil).TTL(); ttl != 0 {
		t.Errorf("(*Signer)(nil).TTL() = %v, want 0", ttl)
	}
	if n := (*confirm.MemoryNonceStore)(nil).Len(); n != 0 {
		t.Errorf("(*MemoryNonceStore)(nil).Len() = %d, want 0", n)
	}
}

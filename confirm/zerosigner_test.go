package confirm

import (
	"testing"
	"time"
)

// TestZeroSignerIssueRefused: a Signer not made by NewSigner has no key,
// and its Issue says so instead of returning a state signed with an empty
// key that nothing verifies.
func TestZeroSignerIssueRefused(t *testing.T) {
	c := Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "00"}
	var zero Signer
	if st, err := zero.Issue(time.Unix(1_800_000_000, 0), c); err == nil {
		t.Fatalf("zero Signer issued %q", st)
	}
	var nilSigner *Signer
	if st, err := nilSigner.Issue(time.Unix(1_800_000_000, 0), c); err == nil {
		t.Fatalf("nil Signer issued %q", st)
	}
}

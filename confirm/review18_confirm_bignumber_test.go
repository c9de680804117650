package confirm_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
)

// TestArgsSHA256DuplicateAfterHugeNumber: a member named twice after a
// number no float64 holds (1e309, valid JSON) is refused like any other
// duplicate. jsondup gave up at such a number and reported no duplicate,
// so {"x":1e309,"a":1,"a":2} was hashed although a decoder reads "a" as 2.
func TestArgsSHA256DuplicateAfterHugeNumber(t *testing.T) {
	for _, args := range []string{
		`{"x":1e309,"a":1,"a":2}`,
		`{"x":-1e400,"n":{"a":1,"a":2}}`,
		`{"x":[1e309],"a":1,"A":2}`,
	} {
		if _, err := confirm.ArgsSHA256([]byte(args)); err == nil {
			t.Errorf("ArgsSHA256(%s): no error, want the duplicate refused", args)
		}
	}
	if _, err := confirm.ArgsSHA256([]byte(`{"x":1e309,"a":1}`)); err != nil {
		t.Errorf("ArgsSHA256 of a huge number without a duplicate: %v", err)
	}
}

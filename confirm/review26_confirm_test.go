package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReview26ArgsSHA256RefusesLooseNames: ArgsSHA256 refused two names
// that differ only in letter case ("amount", "Amount": encoding/json reads
// them into one field) but hashed {"amount":5,"a_mount":1000000000}, whose
// names encoding/json/v2's case-insensitive matching (MatchCaseInsensitiveNames,
// a `case:ignore` tag) also reads into one field, ignoring '_' and '-': the
// human was shown "a_mount=1000000000, amount=5" and approved, and a v2
// handler allowing duplicate names refunded 1000000000. The guard's
// validation refuses these names (dupkeys.go); confirm, used alone, now
// refuses them too, as it does names differing in case, and Describe reads
// "with unreadable arguments".
func TestReview26ArgsSHA256RefusesLooseNames(t *testing.T) {
	for _, args := range []string{
		`{"amount":5,"a_mount":1000000000}`,
		`{"amount":5,"-AMOUNT":1000000000}`,
		`{"a_mount":1000000000,"amount":5}`,
		`{"amount":5,"amount_":9}`,
		`{"o":{"user_id":1,"userid":2}}`,
		`[{"ok":1},{"a-b":1,"A_B":2}]`,
		`{"\u017feats":1,"_seats":2}`,
		`{"_":1,"-":2}`,
	} {
		if h, err := ArgsSHA256(json.RawMessage(args)); err == nil {
			t.Errorf("ArgsSHA256(%s) = %s, nil; want an error (two names a v2 handler reads as one)", args, h)
		}
		if got := Describe("refund", json.RawMessage(args)); !strings.HasSuffix(got, " with unreadable arguments") {
			t.Errorf("Describe(%s) = %q; want unreadable arguments", args, got)
		}
	}
	// Names that stay distinct, or that are in different objects, still hash.
	for _, args := range []string{
		`{"amount":5,"a_mount_x":9}`,
		`{"a":{"ab":1},"b":{"a_b":2}}`,
		`{"user_id":1,"user":2,"id":3}`,
		`{"_":1,"x":2}`,
		`[{"a-b":1},{"ab":2}]`,
		`{"a_b":{"ab":1}}`,
	} {
		if _, err := ArgsSHA256(json.RawMessage(args)); err != nil {
			t.Errorf("ArgsSHA256(%s): %v; want a hash", args, err)
		}
	}
}

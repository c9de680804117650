package confirm

import (
	"encoding/json"
	"testing"
)

// TestArgsSHA256RefusesDuplicateMembers: a confirmation is bound to the
// exact arguments, so two argument texts that a downstream may read
// differently must never hash alike. With a member named twice, parsers
// disagree on the value (encoding/json takes the last, gjson and other
// first-match readers the first): {"amount":1000,"amount":1} hashed as
// {"amount":1}, so a state the human approved for amount=1 verified a
// retry that runs amount=1000 on a first-wins downstream.
func TestArgsSHA256RefusesDuplicateMembers(t *testing.T) {
	approved, err := ArgsSHA256(json.RawMessage(`{"amount":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"amount":1000,"amount":1}`,
		`{"amount":1000,"\u0061mount":1}`,
		`{"order":{"amount":1000,"amount":1}}`,
		`[{"a":1},{"b":2,"b":2}]`,
	} {
		h, err := ArgsSHA256(json.RawMessage(args))
		if err == nil {
			t.Errorf("ArgsSHA256(%s) = %s, nil; want an error (a member named twice)", args, h)
			if h == approved {
				t.Errorf("ArgsSHA256(%s) equals the hash of {\"amount\":1}: the approval for amount=1 verifies it", args)
			}
		}
	}
	// The same names in different objects are fine. (Names differing only
	// in case were too until the seventeenth session: encoding/json reads
	// them as one struct field; see TestReview17ArgsSHA256RefusesCaseFoldedKeys.)
	for _, args := range []string{
		`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`,
		`{"a":"a","b":"a"}`,
	} {
		if _, err := ArgsSHA256(json.RawMessage(args)); err != nil {
			t.Errorf("ArgsSHA256(%s): %v; want no error", args, err)
		}
	}
}

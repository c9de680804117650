package confirm_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
)

// Keys that differ only in letter case go to one struct field in
// encoding/json, the last one winning: {"amount":1,"Amount":1000} runs
// with 1000 and its reverse with 1. One hash for both would let a human's
// approval of one run the other; such arguments are refused instead.
func TestReview17ArgsSHA256RefusesCaseFoldedKeys(t *testing.T) {
	for _, args := range []string{
		`{"amount":1,"Amount":1000}`,
		`{"Amount":1000,"amount":1}`,
		`{"order":{"seats":1,"\u017featS":9}}`,
		`[{"id":"x","ID":"y"}]`,
	} {
		if h, err := confirm.ArgsSHA256(json.RawMessage(args)); err == nil {
			t.Errorf("ArgsSHA256(%s) = %s, want an error", args, h)
		}
	}
	// Distinct names stay fine.
	if _, err := confirm.ArgsSHA256(json.RawMessage(`{"amount":1,"amounts":[1,2],"Currency":"EUR"}`)); err != nil {
		t.Errorf("distinct names refused: %v", err)
	}
}

package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReview56DescribeNumberInStringKeepsItsValue: a long number is shown
// by its value ("≈1000") and a nested one cut in it is cut before it, since
// cut like text 1.000…e3 reads as one and 1000000 as 10. The same number
// sent as a string (a decimal amount, which many APIs take as a string and
// a handler reads with a decimal library or a `json:",string"` field) was
// cut like any text: amount="1.000…" for a thousand, and, nested,
// {"amount":"10… for a million. The human approved an amount the text did
// not show.
func TestReview56DescribeNumberInStringKeepsItsValue(t *testing.T) {
	zeros := strings.Repeat("0", 78)
	xs := strings.Repeat("x", 60)
	for _, tc := range []struct{ args, want string }{
		{`{"amount":"1.` + zeros + `e3"}`, `Run refund with amount="≈1000"`},
		{`{"amount":"-1` + zeros + `0000"}`, `Run refund with amount="≈-1e+82"`},
		{`{"amount":"1.` + zeros + `e999999999"}`, `Run refund with amount=(a number of 90 characters, in a string)`},
		{`"1.` + zeros + `e3"`, `Run refund with arguments "≈1000"`},
		{`{"order":{"amount":"1.` + zeros + `e3"}}`, `Run refund with order={"amount":…`},
		{`{"order":{"a":"` + xs + `","amount":"1000000"}}`, `Run refund with order={"a":"` + xs + `","amount":…`},
		{`{"order":["` + xs + `x","1000","1000000"]}`, `Run refund with order=["` + xs + `x","1000",…`},
		// Not a number, or a member name: cut as text, as before.
		{`{"order":{"a":"` + xs + `","note":"1000000 x"}}`, `Run refund with order={"a":"` + xs + `","note":"1000…`},
		{`{"order":{"!` + xs + `1234567":1,"1000000":2}}`, `Run refund with order={"!` + xs + `1234567":1,"10000…`},
		// Short enough to show whole: as before.
		{`{"amount":"1000000"}`, `Run refund with amount="1000000"`},
	} {
		if got := Describe("refund", json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("Describe(%.60s…)\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
	// A string that reads "≈1000" is shown escaped: never as a long number's.
	if got := Describe("refund", json.RawMessage(`{"amount":"≈1000"}`)); strings.Contains(got, `"≈`) {
		t.Errorf("Describe of the string ≈1000 = %s; reads as a long number's value", got)
	}
}

// TestReview56OracleFindingNumberInString: the parse-back oracle
// (review23_oracle_test.go) reads a string that spells a number and is cut
// as a number cut (numberCutError), at the top level and nested, and takes
// the forms Describe now shows.
func TestReview56OracleFindingNumberInString(t *testing.T) {
	zeros := strings.Repeat("0", 90)
	xs := strings.Repeat("x", 60)
	for _, args := range []string{
		`{"amount":"1.` + zeros + `e3"}`,
		`{"amount":"1.` + zeros + `e999999999"}`,
		`"1.` + zeros + `e3"`,
		`{"order":{"amount":"1.` + zeros + `e3"}}`,
		`{"order":{"a":"` + xs + `","amount":"1000000"}}`,
		`{"order":["` + xs + `x","1000","1000000"]}`,
		`{"order":{"a":"` + xs + `","note":"1000000 x"}}`,
		`{"order":{"!` + xs + `1234567":1,"1000000":2}}`,
	} {
		if err := checkParsesBack(Describe, args); err != nil {
			t.Errorf("Describe(%.40s…)\n= %v", args, err)
		}
	}
}

package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDescribeUnseenEscapesAllButASCII pins what Describe documents for a key
// or string holding a character that shows as nothing or as a plain space
// (the blank Braille pattern, a variation selector, a space other than
// U+0020) that cleaning keeps: it is quoted with every character outside
// printable ASCII escaped, its letters too, not only the invisible one.
func TestDescribeUnseenEscapesAllButASCII(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"city":"Москва\u00a0"}`, `Run t with city="\u041c\u043e\u0441\u043a\u0432\u0430\u00a0"`},
		{`{"city":"Москва\u3000"}`, `Run t with city="\u041c\u043e\u0441\u043a\u0432\u0430\u3000"`},
		{`{"city":"Москва\u2009"}`, `Run t with city="\u041c\u043e\u0441\u043a\u0432\u0430\u2009"`},
		{`{"city":"Москва\u2800"}`, `Run t with city="\u041c\u043e\u0441\u043a\u0432\u0430\u2800"`},
		{`{"city":"Москва\ufe0f"}`, `Run t with city="\u041c\u043e\u0441\u043a\u0432\u0430\ufe0f"`},
		{`{"café\u00a0":1}`, `Run t with "caf\u00e9\u00a0"=1`},
		{`{"note":"café\ufe0f"}`, `Run t with note="caf\u00e9\ufe0f"`},
	}
	for _, tt := range tests {
		if got := Describe("t", json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Describe(%s)\n got %s\nwant %s", tt.args, got, tt.want)
		}
	}
}

// TestDescribeNestedCutAtNumberEnd pins how a nested value longer than 80
// characters is cut when those 80 end in a number: the number is left out
// ("…" in its place) even when it happens to end at the 80th character, as
// 12345… could be 123456 cut; one that ends before the 80th is shown whole.
// An exponent's '+' is part of the number too.
func TestDescribeNestedCutAtNumberEnd(t *testing.T) {
	a := strings.Repeat("a", 71) // ["aaa…", is 75 characters
	tests := []struct{ args, want string }{
		{`{"n":["` + a + `",12345,6]}`, `Run t with n=["` + a + `",…`},
		{`{"n":["` + a + `",123456,6]}`, `Run t with n=["` + a + `",…`},
		{`{"n":["` + a + `",1234,6]}`, `Run t with n=["` + a + `",1234,…`},
		// The 80 end in an exponent's sign: the number is left out, not
		// shown as 123e+… (whose '+' is part of it).
		{`{"n":["` + a + `",123e+5,6]}`, `Run t with n=["` + a + `",…`},
		{`{"n":["` + a + `",1.5e+55,6]}`, `Run t with n=["` + a + `",…`},
	}
	for _, tt := range tests {
		if got := Describe("t", json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Describe(%s)\n got %s\nwant %s", tt.args, got, tt.want)
		}
	}
}

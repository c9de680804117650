package confirm

import (
	"strings"
	"testing"
)

// TestArgsSHA256RefusesNonJSONBlanks: only empty arguments, or JSON
// whitespace, hash as null. Arguments made of other blanks (a vertical tab,
// a form feed, U+0085, a no-break space, an ideographic space) are no JSON
// at all, and every JSON reader refuses them: ArgsSHA256 must refuse them
// too rather than bind a confirmation to "null".
func TestArgsSHA256RefusesNonJSONBlanks(t *testing.T) {
	for _, args := range []string{"\v", "\f", "\u0085", "\u00a0", "\u3000", " \u00a0\t", "\u2028"} {
		if h, err := ArgsSHA256([]byte(args)); err == nil {
			t.Errorf("ArgsSHA256(%q) = %s, nil; want an error (not JSON)", args, h)
		}
	}
	if got, want := Describe("wipe", []byte("\u00a0")), "Run wipe with unreadable arguments"; got != want {
		t.Errorf("Describe of a no-break space = %q, want %q", got, want)
	}
	null := mustHash("null")
	for _, args := range []string{"", " ", "\t\r\n ", " null\n"} {
		if h, err := ArgsSHA256([]byte(args)); err != nil || h != null {
			t.Errorf("ArgsSHA256(%q) = %s, %v; want the hash of null", args, h, err)
		}
	}
}

// TestArgsSHA256ReadersAgree: pairs that a Go, JavaScript or Python reader
// would read differently never hash alike, and inputs on which readers
// disagree whether they are JSON at all are refused.
func TestArgsSHA256ReadersAgree(t *testing.T) {
	differ := [][2]string{
		{`{"a":0}`, `{"a":-0}`},
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":100}`, `{"a":1e2}`},
		{`{"a":1e400}`, `{"a":1e401}`},
		{`{"a":9007199254740993}`, `{"a":9007199254740992}`},
		{`{"a":"x"}`, `{"a":"x\u0000"}`},
		{`{"a":"\u00e9"}`, `{"a":"e\u0301"}`},
		{`{"a":1}`, `{"a ":1}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
	}
	for _, p := range differ {
		if mustHash(p[0]) == mustHash(p[1]) {
			t.Errorf("%s and %s hash alike", p[0], p[1])
		}
	}
	same := [][2]string{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":"\u00e9\/<>&"}`, `{"a":"é/<>&"}`},
		{`{"\u0061":1}`, `{"a":1}`},
		{"{\"a\":\"\u2028\"}", `{"a":"\u2028"}`},
	}
	for _, p := range same {
		if mustHash(p[0]) != mustHash(p[1]) {
			t.Errorf("%s and %s hash differently", p[0], p[1])
		}
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, args := range []string{
		"\ufeff{\"a\":1}",              // BOM: Python's json refuses it, Go too
		`{"a":1,"\u0061":2}`,           // one name twice, one spelt by an escape
		`{"a":1,"A":2}`,                // encoding/json reads both into one field
		`{"K":1,"` + "\u212a" + `":2}`, // Kelvin sign folds to k
		`{"a":NaN}`, `{"a":Infinity}`, `{"a":01}`, `{"a":.5}`, `{"a":+1}`,
		`{"a":1,}`, `[1,]`, `{'a':1}`, `{"a":1}//`, `{"a":1} {"a":2}`,
		"{\"a\":\"\x01\"}", `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
		deep,
	} {
		if h, err := ArgsSHA256([]byte(args)); err == nil {
			t.Errorf("ArgsSHA256(%.40q) = %s, nil; want an error", args, h)
		}
	}
}

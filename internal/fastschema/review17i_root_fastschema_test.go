package fastschema

import (
	"strings"
	"testing"
)

const textMsg = "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"

// Invalid UTF-8 and an escaped lone UTF-16 surrogate, which encoding/json
// reads as U+FFFD, are refused in values and keys at any depth, with or
// without AllowControlChars, after malformed JSON and duplicates (as the
// reference decodes before it looks) and before strings out of bounds,
// a non-object and schema violations. Surrogate pairs, U+FFFD itself and
// an escaped backslash before "u" are text like any other.
func TestReview17iBrokenText(t *testing.T) {
	schema := `{"type":"object","properties":{"a":{"type":"string","maxLength":8},"b":{"type":"integer"}},"required":["b"],"additionalProperties":false}`
	long := strings.Repeat("x", 65)
	for _, tc := range []struct{ in, want string }{
		{"{\"b\":1,\"a\":\"\xff\"}", textMsg},
		{"{\"b\":1,\"a\":\"\xed\xa0\x80\"}", textMsg},
		{`{"b":1,"a":"\ud800"}`, textMsg},
		{`{"b":1,"a":"\uDC00"}`, textMsg},
		{`{"b":1,"a":"\ud800\u0041"}`, textMsg},
		{`{"b":1,"a":"\udbff\udbff"}`, textMsg},
		{`{"b":1,"a":"\\\udfff"}`, textMsg},
		{`{"b":1,"\ud800":1}`, textMsg},
		{"{\"b\":1,\"c\xc0\":1}", textMsg},
		{`{"b":1,"c":[{"d":"\ud800"}]}`, textMsg},
		{`{"b":"x","a":"\ud800"}`, textMsg},
		{`{"a":"\ud800"}`, textMsg},
		{`{"a":"` + long + `","b":1,"c":"\udfff"}`, textMsg},
		{`{"a":"\udfff","b":1e401}`, textMsg},
		{`["\udfff"]`, textMsg},
		{`"\udfff"`, textMsg},
		{`{"a":"\ud800","b":1,}`, "arguments are not valid JSON"},
		{`{"a":"\ud800","b":1}}`, "arguments have trailing data"},
		{`{"a":"\ud800","b":1,"b":2}`, `argument "b" appears twice`},
		{`{"b":1,"a":"\ud83d\ude00"}`, ""},
		{`{"b":1,"a":"\\ud800"}`, ""},
		{`{"b":1,"a":"\ufffd"}`, ""},
		{"{\"b\":1,\"a\":\"\xef\xbf\xbd\"}", ""},
		{`{"b":1,"a":"\uffff"}`, ""},
	} {
		for _, ctrl := range []bool{false, true} {
			opts := Options{MaxStringBytes: 64, AllowControlChars: ctrl}
			s := mustCompile(t, schema, opts)
			got := ""
			if e := s.Validate([]byte(tc.in)); e != nil {
				got = e.Message
			}
			if got != tc.want {
				t.Errorf("Validate(%q), AllowControlChars %v = %q; want %q", tc.in, ctrl, got, tc.want)
			}
			o := newOracle(t, decodeSchema(t, schema), opts)
			if err, _ := o.verdict([]byte(tc.in)); (err == nil) != (tc.want == "") {
				t.Errorf("oracle(%q) = %v; want valid=%v", tc.in, err, tc.want == "")
			}
		}
	}
}

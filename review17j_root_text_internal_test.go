package mcpguard

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
)

// review17jText builds strings from pieces whose verdict is known on its
// own: a good piece is complete text (a surrogate pair escaped in any
// letter case, an escaped backslash before "u", U+FFFD and
// noncharacters written or escaped, other escapes), a bad piece holds
// invalid UTF-8 or a lone surrogate that no neighbour can pair (a high
// one is followed, inside the piece, by something that is not a low one;
// every good piece ends with something that is not a high one).
var (
	review17jGood = []string{
		`a`, `\\`, `\\u`, `\\ud800`, `\\\\ud800`, `\\\\\\\\`, `\"`, `\/`, `\n`, `\t`, `\u0041`, `\u00e9`, `\u00E9`,
		`\ud83d\ude00`, `\uD83D\uDE00`, `\uD83d\uDe00`, `\udbff\udfff`, `\uDBFF\uDFFF`, `\ud800\udc00`,
		`\ufffd`, `\uFFFD`, `\ufffe`, `\uFFFF`, `\ue000`, `\ud7ff`, `\u2028`,
		"\xef\xbf\xbd", "\xef\xbf\xbe", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf", "\xc3\xa9", "\xf0\x9f\x98\x80", "\xed\x9f\xbf", "\xee\x80\x80",
		`udc00`, `d800`, `\\\ud83d\ude00`,
	}
	review17jBad = []string{
		`\ud800x`, `\uD800\u0041`, `\udbff\ud800\udc00`, `\ud83d\\ude00`, `\ud83d\ufffd`, `\udc00`, `\uDFFF`, `\\\udc00`,
		"\xff", "\xc3", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xc0\xaf", "\xe0\x80\xaf",
	}
)

// No valid text is refused, and no broken text passes, on the fast path
// (check), the reference with the same schema (Validate) and the
// reference path alone (a schema outside the fast subset), in strict and
// lenient mode, in values and member names at any depth; and
// confirm.ArgsSHA256, which the confirmation and multi round-trip steps
// run after validation, agrees with validation on every one.
func TestReview17jTextVerdicts(t *testing.T) {
	const want = "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"
	schemas := map[string]string{
		"fast":      `{"type":"object","properties":{"k":{"type":"string"},"n":{"type":"object"}}}`,
		"reference": `{"type":"object","properties":{"k":{"type":"string"},"n":{"type":"object"}},"propertyNames":{"maxLength":100000}}`,
	}
	type pair struct {
		v    *Validator
		name string
	}
	var vs []pair
	for name, schema := range schemas {
		for _, lenient := range []bool{false, true} {
			v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: lenient, MaxStringBytes: 1 << 16})
			if err != nil {
				t.Fatal(err)
			}
			if (v.fast != nil) != (name == "fast") {
				t.Fatalf("test premise: the %s schema runs the other path", name)
			}
			if lenient {
				name += ", lenient"
			}
			vs = append(vs, pair{v, name})
		}
	}
	r := rand.New(rand.NewPCG(17, 10))
	for range 4000 {
		var s strings.Builder
		broken := false
		for range 1 + r.IntN(5) {
			if r.IntN(6) == 0 {
				s.WriteString(review17jBad[r.IntN(len(review17jBad))])
				broken = true
			} else {
				s.WriteString(review17jGood[r.IntN(len(review17jGood))])
			}
		}
		str := s.String()
		var raw string
		switch r.IntN(3) {
		case 0:
			raw = `{"k":"` + str + `"}`
		case 1:
			raw = `{"n":{"` + str + `":[1,"x"]}}`
		default:
			raw = `{"n":{"m":["` + str + `",{"\ud83d\ude00":"\\u"}]}}`
		}
		if !json.Valid([]byte(raw)) {
			t.Fatalf("test premise: %q is not valid JSON", raw)
		}
		for _, p := range vs {
			for which, f := range map[string]func(json.RawMessage) (any, error){"check": p.v.check, "Validate": p.v.Validate} {
				_, err := f(json.RawMessage(raw))
				var de *DenialError
				switch {
				case broken && (!errors.As(err, &de) || de.Message != want):
					t.Errorf("%s schema: %s(%q) = %v; want %q", p.name, which, raw, err, want)
				case !broken && err != nil:
					t.Errorf("%s schema: %s(%q) = %v; want valid", p.name, which, raw, err)
				}
			}
		}
		if _, err := confirm.ArgsSHA256(json.RawMessage(raw)); (err != nil) != broken {
			t.Errorf("confirm.ArgsSHA256(%q) = %v; want refused: %v", raw, err, broken)
		}
	}
}

// At the MaxStringBytes boundary, text is measured as encoding/json
// decodes it on both paths (a pair is 4 bytes, U+FFFD and U+FFFF 3, an
// escaped backslash 1), in values and names; a long string whose only
// escape, at the end, is a pair passes, and the same with a lone
// surrogate is refused for it, not for its length.
func TestReview17jTextBoundary(t *testing.T) {
	const text = "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		raw  string
		max  int
		want string // "" valid, "long" too long, else the message
	}{
		{`{"k":"1234\ud83d\ude00"}`, 8, ""},
		{`{"k":"12345\ud83d\ude00"}`, 8, "long"},
		{`{"k":"12345\uFFFD"}`, 8, ""},
		{"{\"k\":\"12345\xef\xbf\xbd\"}", 8, ""},
		{"{\"k\":\"123456\xef\xbf\xbf\"}", 8, "long"},
		{`{"k":"1234567\\"}`, 8, ""},
		{`{"k":"12345678\\"}`, 8, "long"},
		{`{"k":"\\u\\u\\u\\u"}`, 8, ""},
		{`{"1234\uDBFF\uDFFF":1}`, 8, ""},
		{`{"12345\uDBFF\uDFFF":1}`, 8, "name"},
		{`{"k":"` + long + `\uD83D\uDE00"}`, 1<<20 + 4, ""},
		{`{"k":"` + long + `\uD83D\uDE00"}`, 1<<20 + 3, "long"},
		{`{"k":"` + long + `\uD83D"}`, 1<<20 + 3, text},
		{`{"k":"` + long + `\\uD83D"}`, 1<<20 + 6, ""},
		{`{"k":"` + long + `\uDE00"}`, 1 << 20, text},
	} {
		for name, schema := range map[string]string{
			"fast":      `{"type":"object","properties":{"k":{"type":"string"}}}`,
			"reference": `{"type":"object","properties":{"k":{"type":"string"}},"propertyNames":{"maxLength":100000}}`,
		} {
			v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true, MaxStringBytes: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
				_, err := f(json.RawMessage(tc.raw))
				got := ""
				if err != nil {
					got = err.Error()
				}
				ok := false
				switch tc.want {
				case "":
					ok = err == nil
				case "long":
					ok = strings.Contains(got, `argument "k" is longer than`)
				case "name":
					ok = strings.Contains(got, "argument names must")
				default:
					ok = strings.HasSuffix(got, tc.want)
				}
				if !ok {
					raw := tc.raw
					if len(raw) > 80 {
						raw = raw[:40] + "..." + raw[len(raw)-30:]
					}
					t.Errorf("%s schema, MaxStringBytes %d: %s(%q) = %v; want %s", name, tc.max, which, raw, err, tc.want)
				}
			}
		}
	}
}

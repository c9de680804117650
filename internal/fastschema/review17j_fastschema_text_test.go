package fastschema

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Strings built from pieces whose verdict is known on its own (good: a
// pair escaped in any letter case, an escaped backslash before "u",
// U+FFFD and noncharacters written or escaped; bad: invalid UTF-8, or a
// lone surrogate no neighbour can pair) are refused exactly when a piece
// is bad, by the fast path and the oracle alike, in values and names, at
// the MaxStringBytes boundary too (a pair is 4 bytes, U+FFFD 3).
func TestReview17jTextPieces(t *testing.T) {
	good := []string{
		`a`, `\\`, `\\u`, `\\ud800`, `\\\\ud800`, `\"`, `\u0041`, `\u00E9`,
		`\ud83d\ude00`, `\uD83D\uDE00`, `\uD83d\uDe00`, `\udbff\udfff`, `\uDBFF\uDFFF`, `\ud800\udc00`,
		`\ufffd`, `\uFFFD`, `\ufffe`, `\uFFFF`, `\ue000`, `\ud7ff`,
		"\xef\xbf\xbd", "\xef\xbf\xbe", "\xf4\x8f\xbf\xbf", "\xc3\xa9", "\xf0\x9f\x98\x80", "\xed\x9f\xbf",
		`\\\ud83d\ude00`,
	}
	bad := []string{
		`\ud800x`, `\uD800\u0041`, `\udbff\ud800\udc00`, `\ud83d\\ude00`, `\ud83d\ufffd`, `\udc00`, `\uDFFF`, `\\\udc00`,
		"\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf",
	}
	schema := `{"type":"object","properties":{"k":{"type":"string"},"n":{"type":"object"}},"additionalProperties":false}`
	for _, max := range []int{8, 64} {
		opts := Options{MaxStringBytes: max}
		s := mustCompile(t, schema, opts)
		o := newOracle(t, decodeSchema(t, schema), opts)
		r := rand.New(rand.NewPCG(17, uint64(max)))
		for range 3000 {
			var b strings.Builder
			broken := false
			for range 1 + r.IntN(4) {
				if r.IntN(6) == 0 {
					b.WriteString(bad[r.IntN(len(bad))])
					broken = true
				} else {
					b.WriteString(good[r.IntN(len(good))])
				}
			}
			raw := `{"k":"` + b.String() + `"}`
			if r.IntN(2) == 0 {
				raw = `{"n":{"` + b.String() + `":["\uD83D\uDE00"]}}`
			}
			agree(t, s, o, []byte(raw))
			e := s.Validate([]byte(raw))
			switch {
			case broken && (e == nil || e.Message != textMsg):
				t.Fatalf("MaxStringBytes %d: Validate(%q) = %v; want %q", max, raw, e, textMsg)
			case !broken && e != nil && e.kind != errTooLong && e.kind != errKeyTooLong:
				t.Fatalf("MaxStringBytes %d: Validate(%q) = %q; want valid or too long", max, raw, e.Message)
			}
		}
	}
}

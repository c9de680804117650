package fastschema

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestReview18TextPiecesAgree covers text the generators never write:
// raw (unescaped) C1 controls and DEL, \r and \b escapes, U+2028/U+2029
// raw and escaped, bidi and zero-width characters, the BOM, NBSP, raw
// and escaped letters that fold (Kelvin sign, long s), and multi-byte
// characters that straddle MaxStringBytes. They go into a value, a
// member name, an array element and a value checked by enum, const,
// pattern and length, under both control-character settings; the fast
// path must give the oracle's verdict on every one.
func TestReview18TextPiecesAgree(t *testing.T) {
	pieces := []string{
		"a", "K", "s", "\xc2\x80", "\xc2\x85", "\xc2\x9f", "\xc2\xa0", "\x7f", `\u007f`, `\u0080`, `\u009F`, `\u00a0`,
		`\r`, `\b`, `\f`, `\t`, `\n`, `\/`, `\u001f`, `\u0020`,
		"\xe2\x80\xa8", "\xe2\x80\xa9", `\u2028`, `\u2029`, "\xe2\x80\xae", `\u202E`, "\xe2\x80\x8b", `\u200b`,
		"\xef\xbb\xbf", `\uFEFF`, "\xe2\x84\xaa", `\u212a`, "\xc5\xbf", `\u017F`, "\xf0\x9f\x98\x80", `\ud83d\ude00`,
		"\xf3\xa0\x80\x81", `\udb40\udc01`,
	}
	schemas := []string{
		`{"type":"object","properties":{"v":{"type":"string","maxLength":3}},"additionalProperties":true}`,
		`{"type":"object","properties":{"v":{"enum":["K","\u212a","a\u2028","\u0080",1]}}}`,
		`{"type":"object","properties":{"v":{"const":"\u017f"}}}`,
		`{"type":"object","properties":{"v":{"pattern":"^[\\x00-\\x7e]*$"},"K":{"type":"integer"},"s":{"type":"integer"}},"additionalProperties":false}`,
		`{"type":"object","properties":{"v":{"type":"array","items":{"type":"string","minLength":2,"pattern":"\\s"}}}}`,
	}
	r := rand.New(rand.NewPCG(18, 18))
	for _, opts := range []Options{{MaxStringBytes: 6}, {MaxStringBytes: 7, AllowControlChars: true}, {MaxStringBytes: 64}} {
		for _, src := range schemas {
			s := mustCompile(t, src, opts)
			o := newOracle(t, decodeSchema(t, src), opts)
			for range 600 {
				var b strings.Builder
				for range 1 + r.IntN(3) {
					b.WriteString(pieces[r.IntN(len(pieces))])
				}
				text := b.String()
				for _, raw := range []string{
					`{"v":"` + text + `"}`,
					`{"` + text + `":["x"]}`,
					`{"v":["` + text + `"]}`,
					`{"v":"` + text + `","` + text + `":1}`,
				} {
					agree(t, s, o, []byte(raw))
				}
			}
		}
	}
}

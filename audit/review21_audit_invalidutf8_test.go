package audit_test

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview21InvalidUTF8Hash: each byte of invalid UTF-8 was hashed as
// \ufffd, so arguments that decoders read differently hashed alike. A
// WHATWG decoder (JavaScript's TextDecoder, Node's Buffer.toString, what
// a fetch-based server reads) replaces a maximal invalid subpart with one
// U+FFFD: "\xe2\x82" is one U+FFFD there and two in the old canonical
// form, like "\ufffd\ufffd". Python's json.loads and Rust's serde_json
// refuse invalid UTF-8 where they take "\ufffd". An attacker who sends
// bytes through the gateway (which forwards them) chose which of two
// different calls the record names.
func TestReview21InvalidUTF8Hash(t *testing.T) {
	differ := []struct{ a, b string }{
		{"{\"a\":\"\xe2\x82\"}", `{"a":"\ufffd\ufffd"}`},
		{"{\"a\":\"\xff\"}", `{"a":"\ufffd"}`},
		{"{\"a\":\"\xff\"}", "{\"a\":\"\ufffd\"}"},
		{"{\"a\":\"\xff\xfe\"}", "{\"a\":\"\xfe\xff\"}"},
		{"{\"a\":\"\xe2\x82\"}", "{\"a\":\"\xff\xff\"}"},
		{"[\"\xe2\x82x\"]", "[\"\xe2x\x82\"]"},
		{"{\"a\":\"\\ud800\xe2\x82\"}", `{"a":"\ud800\ufffd\ufffd"}`},
		{"{\"\xff\":1}", `{"\ufffd":1}`},
		{"{\"\x82\":0}", "{\"\xe2\":0}"},
		{"{\"a\xff\":1,\"a\xfe\":2}", "{\"a\xfe\":1,\"a\xff\":2}"},
	}
	key := []byte("k")
	for _, tc := range differ {
		if audit.ArgsSHA256(json.RawMessage(tc.a)) == audit.ArgsSHA256(json.RawMessage(tc.b)) {
			t.Errorf("ArgsSHA256(%q) == ArgsSHA256(%q), which decoders read differently", tc.a, tc.b)
		}
		if audit.ArgsHMAC(key, json.RawMessage(tc.a)) == audit.ArgsHMAC(key, json.RawMessage(tc.b)) {
			t.Errorf("ArgsHMAC(%q) == ArgsHMAC(%q), which decoders read differently", tc.a, tc.b)
		}
	}
	// What every decoder reads alike still hashes alike.
	same := []struct{ a, b string }{
		{"{\"a\":\"\xff\\u0041\"}", "{\"a\":\"\xffA\"}"},
		{"{ \"b\" : \"\xe2\x82\" , \"a\" : 1 }", "{\"a\":1,\"b\":\"\xe2\x82\"}"},
		{"{\"\xff\":{\"y\":1,\"x\":2}}", "{\"\xff\":{\"x\":2,\"y\":1}}"},
		{"\"\xff\\n\"", "\"\xff\n\""[:0] + "\"\xff\\u000a\""},
	}
	for _, tc := range same {
		if audit.ArgsSHA256(json.RawMessage(tc.a)) != audit.ArgsSHA256(json.RawMessage(tc.b)) {
			t.Errorf("ArgsSHA256(%q) != ArgsSHA256(%q), which every decoder reads alike", tc.a, tc.b)
		}
	}
}

// TestReview21InvalidUTF8Property: over random objects of keys and
// strings (a value, or the key of a one-member object) made of raw
// invalid bytes, escapes, lone surrogates and plain text, equal hashes
// mean equal readings by a reader that keeps what it was sent: each raw
// byte of invalid UTF-8 as itself, each escape decoded (a lone surrogate
// kept).
func TestReview21InvalidUTF8Property(t *testing.T) {
	parts := []string{"a", "b", "\xe2", "\x82", "\xff", "\xef\xbf\xbd", `\ufffd`, `\u0041`, "A", `\ud800`, `\udc00`, "\xed\xa0\x80", `\n`, "é", `\u00e9`}
	rng := rand.New(rand.NewPCG(21, 21))
	str := func() string {
		s := `"`
		for range rng.IntN(4) {
			s += parts[rng.IntN(len(parts))]
		}
		return s + `"`
	}
	seen := map[string]string{} // hash -> reading
	for range 40000 {
		var doc string
		if rng.IntN(2) == 0 {
			doc = "{" + str() + ":" + strconv.Itoa(rng.IntN(2)) + "}"
		} else {
			doc = `{"v":` + str() + "}"
		}
		h := audit.ArgsSHA256(json.RawMessage(doc))
		r := keptReading(t, doc)
		if r == "" {
			continue
		}
		if prev, ok := seen[h]; ok && prev != r {
			t.Fatalf("one hash for two readings:\n%q\n%q\n(doc %q)", prev, r, doc)
		}
		seen[h] = r
	}
}

// keptReading reads doc, {"v":string} or {string:digit}, keeping each
// raw byte of invalid UTF-8 and each lone surrogate as a token of its own.
func keptReading(t *testing.T, doc string) string {
	t.Helper()
	i := 1
	readStr := func() (string, bool) {
		i++ // quote
		var out []string
		bad := false
		for doc[i] != '"' {
			switch {
			case doc[i] == '\\' && doc[i+1] == 'u':
				r, _ := strconv.ParseUint(doc[i+2:i+6], 16, 32)
				i += 6
				if utf16.IsSurrogate(rune(r)) {
					out = append(out, "S"+strconv.FormatUint(r, 16))
				} else {
					out = append(out, "R"+string(rune(r)))
				}
			case doc[i] == '\\':
				out = append(out, "R\n")
				i += 2
			default:
				r, n := utf8.DecodeRuneInString(doc[i:])
				if r == utf8.RuneError && n == 1 {
					out = append(out, "B"+strconv.Itoa(int(doc[i])))
					bad = true
				} else {
					out = append(out, "R"+string(r))
				}
				i += n
			}
		}
		i++
		return strconv.Quote(strings.Join(out, "|")), bad
	}
	if strings.HasPrefix(doc, `{"v":`) {
		i = len(`{"v":`) - 1
		v, _ := readStr()
		return "v=" + v
	}
	k, _ := readStr()
	return k + ":" + doc[i+1:i+2]
}

package audit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// TestReview19LoneSurrogateHash: an escaped UTF-16 surrogate that is not
// half of a pair ("\ud800") was hashed as U+FFFD, the character Go's
// encoding/json reads in its place. JavaScript's JSON.parse and Python's
// json.loads (the languages of most MCP servers, and of the reference
// systems) keep it: {"note":"\ud800"} and {"note":"\ufffd"} are two
// different calls to such a server, which the gateway forwards as they
// are, and which got one args_sha256 (and one ArgsHMAC). Such a surrogate
// is now kept in the canonical form as its escape.
func TestReview19LoneSurrogateHash(t *testing.T) {
	differ := []struct{ a, b string }{
		{`{"note":"\ud800"}`, `{"note":"\ufffd"}`},
		{`{"note":"\ud800"}`, "{\"note\":\"\ufffd\"}"},
		{`{"note":"\udc00"}`, `{"note":"\ud800"}`},
		{`{"note":"\udbff"}`, `{"note":"\udfff"}`},
		{`{"\ud800":1}`, `{"\ufffd":1}`},
		{`{"\ud800":1}`, `{"\udc00":1}`},
		{`["a\ud800\ud800\udc00"]`, `["a\ufffd\ud800\udc00"]`},
		{`"\ud800x"`, `"\ufffdx"`},
		{`"\udc00\ud800"`, `"\ufffd\ufffd"`},
		// A lone surrogate's escape against the bytes of a surrogate
		// (invalid UTF-8, which every decoder reads otherwise).
		{`"\ud800"`, "\"\xed\xa0\x80\""},
	}
	key := []byte("k")
	for _, tc := range differ {
		if audit.ArgsSHA256(json.RawMessage(tc.a)) == audit.ArgsSHA256(json.RawMessage(tc.b)) {
			t.Errorf("ArgsSHA256(%s) == ArgsSHA256(%s), which a JavaScript or Python server reads differently", tc.a, tc.b)
		}
		if audit.ArgsHMAC(key, json.RawMessage(tc.a)) == audit.ArgsHMAC(key, json.RawMessage(tc.b)) {
			t.Errorf("ArgsHMAC(%s) == ArgsHMAC(%s), which a JavaScript or Python server reads differently", tc.a, tc.b)
		}
	}

	// What every decoder reads alike still hashes alike.
	same := []struct{ a, b string }{
		{`"\uD800"`, `"\ud800"`},
		{`{"\uDBFF":1}`, `{"\udbff":1}`},
		{`"\ud800\udc00"`, "\"\U00010000\""},
		{`"\uD83C\uDF89"`, "\"\U0001F389\""},
		{` { "b" : "\ud800" , "a" : 1 } `, `{"a":1,"b":"\ud800"}`},
	}
	for _, tc := range same {
		if ha, hb := audit.ArgsSHA256(json.RawMessage(tc.a)), audit.ArgsSHA256(json.RawMessage(tc.b)); ha != hb {
			t.Errorf("ArgsSHA256(%s) = %s, ArgsSHA256(%s) = %s; want equal", tc.a, ha, tc.b, hb)
		}
	}
}

// TestReview19LoneSurrogateCanonicalForm pins the canonical form: a lone
// surrogate as its escape in lower case, wherever it is (a value, a key,
// between other escapes); members sorted as before, a key with a lone
// surrogate where U+FFFD would sort, keys equal so far in their order.
func TestReview19LoneSurrogateCanonicalForm(t *testing.T) {
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	for _, tc := range []struct{ raw, canon string }{
		{`"\ud800x"`, `"\ud800x"`},
		{`"\uDC00"`, `"\udc00"`},
		{`"\ud800<\u0041\n\ud83c\udf89"`, `"\ud800\u003cA\n` + "\U0001F389" + `"`},
		{`"\ud800\ud800\udc00"`, `"\ud800` + "\U00010000" + `"`},
		{`"\udc00\ud800"`, `"\udc00\ud800"`},
		{`"\ud800\u0041"`, `"\ud800A"`},
		{"\"\xff\\ud800\xfe\"", "\"\xff\\ud800\xfe\""}, // bad bytes as themselves (TestReview21InvalidUTF8Hash)
		{`{"b":"x\ud800y","\udbff":1,"a":2}`, `{"a":2,"b":"x\ud800y","\udbff":1}`},
		{`{"\ud800":1,"\ufffd":2,"\udc00":3}`, `{"\ud800":1,"` + "\ufffd" + `":2,"\udc00":3}`},
		{`{"\ufffd":2,"\ud800":1}`, `{"` + "\ufffd" + `":2,"\ud800":1}`},
		{`{"y\ud800":{"\udfff":[1,"\udfff"]},"X\ud800":0}`, `{"X\ud800":0,"y\ud800":{"\udfff":[1,"\udfff"]}}`},
	} {
		if got, want := audit.ArgsSHA256(json.RawMessage(tc.raw)), sum(tc.canon); got != want {
			t.Errorf("ArgsSHA256(%s) = %s, want the hash of %s", tc.raw, got, tc.canon)
		}
	}
}

// keepLone returns raw with each escaped lone surrogate written as the
// private-use character U+E000 followed by its four hex digits, so that
// encoding/json reads what JSON.parse or json.loads reads: the surrogate
// itself, distinct from U+FFFD and from any other (the documents below
// hold no U+E000).
func keepLone(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			b.WriteByte(raw[i])
			i++
			continue
		}
		if raw[i+1] != 'u' {
			b.WriteString(raw[i : i+2])
			i += 2
			continue
		}
		v, _ := strconv.ParseUint(raw[i+2:i+6], 16, 32)
		r := rune(v)
		if !utf16.IsSurrogate(r) {
			b.WriteString(raw[i : i+6])
			i += 6
			continue
		}
		if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			lo, _ := strconv.ParseUint(raw[i+8:i+12], 16, 32)
			if utf16.DecodeRune(r, rune(lo)) != unicode.ReplacementChar {
				b.WriteString(raw[i : i+12])
				i += 12
				continue
			}
		}
		b.WriteString(`\ue000` + strings.ToLower(raw[i+2:i+6]))
		i += 6
	}
	return b.String()
}

// TestReview19LoneSurrogateProperty: random objects of keys and string
// values made of lone surrogates (either case), pairs, U+FFFD written
// three ways and plain letters: equal hash, equal reading, both by Go's
// encoding/json and by a reader that keeps lone surrogates; and an object
// whose members are reordered keeps its hash when no two keys read alike.
func TestReview19LoneSurrogateProperty(t *testing.T) {
	parts := []string{`\ud800`, `\uD800`, `\udc00`, `\udbff`, `\udfff`, `\ud800\udc00`, "\U00010000",
		`\ufffd`, "\ufffd", `\u0061`, `a`, `b`, `\ud83c`, `\udf89`, `\ud83c\udf89`}
	str := func(r *rand.Rand) string {
		var b strings.Builder
		b.WriteByte('"')
		for range r.IntN(4) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		b.WriteByte('"')
		return b.String()
	}
	r := rand.New(rand.NewPCG(19, 19))
	first := map[string]string{}
	bad := 0
	for range 20000 {
		n := 1 + r.IntN(4)
		ks, vs := make([]string, n), make([]string, n)
		var b strings.Builder
		b.WriteByte('{')
		for j := range n {
			if j > 0 {
				b.WriteByte(',')
			}
			ks[j], vs[j] = str(r), str(r)
			b.WriteString(ks[j] + ":" + vs[j])
		}
		b.WriteByte('}')
		raw := b.String()
		h := audit.ArgsSHA256(json.RawMessage(raw))
		if prev, ok := first[h]; ok {
			if !cmp.Equal(readArgs(t, prev), readArgs(t, raw)) || !cmp.Equal(readArgs(t, keepLone(prev)), readArgs(t, keepLone(raw))) {
				if bad++; bad <= 5 {
					t.Errorf("ArgsSHA256(%s) == ArgsSHA256(%s), read differently", prev, raw)
				}
			}
		} else {
			first[h] = raw
		}
		// Reversed: the same hash when no two keys read alike to Go.
		seen := map[string]bool{}
		distinct := true
		for _, k := range ks {
			var s string
			_ = json.Unmarshal([]byte(k), &s)
			distinct = distinct && !seen[s]
			seen[s] = true
		}
		if distinct {
			b.Reset()
			b.WriteByte('{')
			for j := n - 1; j >= 0; j-- {
				b.WriteString(ks[j] + ":" + vs[j])
				if j > 0 {
					b.WriteByte(',')
				}
			}
			b.WriteByte('}')
			if rev := b.String(); audit.ArgsSHA256(json.RawMessage(rev)) != h {
				if bad++; bad <= 5 {
					t.Errorf("ArgsSHA256(%s) != ArgsSHA256(%s), its members reversed", raw, rev)
				}
			}
		}
	}
}

// TestReview19LoneSurrogateLinear: keys and values with lone surrogates
// take the slower path that keeps their escapes; 40,000 objects of such
// keys and values hash in time of the order of the same document with
// "\ufffd" in their place (the guard and the gateway hash the arguments
// of every call they record).
func TestReview19LoneSurrogateLinear(t *testing.T) {
	doc := func(esc string) json.RawMessage {
		var b strings.Builder
		b.WriteByte('[')
		for i := range 40000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"%s%d":"x%s","B%d":["%s"]}`, esc, i, esc, i, esc)
		}
		b.WriteByte(']')
		return json.RawMessage(b.String())
	}
	plain, lone := doc(`\ufffd`), doc(`\ud800`)
	start := time.Now()
	hp := audit.ArgsSHA256(plain)
	once := time.Since(start)
	start = time.Now()
	hl := audit.ArgsSHA256(lone)
	d := time.Since(start)
	t.Logf("%d bytes: %v with U+FFFD, %v with lone surrogates", len(lone), once, d)
	if d > 8*once+300*time.Millisecond {
		t.Errorf("ArgsSHA256 of %d bytes with 120000 lone surrogates took %v; with U+FFFD in their place %v", len(lone), d, once)
	}
	if hp == hl {
		t.Errorf("lone surrogates hash as U+FFFD")
	}
}

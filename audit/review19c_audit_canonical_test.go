package audit

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// jsRead reads the JSON text raw as JavaScript's JSON.parse reads it (and
// Python's json.loads, for these purposes): strings as sequences of UTF-16
// code units, an escaped lone surrogate kept as itself, the members of an
// object as a map in which the last of equal keys wins, numbers as
// float64. It returns a text that is equal for two documents exactly when
// JSON.parse reads them alike (as values, member order aside), and false
// for what is not valid JSON or not valid UTF-8.
func jsRead(raw []byte) (string, bool) {
	r := jsReader{src: raw}
	v, ok := r.value(0)
	if !ok {
		return "", false
	}
	r.space()
	return v, r.pos == len(r.src)
}

type jsReader struct {
	src []byte
	pos int
}

func (r *jsReader) space() {
	for r.pos < len(r.src) && strings.IndexByte(" \t\n\r", r.src[r.pos]) >= 0 {
		r.pos++
	}
}

func (r *jsReader) value(depth int) (string, bool) {
	if depth > 2000 {
		return "", false
	}
	r.space()
	if r.pos >= len(r.src) {
		return "", false
	}
	switch b := r.src[r.pos]; {
	case b == '{':
		r.pos++
		members := map[string]string{}
		r.space()
		if r.pos < len(r.src) && r.src[r.pos] == '}' {
			r.pos++
			return "{}", true
		}
		for {
			r.space()
			k, ok := r.str()
			if !ok {
				return "", false
			}
			r.space()
			if r.pos >= len(r.src) || r.src[r.pos] != ':' {
				return "", false
			}
			r.pos++
			v, ok := r.value(depth + 1)
			if !ok {
				return "", false
			}
			members[units(k)] = v // the last of equal keys wins
			r.space()
			if r.pos >= len(r.src) {
				return "", false
			}
			r.pos++
			switch r.src[r.pos-1] {
			case ',':
				continue
			case '}':
			default:
				return "", false
			}
			break
		}
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		b.WriteByte('{')
		for _, k := range keys {
			b.WriteString(k + ":" + members[k] + ";")
		}
		b.WriteByte('}')
		return b.String(), true
	case b == '[':
		r.pos++
		var b strings.Builder
		b.WriteByte('[')
		r.space()
		if r.pos < len(r.src) && r.src[r.pos] == ']' {
			r.pos++
			return "[]", true
		}
		for {
			v, ok := r.value(depth + 1)
			if !ok {
				return "", false
			}
			b.WriteString(v + ";")
			r.space()
			if r.pos >= len(r.src) {
				return "", false
			}
			r.pos++
			switch r.src[r.pos-1] {
			case ',':
				continue
			case ']':
				b.WriteByte(']')
				return b.String(), true
			}
			return "", false
		}
	case b == '"':
		s, ok := r.str()
		return "s" + units(s), ok
	}
	for _, lit := range []string{"true", "false", "null"} {
		if strings.HasPrefix(string(r.src[r.pos:]), lit) {
			r.pos += len(lit)
			return lit, true
		}
	}
	start := r.pos
	for r.pos < len(r.src) && strings.IndexByte("+-.0123456789eE", r.src[r.pos]) >= 0 {
		r.pos++
	}
	text := string(r.src[start:r.pos])
	if !json.Valid([]byte(text)) {
		return "", false
	}
	f, _ := strconv.ParseFloat(text, 64) // ±Inf past the range, as JSON.parse
	return "n" + strconv.FormatFloat(f, 'g', -1, 64), true
}

// str reads the JSON string at r.pos as UTF-16 code units.
func (r *jsReader) str() ([]uint16, bool) {
	if r.pos >= len(r.src) || r.src[r.pos] != '"' {
		return nil, false
	}
	r.pos++
	var out []uint16
	for r.pos < len(r.src) {
		b := r.src[r.pos]
		switch {
		case b == '"':
			r.pos++
			return out, true
		case b < 0x20:
			return nil, false
		case b != '\\':
			c, n := utf8.DecodeRune(r.src[r.pos:])
			if c == utf8.RuneError && n == 1 {
				return nil, false
			}
			out = utf16.AppendRune(out, c)
			r.pos += n
			continue
		}
		if r.pos+1 >= len(r.src) {
			return nil, false
		}
		esc := r.src[r.pos+1]
		r.pos += 2
		switch esc {
		case '"', '\\', '/':
			out = append(out, uint16(esc))
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if r.pos+4 > len(r.src) {
				return nil, false
			}
			v, err := strconv.ParseUint(string(r.src[r.pos:r.pos+4]), 16, 16)
			if err != nil {
				return nil, false
			}
			out = append(out, uint16(v)) // a surrogate, paired or not, as it is
			r.pos += 4
		default:
			return nil, false
		}
	}
	return nil, false
}

func units(s []uint16) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, u := range s {
		fmt.Fprintf(&b, "%04x", u)
	}
	b.WriteByte('"')
	return b.String()
}

// goRead reads raw as encoding/json reads it into an any (a lone surrogate
// as U+FFFD, the last of equal keys winning).
func goRead(t *testing.T, raw []byte) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot read %s: %v", raw, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// jsDoc is a document as JSON.parse reads it, before it is written out:
// an object (members in their order, keys and strings as code units), an
// array, a string or a literal (a number, true, null).
type jsDoc struct {
	kind    byte // '{', '[', '"' or 'l'
	str     []uint16
	lit     string
	keys    [][]uint16
	members []jsDoc
}

// jsUnits are the code units the random documents are made of: lone
// surrogates of both halves, pairs (D83C DF89), U+FFFD, letters of either
// case, what is escaped, and the letters of a surrogate's escape after a
// backslash ("\\ud800" is no surrogate).
var jsUnits = [][]uint16{
	{'a'}, {'b'}, {'A'}, {'u'}, {'d'}, {'8'}, {'0'}, {'"'}, {'\\'}, {'/'}, {'\n'}, {0x01}, {'<'}, {0x2028},
	{0xe9}, {0xfffd}, {0xd800}, {0xdbff}, {0xdc00}, {0xdfff}, {0xd83c, 0xdf89}, {0xd83c}, {0xdf89},
}

func randUnits(r *rand.Rand, n int) []uint16 {
	var s []uint16
	for range r.IntN(n + 1) {
		s = append(s, jsUnits[r.IntN(len(jsUnits))]...)
	}
	return s
}

func randDoc(r *rand.Rand, depth int) jsDoc {
	k := r.IntN(10)
	if depth >= 3 && k < 5 {
		k += 5
	}
	switch {
	case k < 3:
		d := jsDoc{kind: '{'}
		n := r.IntN(6)
		if r.IntN(4) == 0 {
			n = 14 + r.IntN(10) // past the 16 members kept in arrays
		}
		for range n {
			d.keys = append(d.keys, randUnits(r, 2))
			d.members = append(d.members, randDoc(r, depth+1))
		}
		return d
	case k < 5:
		d := jsDoc{kind: '['}
		for range r.IntN(4) {
			d.members = append(d.members, randDoc(r, depth+1))
		}
		return d
	case k < 9:
		return jsDoc{kind: '"', str: randUnits(r, 4)}
	}
	return jsDoc{kind: 'l', lit: []string{"1", "-0.5", "1e2", "true", "null", "0"}[r.IntN(6)]}
}

// write writes d as JSON text, each code unit written one of the ways
// that JSON.parse reads as that unit (raw, \u in either case, a short
// escape), with white space here and there.
func (d jsDoc) write(b *strings.Builder, r *rand.Rand) {
	ws := func() {
		if r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n"}[r.IntN(4)])
		}
	}
	ws()
	switch d.kind {
	case '{':
		b.WriteByte('{')
		for i := range d.members {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			writeUnits(b, r, d.keys[i])
			ws()
			b.WriteByte(':')
			d.members[i].write(b, r)
		}
		ws()
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, m := range d.members {
			if i > 0 {
				b.WriteByte(',')
			}
			m.write(b, r)
		}
		ws()
		b.WriteByte(']')
	case '"':
		writeUnits(b, r, d.str)
	default:
		b.WriteString(d.lit)
	}
	ws()
}

func writeUnits(b *strings.Builder, r *rand.Rand, s []uint16) {
	esc := func(u uint16) {
		h := fmt.Sprintf("%04x", u)
		if r.IntN(2) == 0 {
			h = strings.ToUpper(h)
		}
		b.WriteString(`\u` + h)
	}
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		u := s[i]
		if utf16.IsSurrogate(rune(u)) {
			if i+1 < len(s) && utf16.DecodeRune(rune(u), rune(s[i+1])) != utf8.RuneError && r.IntN(2) == 0 {
				b.WriteRune(utf16.DecodeRune(rune(u), rune(s[i+1])))
				i++
				continue
			}
			esc(u) // a lone one can only be escaped; a pair, either way
			continue
		}
		short := map[uint16]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\n': `\n`, '\b': `\b`, '\t': `\t`}[u]
		switch {
		case r.IntN(3) == 0:
			esc(u)
		case short != "" && (u < 0x20 || u == '"' || u == '\\' || r.IntN(2) == 0):
			b.WriteString(short)
		case u < 0x20:
			esc(u)
		default:
			b.WriteRune(rune(u))
		}
	}
	b.WriteByte('"')
}

// TestReview19cCanonicalAgainstJSONParse differential-tests the canonical
// form against a reader that keeps lone surrogates, as JSON.parse and
// json.loads do, on random documents of objects (a few members, or more
// than 16, keys repeated or reading alike), arrays and strings of lone
// surrogates, pairs, U+FFFD and escaped characters:
//   - each document written twice, its code units escaped differently
//     ("\u00e9" and "é", "\uD800" and "\ud800", "\ud83c\udf89" and the
//     character), hashes alike;
//   - the canonical form reads, to JSON.parse and to encoding/json, as the
//     document does, and is its own canonical form;
//   - two documents with one hash read alike, to both readers.
func TestReview19cCanonicalAgainstJSONParse(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 3))
	type reading struct{ raw, js, goes string }
	byHash := map[string]reading{}
	fails := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if fails++; fails <= 8 {
			t.Errorf(format, args...)
		}
	}
	n := 6000
	if testing.Short() {
		n = 1000
	}
	for range n {
		d := randDoc(r, 0)
		var b1, b2 strings.Builder
		d.write(&b1, r)
		d.write(&b2, r)
		raw1, raw2 := []byte(b1.String()), []byte(b2.String())
		js1, ok1 := jsRead(raw1)
		js2, ok2 := jsRead(raw2)
		if !ok1 || !ok2 || js1 != js2 {
			t.Fatalf("the reference reads %q (%v) and %q (%v) differently", raw1, ok1, raw2, ok2)
		}
		h1, h2 := ArgsSHA256(raw1), ArgsSHA256(raw2)
		if h1 != h2 {
			fail("ArgsSHA256(%s) != ArgsSHA256(%s): one document escaped two ways", raw1, raw2)
		}
		c, ok := appendCanonical(nil, raw1)
		if !ok {
			fail("appendCanonical(%s) refused it", raw1)
			continue
		}
		if jsc, _ := jsRead(c); jsc != js1 {
			fail("canonical form %s of %s reads otherwise to JSON.parse", c, raw1)
		}
		if g, gc := goRead(t, raw1), goRead(t, c); g != gc {
			fail("canonical form %s of %s reads otherwise to encoding/json:\n%s\n%s", c, raw1, gc, g)
		}
		if cc, _ := appendCanonical(nil, c); string(cc) != string(c) {
			fail("canonical form of the canonical form %s is %s", c, cc)
		}
		got := reading{string(raw1), js1, goRead(t, raw1)}
		if prev, ok := byHash[h1]; ok && (prev.js != got.js || prev.goes != got.goes) {
			fail("ArgsSHA256(%s) == ArgsSHA256(%s), read differently", prev.raw, got.raw)
		} else if !ok {
			byHash[h1] = got
		}
	}
}

// TestReview19cLoneSurrogateEdges pins the edges of a lone surrogate's
// escape: an escaped backslash before "ud800" (text, not a surrogate), a
// high surrogate last in a string or before a quote escape, a key and its
// value both with one, keys with one among many members (past the arrays
// of 16), repeated, and in nested objects.
func TestReview19cLoneSurrogateEdges(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := 30; i > 0; i-- {
			fmt.Fprintf(&b, `"k%02d\ud800":{"\udc%02d":%d},`, i, i, i)
		}
		b.WriteString(extra + `"z":0}`)
		return b.String()
	}
	manyCanon := func(extra string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(&b, `"k%02d\ud800":{"\udc%02d":%d},`, i, i, i)
		}
		b.WriteString(extra + `"z":0}`)
		return b.String()
	}
	for _, tc := range []struct{ raw, canon string }{
		{`"\\ud800"`, `"\\ud800"`},
		{`"\\\ud800"`, `"\\\ud800"`},
		{`"\\ud800\ud800"`, `"\\ud800\ud800"`},
		{`{"\\uD800":"\\udc00"}`, `{"\\uD800":"\\udc00"}`},
		{`"x\uDBFF"`, `"x\udbff"`},
		{`"\uDBFF\""`, `"\udbff\""`},
		{`"\uDBFF\\"`, `"\udbff\\"`},
		{`"\ud800\/\udc00"`, `"\ud800/\udc00"`},
		{`{"\uD800":"\uDC00"}`, `{"\ud800":"\udc00"}`},
		{`{"a\ud800":1,"a\uD800":2,"a\ufffd":3}`, `{"a\ud800":1,"a\ud800":2,"a` + "\ufffd" + `":3}`},
		{`{"\ud800":{"\ud800":{"\ud800":"\ud800"}},"\u00e9\udc00":[{"\udfff":"\ud800"}]}`,
			`{"` + "\u00e9" + `\udc00":[{"\udfff":"\ud800"}],"\ud800":{"\ud800":{"\ud800":"\ud800"}}}`},
		{many(""), manyCanon("")},
		{many(`"k15\ud800":"again",`), strings.Replace(manyCanon(""), `"k15\ud800":{"\udc15":15},`, `"k15\ud800":{"\udc15":15},"k15\ud800":"again",`, 1)},
	} {
		got, ok := appendCanonical(nil, []byte(tc.raw))
		if !ok || string(got) != tc.canon {
			t.Errorf("appendCanonical(%s) = %s, %v\nwant %s", tc.raw, got, ok, tc.canon)
		}
	}
}

// FuzzReview19cCanonical: appendCanonical never panics; what it accepts
// has a canonical form that is valid JSON and, when the input is valid
// UTF-8, is its own canonical form and reads to JSON.parse (and to
// encoding/json) as the input does.
func FuzzReview19cCanonical(f *testing.F) {
	for _, s := range []string{`{"\ud800":1,"\ufffd":2}`, `"\\ud800\ud800"`, `{"a":"\uDBFF"}`, `["\ud83c\udf89\ud83c"]`,
		`{"b":{"\udc00":[1,{"\ud800x":"\u00e9"}]},"a":"\ud800\ud800\udc00"}`, `"\uD800\u0041"`, `{"A":1,"a\ud800":2,"a":3}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, ok := appendCanonical(nil, []byte(raw))
		if !ok {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form %q of %q is not JSON", c, raw)
		}
		if !utf8.ValidString(raw) {
			// Each byte of invalid UTF-8 becomes the escape \ufffd,
			// which the next pass writes as the character: not a
			// fixed point, and JSON must be UTF-8.
			return
		}
		if cc, ok := appendCanonical(nil, c); !ok || string(cc) != string(c) {
			t.Fatalf("canonical form of the canonical form %q of %q is %q", c, raw, cc)
		}
		js, ok := jsRead([]byte(raw))
		if !ok {
			t.Fatalf("the reference does not read %q, which appendCanonical accepts", raw)
		}
		if jsc, _ := jsRead(c); jsc != js {
			t.Fatalf("canonical form %q of %q reads otherwise to JSON.parse", c, raw)
		}
		if g, gc := goRead(t, []byte(raw)), goRead(t, c); g != gc {
			t.Fatalf("canonical form %q of %q reads otherwise to encoding/json", c, raw)
		}
	})
}

package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// TestReview17gEscapedKeysLinear: a key with an escape is decoded into a
// buffer that holds every escaped key decoded before it, and the check for
// invalid UTF-8 and for letters that fold, added in the seventeenth
// session, scanned that whole buffer for each key: hashing took time
// quadratic in the escaped keys (700 kB of arguments, 40,000 objects of one
// escaped key, took 2.8 s where it took 40 ms). The guard and the gateway
// hash the arguments of every call they record, refused ones included.
func TestReview17gEscapedKeysLinear(t *testing.T) {
	doc := func(key string) json.RawMessage {
		var b strings.Builder
		b.WriteByte('[')
		for i := range 40000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"%s%d":0,"B%d":1}`, key, i, i)
		}
		b.WriteByte(']')
		return json.RawMessage(b.String())
	}
	plain, escaped := doc("a"), doc(`\u0061`)
	start := time.Now()
	audit.ArgsSHA256(plain)
	once := time.Since(start)
	start = time.Now()
	audit.ArgsSHA256(escaped)
	if d := time.Since(start); d > 8*once+300*time.Millisecond {
		t.Errorf("ArgsSHA256 of %d bytes with 40000 escaped keys took %v; with the same keys unescaped %v", len(escaped), d, once)
	}
}

// TestReview17gHashKept pins hashes that the version before the
// seventeenth session computed (commit ebdd547): arguments and tool
// definitions whose objects have no two keys that decode or fold alike
// keep their args_sha256 and their gateway pin (ToolDigest). Keys with
// invalid UTF-8 were put in order by their bytes, not as decoded, so
// {"\xc0":1,"é":2} (U+FFFD sorts after é, the byte 0xc0 before its 0xc3)
// changed hash though nothing in it reads alike.
func TestReview17gHashKept(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"name":"refundOrder","description":"Refund an order","inputSchema":{"type":"object","properties":{"orderId":{"type":"string","maxLength":64},"amountCents":{"type":"integer","minimum":1},"reasonCode":{"type":"string","enum":["damaged","lateDelivery","wrongItem"]}},"required":["orderId","amountCents"],"additionalProperties":false},"annotations":{"destructiveHint":true,"idempotentHint":false,"openWorldHint":false,"readOnlyHint":false}}`,
			"34972019be56de6ba4579f1b1e4b491eec9657c0500ce3e15b9f275ec2850fc1"},
		{`{"kind":1,"\u212aelvin":2,"Size":3,"\u017f":4,"k2":[{"Zeta":1,"alpha":2,"Beta":3}]}`,
			"211a54b4052bab5a6ccf5e4ff3bdd379613807524525781ca1a4a39fe9857ac3"},
		{`{"f01":1,"F02":2,"f03":3,"F04":4,"f05":5,"F06":6,"f07":7,"F08":8,"f09":9,"F10":10,"f11":11,"F12":12,"f13":13,"F14":14,"f15":15,"F16":16,"f17":17,"F18":18,"\u0066\u0031\u0039":19,"Éa":20,"éb":21}`,
			"927e73be1b0f190b7fefbd376bee3acf50716a973e2d40afb29d892f76443de1"},
		{`{"\u0041c":{"x\u00e9":1,"Xa":2},"ab":[{"Q":1,"q2":2}],"k":1,"k":2}`,
			"84ace3b371ef4cbccc77b3624c6a53a0819b2c3f619cf40f038a90540cd2e86d"},
		// Keys of invalid UTF-8 ({"\xc0":1,"é":2} and the like) kept
		// their order but not their hash in the twenty-first session:
		// each bad byte is written as itself, no longer as \ufffd
		// (TestReview21InvalidUTF8Hash).
	} {
		if got := audit.ArgsSHA256(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("ArgsSHA256(%q) = %s, earlier versions %s", tc.raw, got, tc.want)
		}
	}
}

// genKey is a key of the random objects below: its decoded bytes and the
// ways a document may write it.
type genKey struct {
	dec   string
	forms []string
}

var genKeys = []genKey{
	{"a", []string{`a`, `\u0061`}},
	{"A", []string{`A`, `\u0041`}},
	{"b", []string{`b`}},
	{"B", []string{`B`, `\u0042`}},
	{"s", []string{`s`}},
	{"S", []string{`S`}},
	{"\u017f", []string{"\u017f", `\u017f`}}, // long s: folds to S
	{"k", []string{`k`}},
	{"K", []string{`K`}},
	{"\u212a", []string{"\u212a", `\u212A`}}, // Kelvin sign: folds to K
	{"é", []string{"é", `\u00e9`}},
	{"É", []string{"É", `\u00c9`}},
	{"\xff", []string{"\xff"}},
	{"\xfe", []string{"\xfe"}},
	{"\xc0", []string{"\xc0"}},
	{"\ufffd", []string{"\ufffd", `\ufffd`, `\ud800`, `\udfff`}},
	{"\uffff", []string{"\uffff", `\uffff`}},
	{"ab", []string{`ab`}},
	{"aB", []string{`aB`, `a\u0042`}},
	{"AB", []string{`AB`}},
	{"a\xff", []string{"a\xff", `\u0061` + "\xff"}},
	{"A\xfe", []string{"A\xfe"}},
	{"orderId", []string{`orderId`}},
	{"orderid", []string{`orderid`}},
	{"zip", []string{`zip`}},
}

// genMember is a member of a random object: its key (an index into
// genKeys), the form the document writes it in, and its value.
type genMember struct {
	key  int
	form string
	val  string
}

// decodedKey is key as a decoder reads it: each byte of invalid UTF-8 as
// U+FFFD.
func decodedKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		b.WriteRune(r)
	}
	return b.String()
}

func foldedKey(key string) string { return string(foldkey.Append(nil, []byte(key))) }

// genObject returns the members of a random object; with many, more than
// 16 (past the scanner's arrays), some of them keys of one letter and a
// number.
func genObject(r *rand.Rand, depth int) []genMember {
	n := 1 + r.IntN(5)
	if r.IntN(4) == 0 {
		n = 14 + r.IntN(10)
	}
	ms := make([]genMember, n)
	for i := range ms {
		k := r.IntN(len(genKeys))
		m := genMember{key: k, form: genKeys[k].forms[r.IntN(len(genKeys[k].forms))]}
		if n > 8 && r.IntN(2) == 0 {
			// A key of its own, in either case.
			m.key = -1
			m.form = string(rune('a'-32*r.IntN(2))+rune(r.IntN(3))) + strconv.Itoa(r.IntN(30))
		}
		switch {
		case depth < 2 && r.IntN(6) == 0:
			m.val = writeObject(genObject(r, depth+1))
		case depth < 2 && r.IntN(8) == 0:
			m.val = "[" + writeObject(genObject(r, depth+1)) + "]"
		default:
			m.val = strconv.Itoa(r.IntN(3))
		}
		ms[i] = m
	}
	return ms
}

// dec returns m's decoded key bytes (before invalid UTF-8 is read as
// U+FFFD).
func (m genMember) dec() string {
	if m.key < 0 {
		return m.form
	}
	return genKeys[m.key].dec
}

func writeObject(ms []genMember) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + m.form + `":` + m.val)
	}
	b.WriteByte('}')
	return b.String()
}

// collisions reports whether two keys of ms decode alike with different
// bytes, or fold alike and decode differently.
func collisions(ms []genMember) (decoded, folded bool) {
	for i := range ms {
		for j := range i {
			a, b := ms[i].dec(), ms[j].dec()
			da, db := decodedKey(a), decodedKey(b)
			decoded = decoded || (da == db && a != b)
			folded = folded || (foldedKey(a) == foldedKey(b) && da != db)
		}
	}
	return decoded, folded
}

// oldCanonical is the canonical form of ms, whose values are numbers, as
// earlier versions wrote it: members in the order of their decoded key
// bytes (those with equal keys in their order), keys as encoding/json
// writes them.
func oldCanonical(ms []genMember) string {
	sorted := slices.Clone(ms)
	slices.SortStableFunc(sorted, func(a, b genMember) int { return strings.Compare(a.dec(), b.dec()) })
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range sorted {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.dec())
		b.Write(k)
		b.WriteString(":" + m.val)
	}
	b.WriteByte('}')
	return b.String()
}

// readFoldDeep is what a handler reads that decodes raw into struct fields
// at every level (the last key that folds like a field's name winning):
// objects as readFields, arrays item by item, other values as they are.
type readFields struct {
	A, B, S, K, AB, É, OrderID json.RawMessage
}

func readFoldDeep(t *testing.T, raw []byte) any {
	t.Helper()
	switch bytes.TrimSpace(raw)[0] {
	case '{':
		var f readFields
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("decode %q: %v", raw, err)
		}
		var out []any
		for _, v := range []json.RawMessage{f.A, f.B, f.S, f.K, f.AB, f.É, f.OrderID} {
			if v == nil {
				out = append(out, nil)
				continue
			}
			out = append(out, readFoldDeep(t, v))
		}
		return out
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			t.Fatalf("decode %q: %v", raw, err)
		}
		var out []any
		for _, v := range items {
			out = append(out, readFoldDeep(t, v))
		}
		return out
	}
	return string(bytes.TrimSpace(raw))
}

// TestReview17gOrderProperty checks the canonical order on random
// objects of keys that collide (equal once decoded, equal under case
// folding, escaped or not, invalid UTF-8), up to 23 members, nested:
//   - equal hash, equal reading, by a map and by struct fields at every
//     level;
//   - a reordering that keeps the order of the keys of each folding class
//     (what a reader can tell) keeps the hash: the order is total and
//     consistent;
//   - an object none of whose keys collide (values numbers) hashes as
//     earlier versions hashed it.
func TestReview17gOrderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 7))
	first := map[string]string{}
	bad := 0
	fail := func(format string, args ...any) {
		if bad++; bad <= 6 {
			t.Errorf(format, args...)
		}
	}
	for range 6000 {
		ms := genObject(r, 0)
		raw := writeObject(ms)
		h := audit.ArgsSHA256(json.RawMessage(raw))
		if h == "" || len(h) != 64 {
			t.Fatalf("ArgsSHA256(%q) = %q", raw, h)
		}

		// Same hash, same reading.
		if prev, ok := first[h]; ok {
			if !cmp.Equal(readArgs(t, prev), readArgs(t, raw)) || !cmp.Equal(readFoldDeep(t, []byte(prev)), readFoldDeep(t, []byte(raw))) {
				fail("ArgsSHA256(%q) == ArgsSHA256(%q), read differently", prev, raw)
			}
		} else {
			first[h] = raw
		}

		// A reordering that keeps each folding class's order.
		perm := slices.Clone(ms)
		r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		classes := map[string][]genMember{}
		for _, m := range ms {
			f := foldedKey(m.dec())
			classes[f] = append(classes[f], m)
		}
		for i, m := range perm {
			f := foldedKey(m.dec())
			perm[i], classes[f] = classes[f][0], classes[f][1:]
		}
		if p := writeObject(perm); audit.ArgsSHA256(json.RawMessage(p)) != h {
			fail("ArgsSHA256(%q) != ArgsSHA256(%q), a reordering that keeps the order of keys that fold alike", raw, p)
		}

		// No collision (and no nested object, and no escaped lone
		// surrogate, kept as its escape since the nineteenth session:
		// TestReview19LoneSurrogateCanonicalForm): the hash of earlier
		// versions.
		// Nor invalid UTF-8, written as itself since the twenty-first
		// session (TestReview21InvalidUTF8Hash).
		if dc, fc := collisions(ms); !dc && !fc && !strings.ContainsAny(raw[1:], "{") && !strings.Contains(raw, `\ud800`) && !strings.Contains(raw, `\udfff`) && utf8.ValidString(raw) {
			want := sha256.Sum256([]byte(oldCanonical(ms)))
			if h != hex.EncodeToString(want[:]) {
				fail("ArgsSHA256(%q) = %s, earlier versions hashed it as %s", raw, h, oldCanonical(ms))
			}
		}
	}
}

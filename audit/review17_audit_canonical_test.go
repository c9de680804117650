package audit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// readArgs returns what a Go handler reads from raw: encoding/json's value,
// numbers as written.
func readArgs(t *testing.T, raw string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// TestReview17SameHashSameReading checks the property the hash is for:
// arguments recorded with equal args_sha256 are arguments a handler reads
// alike. Keys that hold invalid UTF-8 were sorted by their raw bytes,
// though a decoder reads each bad byte as U+FFFD: two such keys, which a
// handler reads as one (the last wins), were put in byte order instead of
// their order in the document, so {"\xff":1,"\xfe":2} (read as 2) and
// {"\xfe":2,"\xff":1} (read as 1) had one hash.
func TestReview17SameHashSameReading(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"{\"\xff\":1,\"\xfe\":2}", "{\"\xfe\":2,\"\xff\":1}"},
		{"{\"\xfe\":2,\"\\ufffd\":\"x\"}", "{\"\\ufffd\":\"x\",\"\xfe\":2}"},
		{"{\"a\xff\":1,\"\\u0061\xfe\":2}", "{\"\\u0061\xfe\":2,\"a\xff\":1}"},
		{"[{\"\xc3\":true,\"\x80\":false}]", "[{\"\x80\":false,\"\xc3\":true}]"},
	} {
		if cmp.Equal(readArgs(t, tc.a), readArgs(t, tc.b)) {
			t.Fatalf("%q and %q read alike: a bad case", tc.a, tc.b)
		}
		if audit.ArgsSHA256(json.RawMessage(tc.a)) == audit.ArgsSHA256(json.RawMessage(tc.b)) {
			t.Errorf("ArgsSHA256(%q) == ArgsSHA256(%q), but a handler reads %v and %v", tc.a, tc.b, readArgs(t, tc.a), readArgs(t, tc.b))
		}
		key := []byte("k")
		if audit.ArgsHMAC(key, json.RawMessage(tc.a)) == audit.ArgsHMAC(key, json.RawMessage(tc.b)) {
			t.Errorf("ArgsHMAC(%q) == ArgsHMAC(%q), but a handler reads them differently", tc.a, tc.b)
		}
	}

	// Random objects of awkward keys and values: equal hash, equal reading.
	keys := []string{`"a"`, `"b"`, `"\u0061"`, "\"\xff\"", "\"\xfe\"", "\"\xc3\"", `"\ud800"`, `"\udc00"`,
		"\"\ufffd\"", `"\ufffd"`, "\"a\xff\"", `"a\ud800"`, "\"\\u0061\xff\"", `"\ud83c\udf89"`, "\"\U0001F389\""}
	vals := []string{`1`, `1.0`, `"x"`, "\"\xff\"", `"\ud800"`, "\"\ufffd\"", `[1,{"b":2,"a":1}]`, `{"a":1}`, `null`}
	r := rand.New(rand.NewPCG(17, 17))
	first := map[string]string{}
	bad := 0
	for range 20000 {
		var b strings.Builder
		b.WriteByte('{')
		for j := range 1 + r.IntN(3) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(keys[r.IntN(len(keys))])
			b.WriteByte(':')
			b.WriteString(vals[r.IntN(len(vals))])
		}
		b.WriteByte('}')
		raw := b.String()
		h := audit.ArgsSHA256(json.RawMessage(raw))
		prev, ok := first[h]
		if !ok {
			first[h] = raw
			continue
		}
		if diff := cmp.Diff(readArgs(t, prev), readArgs(t, raw)); diff != "" && bad < 5 {
			bad++
			t.Errorf("ArgsSHA256(%q) == ArgsSHA256(%q), read differently (-first +second):\n%s", prev, raw, diff)
		}
	}
}

// TestReview17InvalidKeyCanonicalForm pins the canonical form of keys with
// invalid UTF-8: each bad byte written as itself (since the twenty-first
// session, TestReview21InvalidUTF8Hash; it was \ufffd), keys sorted by
// their bytes, and, in an object with keys that decode
// alike, sorted as decoded, those keys in their order in the document (the
// third case: the one the fix changes). See also TestReview17gHashKept.
func TestReview17InvalidKeyCanonicalForm(t *testing.T) {
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	for _, tc := range []struct{ raw, canon string }{
		{"{\"\xff\":1}", "{\"\xff\":1}"},
		{"{\"b\":1,\"\xff\":2,\"a\":3}", "{\"a\":3,\"b\":1,\"\xff\":2}"},
		{"{\"\xff\":2,\"\xfe\":1}", "{\"\xff\":2,\"\xfe\":1}"},
		{"{\"z\xff\":1,\"\xc3\":2,\"\xf0\x9f\x8e\x89\":3}", "{\"z\xff\":1,\"\xc3\":2,\"\U0001F389\":3}"},
	} {
		if got, want := audit.ArgsSHA256(json.RawMessage(tc.raw)), sum(tc.canon); got != want {
			t.Errorf("ArgsSHA256(%q) = %s, want the hash of %s", tc.raw, got, tc.canon)
		}
	}
}

// foldReading is what a handler that decodes into struct fields with
// encoding/json reads: it matches keys to fields under Unicode case folding
// ("s", "S" and "\u017f" to S; "k", "K" and the Kelvin sign to K), the last
// key in the document winning.
type foldReading struct{ A, B, S, K any }

func readFold(t *testing.T, raw string) []foldReading {
	t.Helper()
	var v []foldReading
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// TestReview17CaseFoldedKeys: encoding/json, which many handlers decode
// arguments with (into a struct), and clients tool definitions with, takes
// keys that differ only in letter case for one field, the last one
// winning. The canonical form sorted such keys by their bytes, so
// {"amount":1,"Amount":1000} (read as 1000) and {"Amount":1000,"amount":1}
// (read as 1) had one hash: a gateway's record, or a pinned tool
// definition, could not tell them apart.
func TestReview17CaseFoldedKeys(t *testing.T) {
	nested := func(t *testing.T, raw string) any {
		var v []struct{ B foldReading }
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatalf("decode %q: %v", raw, err)
		}
		return v
	}
	flat := func(t *testing.T, raw string) any { return readFold(t, raw) }
	for _, tc := range []struct {
		a, b string
		read func(*testing.T, string) any
	}{
		{`[{"a":1,"A":1000}]`, `[{"A":1000,"a":1}]`, flat},
		{`[{"s":1,"\u017f":9}]`, `[{"\u017f":9,"s":1}]`, flat},
		{"[{\"k\":1,\"\u212a\":2,\"b\":3}]", "[{\"b\":3,\"\u212a\":2,\"k\":1}]", flat},
		{`[{"b":{"a":1,"A":2}}]`, `[{"b":{"A":2,"a":1}}]`, nested},
	} {
		ra, rb := tc.read(t, tc.a), tc.read(t, tc.b)
		if cmp.Equal(ra, rb) {
			t.Fatalf("%s and %s read alike: a bad case", tc.a, tc.b)
		}
		if audit.ArgsSHA256(json.RawMessage(tc.a)) == audit.ArgsSHA256(json.RawMessage(tc.b)) {
			t.Errorf("ArgsSHA256(%s) == ArgsSHA256(%s), but encoding/json reads %+v and %+v", tc.a, tc.b, ra, rb)
		}
	}

	// Random objects of such keys: equal hash, equal reading, by a map
	// and by struct fields.
	keys := []string{`"a"`, `"A"`, `"\u0041"`, `"b"`, `"B"`, `"s"`, `"S"`, `"\u017f"`, "\"\u017f\"", `"k"`, `"K"`, `"\u212a"`, "\"\u212a\""}
	r := rand.New(rand.NewPCG(17, 18))
	first := map[string]string{}
	bad := 0
	for range 20000 {
		var b strings.Builder
		b.WriteString("[{")
		for j := range 1 + r.IntN(4) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(keys[r.IntN(len(keys))])
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(r.IntN(3)))
		}
		b.WriteString("}]")
		raw := b.String()
		h := audit.ArgsSHA256(json.RawMessage(raw))
		prev, ok := first[h]
		if !ok {
			first[h] = raw
			continue
		}
		if !cmp.Equal(readArgs(t, prev), readArgs(t, raw)) || !cmp.Equal(readFold(t, prev), readFold(t, raw)) {
			if bad++; bad <= 5 {
				t.Errorf("ArgsSHA256(%s) == ArgsSHA256(%s), read differently: %+v, %+v", prev, raw, readFold(t, prev), readFold(t, raw))
			}
		}
	}
}

// TestReview17CaseFoldedKeysElsewhere pins the canonical form around the
// fix above: objects without two keys that fold alike keep their keys in
// byte order (upper case first) as before, whatever their order in the
// document; in an object with such keys ({"a":1,"A":2}), keys are in
// folded order, those that fold alike in their order in the document.
func TestReview17CaseFoldedKeysElsewhere(t *testing.T) {
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	for _, tc := range []struct{ raw, canon string }{
		{`{"b":1,"Zone":2,"a":3,"customerId":4}`, `{"Zone":2,"a":3,"b":1,"customerId":4}`},
		{`{"a":{"b":1,"A":2},"B":[{"a":1,"A":2}]}`, `{"B":[{"a":1,"A":2}],"a":{"A":2,"b":1}}`},
		{`{"\u212a":1,"a":2}`, `{"a":2,"` + "\u212a" + `":1}`},
		{`{"k":1,"k":2,"j":0}`, `{"j":0,"k":1,"k":2}`},
	} {
		if got, want := audit.ArgsSHA256(json.RawMessage(tc.raw)), sum(tc.canon); got != want {
			t.Errorf("ArgsSHA256(%s) = %s, want the hash of %s", tc.raw, got, tc.canon)
		}
	}
}

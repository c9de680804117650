package fastschema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema generator for differential tests: random schemas drawn from
// the fast subset (and a little beyond it, for regexp fallbacks), and
// argument documents shaped after them, then sometimes damaged.

var (
	genNames = []string{"a", "b", "A", "ab", "k", "K", `\u212a`, "é", `\u00e9`, "É", "", "s", `\u017f`, `a\u0062`, "x y", "~/", `\u0000`, `\ud800`}
	genTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}
	genNums  = []string{"0", "-0", "0.0", "1", "1.0", "1e0", "10e-1", "0.1", "1e-1", "0.3", "-1", "-1.5", "2.5", "100", "1e2", "1E+2", "1e-20", "123456789012345678901234567890", "1e400", "1e-400", "-1e400", "0.30000000000000004", "9007199254740993", "5", "3",
		"1e401", "-1E-401", "1e+0400", "1" + strings.Repeat("0", 127), "1" + strings.Repeat("0", 128)}
	genStrs     = []string{`""`, `"a"`, `"ab"`, `"abc"`, `"A"`, `"é"`, `"\u00e9"`, `"e\u0301"`, `"😀"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00"`, `"\u0000"`, `"\u007f"`, `"\u0085"`, `"\t"`, `"\n"`, `"a\n"`, `"k"`, `"\u212a"`, `"K"`, "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xef\xbb\xbf\"", `"\u00a0"`, `"\/"`, `"1"`, `"2024-02-29"`, `"2023-02-29"`, `"2024-01-01T23:59:60Z"`, `"2024-01-01t10:00:00z"`, `"23:59:60+00:00"`, `"a@b.com"`, `"\"a\"@b.com"`, `"a@[1.2.3.4]"`, `"a@["`, `"1.2.3.4"`, `"01.2.3.4"`, `"::1"`, `"fe80::1%eth0"`, `"example.com."`, `"a-.com"`, `"http://x/ y"`, `"http://[::1]/"`, `"http://x.com/"`, `"123e4567-e89b-12d3-a456-426614174000"`, `"123E4567-E89B-12D3-A456-426614174000"`, `"CUST-00001"`, `"` + strings.Repeat("a", 63) + `"`, `"` + strings.Repeat("a", 64) + `"`, `"` + strings.Repeat("a", 65) + `"`}
	genPatterns = []string{`^a`, `a$`, `^[a-z]+$`, `^\d{4}-\d{2}$`, `(?i)^ab$`, `(?i)k`, `^\w*$`, `^.$`, `^.*$`, `\s`, `^$`, ``, `é`, `^[^a]$`, `^(a|b)c?$`, `\bx`, `^a{2,3}$`, `[\x00-\x1f]`, `^\S+$`, `^\p{L}+$`, `(?s)^.$`, `(?m)^a$`, `^CUST-[A-Z0-9]{5}$`}
	genFormats  = []string{"date", "time", "date-time", "email", "uuid", "uri", "ipv4", "ipv6", "hostname"}
	genOpts     = []Options{testOpts, {MaxStringBytes: 1}, {MaxStringBytes: 3, AllowControlChars: true}, {MaxStringBytes: 6}}
)

type gen struct{ r *rand.Rand }

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *gen) scalar() string {
	switch g.r.IntN(4) {
	case 0:
		return g.pick(genNums)
	case 1:
		return g.pick(genStrs)
	case 2:
		return g.pick([]string{"true", "false"})
	}
	return "null"
}

// schema returns the text of a random schema.
func (g *gen) schema(depth int) string {
	if g.r.IntN(12) == 0 {
		return g.pick([]string{"true", "false", "{}"})
	}
	var kw []string
	add := func(k, v string) { kw = append(kw, `"`+k+`":`+v) }
	if g.r.IntN(3) > 0 {
		var ts []string
		for _, i := range g.r.Perm(len(genTypes))[:1+g.r.IntN(3)] {
			ts = append(ts, `"`+genTypes[i]+`"`)
		}
		if len(ts) == 1 && g.r.IntN(2) == 0 {
			add("type", ts[0])
		} else {
			add("type", "["+strings.Join(ts, ",")+"]")
		}
	}
	for range g.r.IntN(4) {
		switch k := g.r.IntN(16); k {
		case 0, 1:
			add([]string{"minLength", "maxLength"}[k], g.pick([]string{"0", "1", "2", "3", "2.0", "1e1"}))
		case 2:
			b, _ := json.Marshal(g.pick(genPatterns))
			add("pattern", string(b))
		case 3:
			add("format", `"`+g.pick(genFormats)+`"`)
		case 4, 5, 6, 7:
			add([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}[k-4], g.pick(genNums))
		case 8:
			var es []string
			for range g.r.IntN(4) {
				es = append(es, g.scalar())
			}
			add("enum", "["+strings.Join(es, ",")+"]")
		case 9:
			add("const", g.scalar())
		case 10, 11:
			if depth < 3 {
				add("properties", "{"+strings.Join(g.members(depth), ",")+"}")
			}
		case 12:
			var rs []string
			used := map[string]bool{}
			for range 1 + g.r.IntN(3) {
				if n := g.pick(genNames); !used[n] {
					used[n] = true
					rs = append(rs, `"`+n+`"`)
				}
			}
			add("required", "["+strings.Join(rs, ",")+"]")
		case 13:
			add("additionalProperties", g.pick([]string{"true", "false"}))
		case 14:
			add(g.pick([]string{"minProperties", "maxProperties", "minItems", "maxItems"}), fmt.Sprint(g.r.IntN(3)))
		case 15:
			if depth < 3 {
				add("items", g.schema(depth+1))
			}
		}
	}
	return "{" + strings.Join(kw, ",") + "}"
}

// members returns the "name": schema pairs of a properties keyword; now
// and then more than 8 of them (the name index).
func (g *gen) members(depth int) []string {
	n := 1 + g.r.IntN(4)
	if g.r.IntN(8) == 0 {
		n = 8 + g.r.IntN(12)
	}
	var ps []string
	used := map[string]bool{}
	for range n {
		name := g.pick(genNames)
		if g.r.IntN(3) == 0 {
			name = fmt.Sprintf("p%d", g.r.IntN(20))
		}
		if !used[name] {
			used[name] = true
			ps = append(ps, `"`+name+`":`+g.schema(depth+1))
		}
	}
	return ps
}

// value returns the text of a JSON value shaped after the decoded schema s
// (an object at depth 0).
func (g *gen) value(s any, depth int) string {
	m, _ := s.(map[string]any)
	want := ""
	if depth == 0 {
		want = "object"
	} else if m != nil && g.r.IntN(6) > 0 {
		switch t := m["type"].(type) {
		case string:
			want = t
		case []any:
			want, _ = t[g.r.IntN(len(t))].(string)
		}
		if e, ok := m["enum"].([]any); ok && len(e) > 0 && g.r.IntN(2) == 0 {
			b, _ := json.Marshal(e[g.r.IntN(len(e))])
			return string(b)
		}
	}
	if want == "" {
		want = g.pick(genTypes)
	}
	if depth > 4 && (want == "object" || want == "array") {
		want = "null"
	}
	switch want {
	case "object":
		props, _ := m["properties"].(map[string]any)
		var names []string
		for k := range props {
			names = append(names, k)
		}
		if rq, ok := m["required"].([]any); ok {
			for _, k := range rq {
				names = append(names, k.(string))
			}
		}
		n := g.r.IntN(4)
		if g.r.IntN(10) == 0 {
			n = 10 + g.r.IntN(20) // past 16 unknown keys: the sorted duplicate check
		}
		var members []string
		for range n {
			key, sub := `"`+g.pick(genNames)+`"`, any(nil)
			switch {
			case len(names) > 0 && g.r.IntN(4) > 0:
				k := names[g.r.IntN(len(names))]
				b, _ := json.Marshal(k)
				key, sub = string(b), props[k]
			case g.r.IntN(3) == 0:
				key = fmt.Sprintf(`"%s%d"`, g.pick([]string{"p", "P", "q", `\u0070`}), g.r.IntN(25))
			}
			members = append(members, key+":"+g.value(sub, depth+1))
		}
		return "{" + strings.Join(members, ",") + "}"
	case "array":
		var el []string
		for range g.r.IntN(4) {
			el = append(el, g.value(m["items"], depth+1))
		}
		return "[" + strings.Join(el, ",") + "]"
	case "string":
		return g.pick(genStrs)
	case "number", "integer":
		return g.pick(genNums)
	case "boolean":
		return g.pick([]string{"true", "false"})
	}
	return "null"
}

// damage sometimes flips, cuts or inserts bytes.
func (g *gen) damage(b []byte) []byte {
	switch g.r.IntN(12) {
	case 0:
		if len(b) > 0 {
			b[g.r.IntN(len(b))] = "\"\\{}[],:0-e.\x00\xff a\x7fu"[g.r.IntN(18)]
		}
	case 1:
		b = b[:g.r.IntN(len(b)+1)]
	case 2:
		i := g.r.IntN(len(b) + 1)
		ins := g.pick([]string{`\u0061`, `\ud800`, `\`, `"`, ` `, "\xc3", "\xa9", `,`, `1`, `e5`, `.0`, `\u00`, `\n`, "\t"})
		b = append(b[:i:i], append([]byte(ins), b[i:]...)...)
	}
	return b
}

// GenerateCase returns a random schema text and a source of argument
// documents for it, for the differential test against the root package.
func GenerateCase(r *rand.Rand) (schema string, args func() []byte) {
	g := &gen{r: r}
	src := g.schema(0)
	if strings.HasPrefix(src, `{"`) && r.IntN(2) == 0 {
		src = `{"type":"object",` + src[1:]
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		panic(fmt.Sprintf("generated schema %s: %v", src, err))
	}
	return src, func() []byte { return g.damage([]byte(g.value(doc, 0))) }
}

// TestReview14GeneratedSchemas compares the fast path with the oracle on
// random schemas and documents shaped after them.
func TestReview14GeneratedSchemas(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	compiled, valid, invalid := 0, 0, 0
	for range 1500 {
		src, args := GenerateCase(r)
		opts := genOpts[r.IntN(len(genOpts))]
		fast, ok := Compile(decodeSchema(t, src), opts)
		if !ok {
			continue
		}
		compiled++
		o := newOracle(t, decodeSchema(t, src), opts)
		for range 20 {
			in := args()
			got := fast.Validate(in)
			want, panicked := o.verdict(in)
			if got != nil && got.kind == errDepth {
				continue
			}
			if (got == nil) != (want == nil) {
				t.Fatalf("schema %s, %+v:\nValidate(%q) = %v; oracle says %v (v6 panicked: %v)", src, opts, in, got, want, panicked)
			}
			if want == nil {
				valid++
			} else {
				invalid++
			}
		}
	}
	if compiled < 1000 || valid < 3000 || invalid < 3000 {
		t.Errorf("compiled %d schemas, %d valid and %d invalid documents: too few to prove much", compiled, valid, invalid)
	}
}

// FuzzSchemaDifferential compares the fast path with the oracle on the
// schema generated from seed, for raw and for a generated document.
func FuzzSchemaDifferential(f *testing.F) {
	for seed := range uint64(40) {
		_, args := GenerateCase(rand.New(rand.NewPCG(seed, 0)))
		f.Add(seed, args())
	}
	for _, in := range []string{`{"a\u0062":1,"ab":2}`, `{"\ud800":1,"\udfff":2}`, "{\"s\":\"\xc0\xaf\"}", `{"n":10e-1}`, "\u00a0null"} {
		f.Add(uint64(7), []byte(in))
	}
	f.Fuzz(func(t *testing.T, seed uint64, raw []byte) {
		r := rand.New(rand.NewPCG(seed, 0))
		src, args := GenerateCase(r)
		opts := genOpts[seed%uint64(len(genOpts))]
		fast, ok := Compile(decodeSchema(t, src), opts)
		if !ok {
			return
		}
		o := newOracle(t, decodeSchema(t, src), opts)
		agree(t, fast, o, raw)
		agree(t, fast, o, args())
	})
}

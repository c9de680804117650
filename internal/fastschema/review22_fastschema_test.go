package fastschema

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestReview22PoolDoesNotPinArguments: once Validate returns, the scratch
// space it hands back to the pool holds no slice of the caller's
// arguments. The path of the value being checked and the names kept for
// the duplicate check point into raw; left in place, a later document
// that is shallower or has fewer names overwrote only some of them, so a
// state that kept being reused (as on a busy server) pinned earlier
// argument buffers, and the text in them, for as long as it lived: up to
// 64 path entries and 2048 names, each from another call.
func TestReview22PoolDoesNotPinArguments(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"pad":"x"`)
	for i := range 40 {
		b.WriteString(`,"k` + strconv.Itoa(i) + `":1`)
	}
	b.WriteString(`,"deep":` + strings.Repeat(`{"a":[`, 30) + `1` + strings.Repeat(`]}`, 30) + `}`)
	valid := b.String()
	docs := map[string]string{
		"valid":          valid,
		"syntax_deep":    strings.Replace(valid, `[1]`, `[1,]`, 1),
		"schema_deep":    strings.Replace(valid, `[1]`, `["s"]`, 1),
		"dup_late":       strings.Replace(valid, `"k39":1`, `"k39":1,"K39":2`, 1),
		"too_deep":       `{"k0":1,"k1":2,"d":` + strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70) + `}`,
		"bad_text_after": strings.Replace(valid, `[1]`, `[1,"\ud800"]`, 1),
	}
	for _, src := range []string{`true`, `{}`, `{"properties":{"k0":{"type":"integer"},"a":{}},"additionalProperties":true}`, `{"properties":{"deep":{"properties":{"a":{"items":{"type":"integer"}}}}}}`} {
		s := mustCompile(t, src, testOpts)
		for name, doc := range docs {
			raw := []byte(doc)
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
			hi := lo + uintptr(len(raw))
			into := func(p []byte) bool {
				a := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
				return cap(p) > 0 && lo <= a && a < hi
			}
			reused := false
			for range 50 { // the race detector's pool drops some states
				s.Validate(raw)
				st := s.pool.Get().(*state)
				if st.s != s {
					continue // a new state, not the one Validate used
				}
				reused = true
				for i, sg := range st.path {
					if into(sg.key) {
						t.Errorf("schema %s, %s: the pooled path entry %d still points into the arguments", src, name, i)
						break
					}
				}
				for i, k := range st.keys[:cap(st.keys)] {
					if into(k.key) {
						t.Errorf("schema %s, %s: the pooled name %d still points into the arguments", src, name, i)
						break
					}
				}
				if into(st.raw) {
					t.Errorf("schema %s, %s: the pooled state keeps the arguments", src, name)
				}
				s.pool.Put(st)
				break
			}
			if !reused {
				t.Fatalf("schema %s, %s: the pool never handed back the state Validate used", src, name)
			}
		}
	}
}

// TestReview22BriefProbes: the fast path agrees with the reference
// pipeline (the oracle) on the combinations this review was asked about:
// properties with additionalProperties false and required names that
// need escaping or fold alike; enum and const over spellings of one
// number (1, 1.0, 1e0, 10e-1, -0, beyond 2^53, 1e-400); integer checks of
// 1.0, 1e2 and 1.5e300; code points against UTF-16 units and bytes with
// surrogate pairs, lone surrogates and invalid UTF-8; patterns with
// Unicode classes, anchors and case folding; formats; boolean
// subschemas; and the schemas it must refuse (multipleOf, $ref, $defs,
// $anchor, patternProperties, formats it does not reimplement).
func TestReview22BriefProbes(t *testing.T) {
	schemas := []string{
		`{"properties":{"a~b":{"type":"string"},"c/d":{},"k":{"type":"integer"}},"required":["a~b","c/d","\u00e9"],"additionalProperties":false}`,
		`{"properties":{"K":{}, "s":{"type":"string"}},"additionalProperties":false}`,
		`{"properties":{"K":{}, "s":{"type":"string"}}}`,
		`{"properties":{"n":{"enum":[1,"1",null,true]}}}`,
		`{"properties":{"n":{"const":-0}}}`,
		`{"properties":{"n":{"const":0.0}}}`,
		`{"properties":{"n":{"const":1e0}}}`,
		`{"properties":{"n":{"const":9007199254740993}}}`,
		`{"properties":{"n":{"const":{"a":1}}}}`,
		`{"properties":{"n":{"const":null}}}`,
		`{"properties":{"n":{"const":false}}}`,
		`{"properties":{"n":{"enum":[]}}}`,
		`{"properties":{"n":{"enum":[[1]]}}}`,
		`{"properties":{"n":{"type":["integer","null"]}}}`,
		`{"properties":{"n":{"type":"integer"}}}`,
		`{"properties":{"n":{"type":["integer","string"],"minLength":2,"minimum":5}}}`,
		`{"properties":{"n":{"type":"number","maximum":1e2,"exclusiveMinimum":-0}}}`,
		`{"properties":{"n":{"multipleOf":0.1}}}`,
		`{"properties":{"s":{"minLength":2,"maxLength":2}}}`,
		`{"properties":{"s":{"pattern":"^\\p{L}+$"}}}`,
		`{"properties":{"s":{"pattern":"^[a-z]{2,3}$"}}}`,
		`{"properties":{"s":{"pattern":"(?i)^k$"}}}`,
		`{"properties":{"s":{"pattern":"^.$"}}}`,
		`{"properties":{"s":{"pattern":"^\\w+$"}}}`,
		`{"properties":{"s":{"pattern":"\\d"}}}`,
		`{"properties":{"s":{"pattern":"a{0}b?$"}}}`,
		`{"properties":{"s":{"pattern":"(?i)sa"}}}`,
		`{"properties":{"s":{"pattern":"[\\x00-\\x7f]"}}}`,
		`{"properties":{"s":{"pattern":"^(a|b)$"}}}`,
		`{"properties":{"s":{"pattern":"^\\s*x\\S$"}}}`,
		`{"properties":{"s":{"format":"date"}}}`,
		`{"properties":{"s":{"format":"email"}}}`,
		`{"properties":{"s":{"format":"ipv4"}}}`,
		`{"properties":{"s":{"format":"hostname"}}}`,
		`{"properties":{"s":{"format":"uri"}}}`,
		`{"properties":{"s":{"format":"regex"}}}`,
		`{"properties":{"s":{"format":"duration"}}}`,
		`{"$defs":{"x":{"type":"string"}},"properties":{"s":{"$ref":"#/$defs/x"}}}`,
		`{"properties":{"s":{"$anchor":"x"}}}`,
		`{"patternProperties":{"^x":{"type":"string"}},"properties":{"a":{}},"additionalProperties":false}`,
		`{"properties":{"a":false,"b":true},"additionalProperties":false}`,
		`{"properties":{"a":{"items":false},"b":{"items":true},"c":{"items":{"type":"integer"},"minItems":1,"maxItems":2}}}`,
		`{"properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{"type":"object","required":["c"]}}}}}}`,
		`{"minProperties":1,"maxProperties":2}`,
		`{"required":["\u0000","a\"b","\\"]}`,
		`true`, `false`, `{}`,
		`{"type":"object","enum":[1]}`,
		`{"properties":{"a":{"minLength":1.0,"maxItems":2e0}}}`,
		`{"properties":{"a":{"maxLength":1e2}}}`,
		`{"properties":{"a":{"minimum":1e1000001}}}`,
		`{"properties":{"a":{"enum":[1e1000001, 1e400]}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"type":"null"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"type":"null"}}}`,
		`{"properties":{"a":{"type":"boolean","enum":[true]}}}`,
		`{"properties":{"a":{"dependentRequired":{}}}}`,
		`{"properties":{"a":{"type":"string","format":"date","pattern":"^2","minLength":10,"enum":["2020-01-01","2020-13-01","x"]}}}`,
	}
	vals := []string{
		`1`, `1.0`, `1e0`, `10e-1`, `0.1e1`, `100e-2`, `-0`, `0`, `-0.0`, `0e10`, `1E+0`,
		`9007199254740992`, `9007199254740993`, `9007199254740993.0`, `90071992547409930e-1`,
		`1e2`, `100`, `1.5e300`, `1.5`, `1e-400`, `1e400`, `-1e400`, `0.1`, `0.30000000000000004`, `5`, `4.999999999999999999999`,
		`null`, `true`, `false`, `"1"`, `""`, `"a"`, `"ab"`, `"abc"`, `"é"`, `"e\u0301"`, `"\ud83d\ude00"`, `"\ud83d\ude00\ud83d\ude00"`,
		`"\ud800"`, `"\udc00\ud800"`, `"\ud800x"`, "\"\xff\"", "\"\xed\xa0\x80\"", `"\u212a"`, `"k"`, `"K"`, `"\u017fa"`, `"sa"`, `"SA"`,
		`"x\n"`, `"\tx9"`, `"\u00a0xy"`, `"2020-01-01"`, `"2020-02-30"`, `"2020-13-01"`, `"a@b.c"`, `"1.2.3.4"`, `"01.2.3.4"`, `"+1.2.3.4"`,
		`"ex.com"`, `"-ex.com"`, `"http://x/"`, `"x"`, `"(?"`, `"P1D"`, `"b"`, `""`,
		`[]`, `[1]`, `[1,2]`, `[1,2,3]`, `[1.0]`, `[1.5]`, `[{}]`, `[{"c":1}]`, `{}`, `{"a":1}`, `{"c":1}`, `{"b":[{"c":1}]}`, `{"b":[{}]}`,
		`{"a":1}`,
	}
	keys := []string{`a`, `n`, `s`, `a~b`, `c/d`, `\u0061`, `\u212a`}
	mustRefuse := []string{"multipleOf", "$ref", "$anchor", "patternProperties", `"regex"`, `"duration"`, "draft-07", "dependentRequired", "1e1000001}", `{"a":1}`, "[[1]]"}
	for _, src := range schemas {
		doc := decodeSchema(t, src)
		fast, ok := Compile(doc, testOpts)
		refuse := false
		for _, m := range mustRefuse {
			refuse = refuse || strings.Contains(src, m)
		}
		if ok == refuse {
			t.Fatalf("Compile(%s) ok = %v", src, ok)
		}
		if !ok {
			continue
		}
		o := newOracle(t, doc, testOpts)
		docs := []string{``, `null`, `{}`, `{"a~b":"x","c/d":1,"é":2}`, `{"a~b":"x","c/d":1,"\u00e9":2}`,
			`{"a~b":"x","c/d":1,"e\u0301":2}`, `{"\u0000":1,"a\"b":1,"\\":1}`, `{"a":{"b":[{"c":1},{"d":2}]}}`,
			`{"a":{"b":[{"c":1},{"c":2,"C":3}]}}`, `{"k":1,"\u212a":2}`, `{"s":"x","\u017f":"y"}`}
		for _, k := range keys {
			for _, v := range vals {
				docs = append(docs, `{"`+k+`":`+v+`}`, `{"a~b":"x","c/d":1,"`+k+`":`+v+`}`)
			}
		}
		for _, d := range docs {
			agree(t, fast, o, []byte(d))
		}
	}
}

// TestReview22EnumSpellings: enum strings and numbers match whatever the
// spelling on either side (escapes, U+FFFD written out, exponents).
func TestReview22EnumSpellings(t *testing.T) {
	src := `{"properties":{"a":{"enum":["\u00e9","a\"b","\ud83d\ude00","\ud800","","\u0000","x\/y",1e-400,0.1,-0.0]}}}`
	ins := []string{`"é"`, `"\u00E9"`, `"e\u0301"`, `"a\"b"`, `"a\u0022b"`, `"😀"`, `"\uD83D\uDE00"`, `"\ufffd"`, "\"\xef\xbf\xbd\"", `"\ud800"`, `""`, `"\u0000"`, `"x/y"`, `"x\/y"`, `0`, `1e-400`, `10e-401`, `0.1`, `1e-1`, `0.10`, `-0`, `0.0`, `1`}
	doc := decodeSchema(t, src)
	for _, opts := range []Options{testOpts, {MaxStringBytes: 64, AllowControlChars: true}} {
		fast, ok := Compile(doc, opts)
		if !ok {
			t.Fatal("Compile refused the schema")
		}
		o := newOracle(t, doc, opts)
		for _, in := range ins {
			agree(t, fast, o, []byte(`{"a":`+in+`}`))
		}
	}
}

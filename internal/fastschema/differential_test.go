package fastschema

import (
	"math/rand/v2"
	"strings"
	"testing"
)

var testOpts = Options{MaxStringBytes: 64}

// Realistic tool schemas, as the caller hands them over (strict mode has
// already closed the objects that have properties).
const (
	refundSchema = `{
		"type": "object",
		"properties": {
			"customer_id": {"type": "string", "pattern": "^CUST-[A-Z0-9]{5}$", "description": "the customer"},
			"amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000},
			"reason": {"type": "string", "minLength": 10, "maxLength": 50}
		},
		"required": ["customer_id", "amount", "reason"],
		"additionalProperties": false
	}`
	noteSchema = `{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"properties": {
			"title": {"type": "string", "minLength": 1, "maxLength": 20},
			"meta": {
				"type": "object",
				"properties": {
					"due": {"type": "string", "format": "date"},
					"at": {"type": "string", "format": "date-time"},
					"priority": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3}
				},
				"required": ["due"],
				"additionalProperties": false
			},
			"tags": {"type": "array", "items": {"type": "string", "format": "date"}, "minItems": 1, "maxItems": 3}
		},
		"required": ["title"],
		"additionalProperties": false
	}`
	enumSchema = `{
		"type": "object",
		"properties": {
			"status": {"enum": ["open", "closed", "pending", "é"]},
			"level": {"enum": [1, 2, 3.5, null, true]},
			"mode": {"const": "dry"},
			"n": {"type": ["integer", "null"], "enum": [0, 1e2, -3, null]}
		},
		"additionalProperties": false
	}`
	intSchema = `{
		"type": "object",
		"properties": {
			"count": {"type": "integer", "minimum": 0, "maximum": 100},
			"offset": {"type": "integer", "exclusiveMinimum": -1, "exclusiveMaximum": 1e3},
			"big": {"type": "integer", "maximum": 123456789012345678901234567890},
			"tiny": {"type": "number", "minimum": -0.000000000000000000001, "maximum": 1e-20}
		},
		"additionalProperties": false
	}`
	unicodeSchema = `{
		"type": "object",
		"properties": {
			"name": {"type": "string", "minLength": 3, "maxLength": 5},
			"emoji": {"type": "string", "maxLength": 1},
			"any": true
		},
		"required": ["name"],
		"additionalProperties": false
	}`
	formatSchema = `{
		"type": "object",
		"properties": {
			"email": {"format": "email"},
			"id": {"type": "string", "format": "uuid"},
			"site": {"type": "string", "format": "uri"},
			"ip4": {"format": "ipv4"},
			"ip6": {"format": "ipv6"},
			"host": {"format": "hostname"},
			"t": {"format": "time"}
		},
		"additionalProperties": false
	}`
	openSchema  = `{"type": "object"}`
	unionSchema = `{
		"type": "object",
		"properties": {
			"v": {"type": ["string", "number", "boolean", "null", "array", "object"]},
			"arr": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"], "additionalProperties": false}}
		},
		"additionalProperties": false
	}`
	falseSchema = `{
		"type": "object",
		"properties": {"x": false, "y": true, "z": {}},
		"minProperties": 1,
		"maxProperties": 3
	}`
	requiredOnlySchema = `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}`
	trueSchema         = `true`
	matrixSchema       = `{
		"type": "object",
		"properties": {
			"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}, "maxItems": 3}}
		},
		"additionalProperties": false
	}`
)

var schemaNames = map[string]string{
	"refund": refundSchema, "note": noteSchema, "enum": enumSchema, "int": intSchema,
	"unicode": unicodeSchema, "format": formatSchema, "open": openSchema, "union": unionSchema,
	"false": falseSchema, "required_only": requiredOnlySchema, "true": trueSchema, "matrix": matrixSchema,
}

// valuePool holds JSON value texts that probe the edges.
var valuePool = []string{
	`0`, `-0`, `0.0`, `-0.0`, `1e-400`, `1e400`, `123456789012345678901234567890`, `123456789012345678901234567891`,
	`1.0`, `1e2`, `1E+2`, `1.5`, `-1`, `-1.0`, `12.5`, `100`, `100.0000`, `101`, `5`, `0.5e1`, `1e1000001`, `0e99999999999999999999`,
	`1e-20`, `1.0e-20`, `1.00000000000000001e-20`, `-1e-21`, `-1.000000000000000000001e-21`, `999`, `1000`, `999.9999999999999999999`,
	`10000`, `10000.000000000000001`, `0.000000000000000000000000001`, `3.5`, `35e-1`, `2`, `-3`, `-3.0`, `1e1`,
	`1e401`, `-1E-401`, `1e+0400`, `0e401`, `2e-324`, `1.8e308`, `9007199254740993`, "1" + strings.Repeat("0", 127), "1" + strings.Repeat("0", 128),
	"-0." + strings.Repeat("0", 124) + "1", "-0." + strings.Repeat("0", 125) + "1",
	`"10.0"`, `true`, `false`, `null`, `""`, `"a"`,
	`"CUST-00001"`, `"cust-00001"`, `"CUST-0000\u0031"`, `"xCUST-00001"`, `"CUST-ABCDE"`, `"CUST-00001\n"`,
	`"damaged on arrival"`, `"short"`, `"0123456789"`, `"012345678"`, `"\u0000abcdefghij"`, `"tab\there ok ok"`,
	`"\u00e9\u00e9\u00e9"`, `"éé"`, `"ééé"`, `"\ud83d\ude00"`, `"😀"`, `"😀😀"`, `"\ud83d"`, `"\ude00x"`, `"\ud83dx"`, `"\ud83d\u0041bc"`,
	"\"a\xffb\"", "\"\xff\xfe\xfd\"", "\"\xed\xa0\x80\"", "\"\xc2\x85abcdefghijk\"", `"\u0085xxxxxxxxxx"`, `"\u007f1234567890"`,
	"\"\x7fabcdefghijk\"", `"\u009f"`, `"\u00a0ok"`, `"é"`, `"\u00e9"`, `"e\u0301"`,
	`"2024-02-29"`, `"2023-02-29"`, `"2024-13-01"`, `"2024-01-01T10:00:00Z"`, `"2024-01-01t23:59:60+00:00"`, `"2024-01-01T23:59:60+01:00"`,
	`"open"`, `"closed"`, `"dry"`, `"Dry"`, `"SECRET-VALUE-1"`, `"SECRET-\u0000"`,
	`"a@example.com"`, `"a..b@example.com"`, `"\"q\"@[IPv6:::1]"`, `"x@[1.2.3.4]"`,
	`"123e4567-e89b-12d3-a456-426614174000"`, `"123e4567e89b12d3a456426614174000"`, `"https://example.com/a?b#c"`, `"/relative"`,
	`"http://[::1]:80/"`, `"http://[::1%25eth0]/"`, `"1.2.3.4"`, `"01.2.3.4"`, `"+1.2.3.4"`, `"::1"`, `"fe80::1%eth0"`, `"::ffff:1.2.3.4"`,
	`"example.com"`, `"-bad.com"`, `"a.b."`, `"10:00:00Z"`, `"-0:00:00Z"`, `"23:59:60Z"`, `"12:00:00.5+01:00"`,
	`[]`, `["2024-01-01"]`, `["2024-01-01","2024-01-02","2024-01-03","2024-01-04"]`, `["x"]`, `[1,2,3]`, `[1,2,3,4]`, `[[1],[2,3]]`,
	`[[1,2,3,4]]`, `[["a"]]`, `{}`, `{"due":"2024-01-01"}`, `{"due":"2024-01-01","priority":5}`, `{"due":"2024-01-01","priority":6}`,
	`{"due":"2024-01-01","priority":2.0}`, `{"due":"2024-01-01","x":1}`, `{"k":"v"}`, `[{"k":"v"}]`, `[{"k":1}]`, `[{}]`,
	`{"a":{"a":{"a":{}}}}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, "{\"a\\u00ff\":1,\"a\xc3\xbf\":2}", "{\"a\xff\":1,\"a\xfe\":2}",
}

var keyPool = []string{"admin", "a", "b", "x", "y", "z", `\u0061`, "é", `\u00e9`, "\u0085", `\u0000`, "SECRET-KEY-not", ""}

// seedDocs are valid argument documents per schema, as key/value texts,
// that genInput mutates.
var seedDocs = map[string][][2]string{
	"refund":  {{"customer_id", `"CUST-00001"`}, {"amount", `12.5`}, {"reason", `"damaged on arrival"`}},
	"note":    {{"title", `"t"`}, {"meta", `{"due":"2024-02-29","at":"2024-02-29T12:00:00Z","priority":2}`}, {"tags", `["2024-01-01"]`}},
	"enum":    {{"status", `"open"`}, {"level", `3.5`}, {"mode", `"dry"`}, {"n", `100`}},
	"int":     {{"count", `10`}, {"offset", `0`}, {"big", `5`}, {"tiny", `0`}},
	"unicode": {{"name", `"ééé"`}, {"emoji", `"😀"`}, {"any", `[1,{"a":null}]`}},
	"format": {{"email", `"a@example.com"`}, {"id", `"123e4567-e89b-12d3-a456-426614174000"`}, {"site", `"https://example.com/"`},
		{"ip4", `"1.2.3.4"`}, {"ip6", `"::1"`}, {"host", `"example.com"`}, {"t", `"10:00:00Z"`}},
	"open":          {{"a", `1`}, {"b", `{"c":[true]}`}},
	"union":         {{"v", `"x"`}, {"arr", `[{"k":"v"}]`}},
	"false":         {{"y", `1`}, {"z", `2`}},
	"required_only": {{"a", `"x"`}, {"b", `2`}},
	"true":          {{"a", `1`}},
	"matrix":        {{"matrix", `[[1,2],[3]]`}},
}

// genInput builds one argument document from a valid seed: some values
// replaced from valuePool, members dropped or added (duplicates
// included), and now and then a byte-level mutation.
func genInput(r *rand.Rand, seed [][2]string) []byte {
	members := append([][2]string(nil), seed...)
	for range r.IntN(3) {
		if len(members) > 0 {
			members[r.IntN(len(members))][1] = valuePool[r.IntN(len(valuePool))]
		}
	}
	if len(members) > 0 && r.IntN(5) == 0 {
		i := r.IntN(len(members))
		members = append(members[:i], members[i+1:]...)
	}
	if r.IntN(5) == 0 {
		m := [2]string{keyPool[r.IntN(len(keyPool))], valuePool[r.IntN(len(valuePool))]}
		if len(seed) > 0 && r.IntN(2) == 0 {
			m[0] = seed[r.IntN(len(seed))][0]
		}
		members = append(members, m)
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + m[0] + `":` + m[1])
	}
	b.WriteByte('}')
	out := []byte(b.String())
	switch r.IntN(16) {
	case 0: // truncate
		out = out[:r.IntN(len(out)+1)]
	case 1: // trailing data
		out = append(out, []string{"x", " ", "}", ",", "{}", "\n", "\v", " null"}[r.IntN(8)]...)
	case 2: // trailing comma
		if len(out) > 2 {
			out = append(out[:len(out)-1], ",}"...)
		}
	case 3: // flip a byte
		if len(out) > 0 {
			out[r.IntN(len(out))] = "\"\\{}[],:0-e.\x00\xff a"[r.IntN(16)]
		}
	case 4: // white space around
		out = append(append([]byte(" \n\t"), out...), "\r\n "...)
	}
	return out
}

// handInputs are probes every schema sees.
var handInputs = []string{
	``, ` `, `null`, ` null `, `nul`, `{}`, `[]`, `"x"`, `1`, `true`, `{} x`, `{}}`, `{},`, `{"a":1,}`, `{,}`, `{"a" 1}`,
	`{"a":}`, `{'a':1}`, `{"a":1 "b":2}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`, `{"a":NaN}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\'"}`, "{\"a\":\"\t\"}", "{\"a\":\"\x01\"}", `{"a":tru}`, `{"a":nulls}`, "\v{}", "{}\v",
	"\ufeff{}", "\u00a0null", `{"a":[1,2,]}`, `{"a":[,]}`, `{"a":[}`, `{"a":{]}`, `{"":1}`, `{"":1,"":2}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":0,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":-0,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":1e-400,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":1e400,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":"12.5","reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival","admin":true}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival","amount":13}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival","\u0061mount":13}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged\u0000arrival"}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"ééééééééé"}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"éééééééééé"}`,
	`{"customer_id":"CUST-00001","amount":1e1000001,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":1e401,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":1e-401,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":1` + strings.Repeat("0", 128) + `,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":0.` + strings.Repeat("0", 125) + `1,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":1e401,"reason":"damaged\u0000arrival"}`,
	`{"customer_id":"CUST-00001","amount":1e401,"reason":"damaged on arrival",}`,
	`{"any":[1e401],"name":"abc"}`, `{"any":{"x":-1E+401},"name":"abc"}`, `{"any":[1e400,1E-400],"name":"abc"}`,
	`{"matrix":[[1,2,3],[1e401]]}`, `{"matrix":[[1,2,3],[1e401,1,2,3]]}`, `{"y":1e401}`, `{"x":1e401}`,
	`{"title":"t","meta":{"due":"2024-02-29","at":"2024-02-29T12:00:00+05:30","priority":1e0},"tags":["2024-01-01"]}`,
	`{"title":"t","meta":{"due":"2023-02-29"}}`,
	`{"title":"t","meta":{}}`,
	`{"title":"t","tags":[]}`,
	`{"title":"t","tags":["2024-01-01","2024-01-01","2024-01-01","2024-01-01"]}`,
	`{"title":"","meta":{"due":"2024-01-01","due":"2024-01-02"}}`,
	// Names equal but for letter case are one name to encoding/json.
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival","AMOUNT":13}`,
	`{"customer_id":"CUST-00001","Amount":13,"amount":12.5,"reason":"damaged on arrival"}`,
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival","reſon":"x"}`,
	`{"title":"t","x":1,"X":2}`, `{"title":"t","K":1,"k":2}`, `{"title":"t","TITLE":"u"}`,
	`{"title":"t","meta":{"due":"2024-01-01","Due":"2024-01-02"}}`, `{"a":1,"A":2}`, `{"é":1,"É":2}`,
	`{"x":` + strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64) + `}`,
	`{"x":` + strings.Repeat(`[`, 63) + strings.Repeat(`]`, 63) + `}`,
	`{"x":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70) + `}`,
	`{"any":` + strings.Repeat(`[`, 62) + strings.Repeat(`]`, 62) + `,"name":"abc"}`,
	`{"any":` + strings.Repeat(`[`, 300) + strings.Repeat(`]`, 300) + `,"name":"abc"}`,
	`{"any":` + strings.Repeat(`[`, 300) + strings.Repeat(`]`, 299) + `,"name":"abc"}`,
	`{"name":"` + strings.Repeat("é", 32) + `"}`,
	`{"name":"` + strings.Repeat("é", 33) + `"}`,
	`{"name":"` + strings.Repeat("\\u00e9", 33) + `"}`,
	`{"` + strings.Repeat("k", 65) + `":1}`,
	`{"` + strings.Repeat("k", 64) + `":1}`,
	"{\"name\":\"" + strings.Repeat("\xff", 21) + "\"}",
	"{\"name\":\"" + strings.Repeat("\xff", 22) + "\"}",
	"{\"name\":\"abc\",\"any\":{\"a\xff\":1,\"a\xfe\":2}}",
	"{\"name\":\"abc\",\"any\":{\"a\\ufffd\":1,\"a\xfe\":2}}",
	`{"name":"abc","any":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"r":18,"\u0061":19}}`,
	`{"name":"abc","any":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"r":18,"s":19}}`,
	`{"v":[{"k":"v"}],"arr":[{"k":"v"},{"k":"w"}]}`,
	`{"arr":[{"k":"v"},{"k":"w","k":"x"}]}`,
	`{"matrix":[[1,2,3],[4.5,-0,1e400]]}`,
	`{"matrix":[[1,2,3],[4.5,-0,1e400,1]]}`,
	`{"status":"\u00e9","level":3.50,"mode":"dry","n":100.0}`,
	`{"level":35e-1,"n":1e2}`,
	`{"level":1.0,"n":-3.00}`,
	`{"n":0.0}`,
	`{"n":1e-1}`,
	`{"a":"x","b":2}`,
	`{"a":"x"}`,
	`{"y":1,"z":2,"w":3}`,
	`{"y":1,"z":2,"w":3,"v":4}`,
	`{"x":null}`,
	// Text encoding/json reads as U+FFFD: refused; pairs and U+FFFD itself pass.
	`{"name":"\ud800"}`, `{"name":"abc","any":"\udc00"}`, `{"name":"\ud800\u0041x"}`, `{"name":"abc","\udbff":1}`,
	`{"name":"\\\udfff"}`, `{"name":"\\ud800"}`, `{"name":"\ud83d\ude00"}`, `{"name":"\ufffd\uffff"}`,
	"{\"name\":\"\xed\xa0\x80\"}", "{\"name\":\"ab\xc3\"}", "{\"name\":\"\xef\xbf\xbd\"}",
	`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged \ud800 on arrival"}`,
	`{"customer_id":"CUST-00001","amount":-1,"reason":"damaged \ud800 on arrival"}`,
	`{"customer_id":"\udc00","amount":12.5,"reason":"damaged on arrival",}`,
}

func TestDifferential(t *testing.T) {
	for name, src := range schemaNames {
		t.Run(name, func(t *testing.T) {
			doc := decodeSchema(t, src)
			fast, ok := Compile(doc, testOpts)
			if !ok {
				t.Fatalf("Compile refused the %s schema", name)
			}
			o := newOracle(t, decodeSchema(t, src), testOpts)
			for _, in := range handInputs {
				agree(t, fast, o, []byte(in))
			}
			r := rand.New(rand.NewPCG(1, uint64(len(name))))
			for range 600 {
				in := genInput(r, seedDocs[name])
				agree(t, fast, o, in)
				if e := fast.Validate(in); e != nil && (strings.Contains(e.Message, "SECRET-V") || strings.Contains(e.Pointer, "SECRET-V")) {
					t.Fatalf("Validate(%q) message %q quotes a value", in, e.Message)
				}
			}
		})
	}
}

// TestDifferentialAllowControl runs the probes with AllowControlChars.
func TestDifferentialAllowControl(t *testing.T) {
	opts := Options{MaxStringBytes: 20, AllowControlChars: true}
	for _, name := range []string{"refund", "unicode", "open"} {
		src := schemaNames[name]
		fast, ok := Compile(decodeSchema(t, src), opts)
		if !ok {
			t.Fatal("Compile refused")
		}
		o := newOracle(t, decodeSchema(t, src), opts)
		for _, in := range handInputs {
			agree(t, fast, o, []byte(in))
		}
		r := rand.New(rand.NewPCG(7, 7))
		for range 300 {
			agree(t, fast, o, genInput(r, seedDocs[name]))
		}
	}
}

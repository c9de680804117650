package fastschema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A review39Case is one document checked against one schema: the
// reference pipeline (the oracle) must give the verdict valid, and the
// fast path the same verdict; when msg is set, the fast path's message
// (and ptr its pointer) must be the documented one.
type review39Case struct {
	name   string
	schema string
	in     string
	opts   *Options // testOpts when nil
	valid  bool
	msg    string
	ptr    string
}

// review39Check runs the cases: Compile must accept each schema, the
// oracle must give the table's verdict (so that a wrong table cannot pass
// against a wrong fast path), and the fast path the same verdict.
func review39Check(t *testing.T, cases []review39Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			opts := testOpts
			if tc.opts != nil {
				opts = *tc.opts
			}
			fast, ok := Compile(decodeSchema(t, tc.schema), opts)
			if !ok {
				t.Fatalf("Compile(%s) refused", tc.schema)
			}
			want, panicked := newOracle(t, decodeSchema(t, tc.schema), opts).verdict([]byte(tc.in))
			if (want == nil) != tc.valid {
				t.Fatalf("oracle(%q) = %v (panicked %v), the table says valid=%v", tc.in, want, panicked, tc.valid)
			}
			got := fast.Validate([]byte(tc.in))
			if (got == nil) != tc.valid {
				t.Fatalf("Validate(%q) with %s = %v, want valid=%v (oracle: %v)", tc.in, tc.schema, got, tc.valid, want)
			}
			if tc.msg != "" && (got.Message != tc.msg || got.Pointer != tc.ptr) {
				t.Errorf("Validate(%q) with %s = %q at %q, want %q at %q", tc.in, tc.schema, got.Message, got.Pointer, tc.msg, tc.ptr)
			}
		})
	}
}

// TestReview39TextBytes pins how strings are read byte by byte: a lone
// UTF-8 continuation byte (0x80..0xbf) is invalid UTF-8, refused whatever
// the options, not a C1 control that AllowControlChars would let through;
// DEL is a control; and \u escapes take upper-case hex digits, A included.
// A user relies on the first to keep text encoding/json would rewrite to
// U+FFFD out of the tool, and on the last not to see valid arguments
// refused.
func TestReview39TextBytes(t *testing.T) {
	allow := &Options{MaxStringBytes: 64, AllowControlChars: true}
	const open = `{"type":"object"}`
	const textMsg = "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"
	review39Check(t, []review39Case{
		{name: "lone_0x80_value", schema: open, in: "{\"a\":\"\x80\"}", msg: textMsg},
		{name: "lone_0x80_value_controls_allowed", schema: open, in: "{\"a\":\"x\x80\"}", opts: allow, msg: textMsg},
		{name: "lone_0x85_value_controls_allowed", schema: open, in: "{\"a\":\"\x85\"}", opts: allow, msg: textMsg},
		{name: "lone_0x9f_key_controls_allowed", schema: open, in: "{\"\x9f\":1}", opts: allow, msg: textMsg},
		{name: "lone_0x80_key", schema: open, in: "{\"k\x80\":1}", msg: textMsg},
		{name: "c1_control_encoded", schema: open, in: "{\"a\":\"\xc2\x80\"}", msg: `argument "a" contains control characters`, ptr: "/a"},
		{name: "c1_control_encoded_allowed", schema: open, in: "{\"a\":\"\xc2\x80\"}", opts: allow, valid: true},
		{name: "del_raw", schema: open, in: "{\"a\":\"\x7f\"}", msg: `argument "a" contains control characters`, ptr: "/a"},
		{name: "del_raw_allowed", schema: open, in: "{\"a\":\"\x7f\"}", opts: allow, valid: true},
		{name: "escape_upper_a", schema: open, in: `{"a":"\u00A9"}`, valid: true},
		{name: "escape_upper_pair", schema: open, in: `{"a":"\uD83D\uDE0A"}`, valid: true},
		{name: "escape_upper_a_key", schema: open, in: `{"\u00AA":1}`, valid: true},
		{name: "escape_upper_a_enum", schema: `{"properties":{"a":{"enum":["\u00a9"]}}}`, in: `{"a":"\u00A9"}`, valid: true},
		// Two keys encoding/json reads alike: the duplicate comes first.
		{name: "lone_0x80_key_twin_of_fffd", schema: open, in: "{\"a\x80\":1,\"a\\ufffd\":2}",
			msg: "argument \"a\ufffd\" appears twice", ptr: "/a\ufffd"},
		{name: "fffd_key_twin_of_lone_0x80", schema: open, in: "{\"a\\ufffd\":1,\"a\x80\":2}",
			msg: "argument \"a\ufffd\" appears twice", ptr: "/a\ufffd"},
		{name: "escape_upper_a_length", schema: `{"properties":{"a":{"maxLength":1}}}`, in: `{"a":"\u00A9"}`, valid: true},
	})
}

// TestReview39WhiteSpaceBetweenMembers pins white space around every
// token of an object and an array, after a comma above all: pretty-printed
// arguments (one member a line, indented) are valid JSON, and a client
// that formats its arguments so must not see them refused as malformed.
func TestReview39WhiteSpaceBetweenMembers(t *testing.T) {
	const closed = `{"properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"string"}}},"required":["a"],"additionalProperties":false}`
	review39Check(t, []review39Case{
		{name: "space_after_comma", schema: closed, in: `{"a":1, "b":["x"]}`, valid: true},
		{name: "pretty_printed", schema: closed, in: "{\n\t\"a\" : 1 ,\n\t\"b\" : [ \"x\" ,\r\n \"y\" ]\n}\n", valid: true},
		{name: "space_after_comma_open", schema: `{}`, in: `{"x":1, "y":{"z":2,  "w":3}}`, valid: true},
		{name: "space_after_comma_then_bad_member", schema: closed, in: `{"a":1, "c":2}`,
			msg: `unknown argument "c"`, ptr: "/c"},
		{name: "empty_array_with_space", schema: closed, in: `{"a":1,"b":[ ]}`, valid: true},
		{name: "empty_array_with_newline", schema: closed, in: "{\"a\":1,\"b\":[\n]}", valid: true},
		{name: "empty_object_with_space", schema: `{}`, in: `{"x":{ }, "y":[ {  } ]}`, valid: true},
		{name: "space_after_comma_then_close", schema: closed, in: `{"a":1, }`, msg: "arguments are not valid JSON"},
	})
}

// TestReview39RequiredNameQuoted pins the message for a missing required
// name that holds a backslash, a quote, '~' or '/': the name is quoted as
// written in the schema (the reference's message, checked by hand against
// mcpguard's Validator) and the pointer escapes only '~' and '/'. A user
// reading "missing required argument" must be told the name the tool
// expects, not one with its escapes read a second time.
func TestReview39RequiredNameQuoted(t *testing.T) {
	review39Check(t, []review39Case{
		{name: "backslash_n", schema: `{"required":["x\\ny"]}`, in: `{}`,
			msg: `missing required argument "x\\ny"`, ptr: `/x\ny`},
		{name: "quote", schema: `{"required":["x\"y"]}`, in: `{"a":1}`,
			msg: `missing required argument "x\"y"`, ptr: `/x"y`},
		{name: "backslash_u", schema: `{"required":["\\u0041"]}`, in: `{"A":1}`,
			msg: `missing required argument "\\u0041"`, ptr: `/\u0041`},
		{name: "tilde_slash", schema: `{"properties":{"o":{"required":["a~b/c"]}}}`, in: `{"o":{}}`,
			msg: `missing required argument "o.a~b/c"`, ptr: `/o/a~0b~1c`},
	})
}

// review39FoldAlike returns an object of n members whose names all fold
// alike ("a", "a_", "a__", ...), followed by those of the names in extra.
func review39FoldAlike(n int, extra ...string) string {
	var b strings.Builder
	b.WriteString(`{"a":0`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,"a%s":%d`, strings.Repeat("_", i), i)
	}
	for _, k := range extra {
		fmt.Fprintf(&b, `,%q:1`, k)
	}
	b.WriteString(`}`)
	return b.String()
}

// TestReview39DuplicateAmongManyNames pins which name a duplicate
// refusal names in an object of more than 16 unknown names (where the
// check sorts them by hash): the first name that folds like one before
// it, as the reference names it, whatever the order of the hashes. Each
// case runs on 64 compiled schemas, each with its own hash seed, so that
// every order of the groups is met. A user reading the refusal must be
// told the member that repeats, not a later one.
func TestReview39DuplicateAmongManyNames(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		// One group of 20: the second member is the first repeat.
		{"one_group", review39FoldAlike(20), "a_"},
		// Two groups: "a" and "a_" repeat first; "b", "B", ... later.
		{"two_groups", review39FoldAlike(2, "b", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
			"x10", "x11", "x12", "x13", "x14", "B", "b_", "b__"), "a_"},
		// Many groups of two, the earliest repeat last but one.
		{"many_groups", `{"p":1,"q":1,"r":1,"s":1,"t":1,"u":1,"v":1,"w":1,"x":1,"y":1,"z":1,` +
			`"P":1,"Q":1,"R":1,"S":1,"T":1,"U":1,"V":1,"W":1,"X":1,"Y":1,"Z":1}`, "P"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := "argument \"" + tc.want + "\" appears twice"
			if e, _ := newOracle(t, decodeSchema(t, openSchema), testOpts).verdict([]byte(tc.in)); e == nil {
				t.Fatalf("oracle(%s) = nil, want a duplicate", tc.in)
			}
			for range 64 {
				fast := mustCompile(t, openSchema, testOpts)
				got := fast.Validate([]byte(tc.in))
				if got == nil || got.Message != want || got.Pointer != "/"+tc.want {
					t.Fatalf("Validate(%s) = %v, want %q at %q", tc.in, view(got), want, "/"+tc.want)
				}
			}
		})
	}
}

// TestReview39ProblemOrder pins which problem a document with several is
// refused for, as Validate's doc comment orders them: malformed JSON
// before invalid text, invalid text before a string or number out of
// bounds, those before a schema violation, even when the worse problem
// comes later in the document than the one the first scan stops at; and a
// document nested exactly 64 levels deep is not "too deep" while its
// schema violation is reported. A user fixing a refused call is told the
// problem the reference pipeline names.
func TestReview39ProblemOrder(t *testing.T) {
	const schema = `{"properties":{"a":{"type":"integer"}}}`
	long := strings.Repeat("x", 65)
	deep := strings.Repeat("[", 63) + strings.Repeat("]", 63) // 64 levels with the top object
	review39Check(t, []review39Case{
		{name: "schema_then_long_then_surrogate", schema: schema,
			in:  `{"a":"s","b":"` + long + `","c":"\ud800"}`,
			msg: "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{name: "schema_then_long_then_bad_utf8", schema: schema,
			in:  "{\"a\":\"s\",\"b\":\"" + long + "\",\"c\":\"\xff\"}",
			msg: "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{name: "schema_then_long_then_syntax", schema: schema,
			in:  `{"a":"s","b":"` + long + `","c":1,}`,
			msg: "arguments are not valid JSON"},
		{name: "schema_then_number_then_trailing", schema: schema,
			in:  `{"a":"s","b":1e401} x`,
			msg: "arguments have trailing data"},
		{name: "schema_then_long", schema: schema,
			in:  `{"a":"s","b":"` + long + `"}`,
			msg: `argument "b" is longer than 64 bytes`, ptr: "/b"},
		{name: "deep_64_then_schema", schema: schema,
			in:  `{"x":` + deep + `,"a":"s"}`,
			msg: `argument "a" must be integer`, ptr: "/a"},
		{name: "deep_64_then_long", schema: schema,
			in:  `{"x":` + deep + `,"b":"` + long + `"}`,
			msg: `argument "b" is longer than 64 bytes`, ptr: "/b"},
		{name: "deep_64_then_surrogate", schema: schema,
			in:  `{"x":` + deep + `,"c":"\udc00"}`,
			msg: "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{name: "schema_then_deep_64", schema: schema,
			in:  `{"a":"s","x":` + deep + `}`,
			msg: `argument "a" must be integer`, ptr: "/a"},
	})
}

// TestReview39EnumUnparsableNumber pins enum and const members that
// math/big cannot parse (an exponent beyond int64, or |exponent| above a
// million): v6 finds them equal to nothing, not even to a zero spelled
// with such an exponent, so 0 is not one of the allowed values of
// [0e99999999999999999999]. A schema author's odd literal must not widen
// what the tool accepts.
func TestReview39EnumUnparsableNumber(t *testing.T) {
	const notAllowed = `argument "n" is not one of the allowed values`
	review39Check(t, []review39Case{
		{name: "zero_huge_exponent_vs_zero", schema: `{"properties":{"n":{"enum":[0e99999999999999999999]}}}`,
			in: `{"n":0}`, msg: notAllowed, ptr: "/n"},
		{name: "zero_huge_exponent_vs_negative_zero", schema: `{"properties":{"n":{"const":-0.0e99999999999999999999}}}`,
			in: `{"n":-0}`, msg: notAllowed, ptr: "/n"},
		{name: "zero_huge_exponent_vs_zero_fraction", schema: `{"properties":{"n":{"enum":[1,0e-99999999999999999999]}}}`,
			in: `{"n":0.0}`, msg: notAllowed, ptr: "/n"},
		{name: "one_huge_exponent_vs_one", schema: `{"properties":{"n":{"enum":[1e1000001]}}}`,
			in: `{"n":1}`, msg: notAllowed, ptr: "/n"},
		{name: "zero_huge_exponent_other_member", schema: `{"properties":{"n":{"enum":[0e99999999999999999999,0]}}}`,
			in: `{"n":0}`, valid: true},
	})
}

// review39FormatProbes are strings at the edges of each reimplemented
// format, with the verdict v6's own function gives (checked too).
var review39FormatProbes = []struct {
	format, s string
	valid     bool
}{
	// A non-digit at each digit position of a date.
	{"date", "x024-01-01", false}, {"date", "2x24-01-01", false}, {"date", "20x4-01-01", false},
	{"date", "202x-01-01", false}, {"date", "2024-x1-01", false}, {"date", "2024-0x-01", false},
	{"date", "2024-01-x1", false}, {"date", "2024-01-0x", false}, {"date", "2024-01-01", true},
	// Leap years: every digit of the year counts.
	{"date", "1600-02-29", true}, {"date", "1700-02-29", false}, {"date", "2012-02-29", true},
	{"date", "1996-02-29", true}, {"date", "2022-02-29", false}, {"date", "2100-02-29", false},
	{"date", "2400-02-29", true}, {"date", "2024-02-30", false}, {"date", "2023-02-28", true},
	// The length of every month.
	{"date", "2024-01-31", true}, {"date", "2024-01-32", false}, {"date", "2024-03-31", true},
	{"date", "2024-04-30", true}, {"date", "2024-04-31", false}, {"date", "2024-05-31", true},
	{"date", "2024-06-30", true}, {"date", "2024-06-31", false}, {"date", "2024-07-31", true},
	{"date", "2024-08-31", true}, {"date", "2024-09-30", true}, {"date", "2024-09-31", false},
	{"date", "2024-10-31", true}, {"date", "2024-11-30", true}, {"date", "2024-11-31", false},
	{"date", "2024-12-31", true}, {"date", "2024-12-32", false}, {"date", "2024-12-00", false},
	// "-0" is 0 to v6 (strconv.Atoi), in the hour as in the offset: the
	// leap second is valid at 23:59 UTC only.
	{"time", "-0:59:60+01:00", true}, {"time", "-0:58:60+01:00", false}, {"time", "23:59:60+-0:00", true},
	{"time", "23:-0:60Z", false}, {"time", "23:58:60--0:01", true},
	// Seconds, fractions and the zone.
	{"time", "23:59:61Z", false}, {"time", "23:59:60z", true}, {"time", "12:00:00.xZ", false},
	{"time", "12:00:00.5", false}, {"time", "12:00:00.5Z", true}, {"time", "12:00:00x", false},
	{"time", "12:00:00.5x", false}, {"time", "12:00:00.Z", false},
	{"time", "12:00:00x01:00", false}, {"time", "12:00:00+01x00", false}, {"time", "12:00:00+23:00", true},
	{"time", "12:00:00-01:59", true}, {"time", "12:00:00+24:00", false}, {"time", "12:00:00+01:60", false},
	// Hex digits at both ends of the alphabet.
	{"uuid", "ffffffff-ffff-ffff-ffff-ffffffffffff", true}, {"uuid", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", true},
	{"uuid", "gggggggg-gggg-gggg-gggg-gggggggggggg", false}, {"uuid", "ffffffff-ffff-ffff-ffff-fffffffffff", false},
	// A group's value, however many digits it has.
	{"ipv4", "2550.1.1.1", false}, {"ipv4", "255.1.1.255", true}, {"ipv4", "1.1.1.2559", false},
	// A hostname's 253 bytes (a final dot aside) and its letters.
	{"hostname", review39Host(253), true}, {"hostname", review39Host(253) + ".", true},
	{"hostname", review39Host(254), false}, {"hostname", "zz.zz", true}, {"hostname", "ZZ.Z9", true},
	{"email", "z@z.com", true}, {"email", "Z9@Z.com", true},
	// A quoted local part holds neither a backslash nor a quote, even first.
	{"email", `"a\b"@x.com`, false}, {"email", `"\a"@x.com`, false}, {"email", `""a"@x.com`, false},
	{"email", `"a"b"@x.com`, false}, {"email", `"a.b"@x.com`, true}, {"email", ".@x.com", false},
	// The email's bounds: 64 bytes before the '@', 254 in all.
	{"email", strings.Repeat("a", 64) + "@x.com", true}, {"email", strings.Repeat("a", 65) + "@x.com", false},
	{"email", strings.Repeat("a", 64) + "@" + review39Host(189), true},
	{"email", strings.Repeat("a", 64) + "@" + review39Host(190), false}, {"email", "a@" + review39Host(253), false},
}

// review39Host returns a hostname of n bytes (n >= 63): labels of 63
// letters, the last one shorter.
func review39Host(n int) string {
	var b strings.Builder
	for b.Len()+64 < n {
		b.WriteString(strings.Repeat("a", 63) + ".")
	}
	b.WriteString(strings.Repeat("b", n-b.Len()))
	return b.String()
}

// TestReview39FormatEdges compares each reimplemented format with v6's
// own function on review39FormatProbes: the fast path asserts formats
// exactly as the reference does, so a date such as 2024-06-31 or
// 2x24-01-01 is refused on both paths and 1600-02-29 accepted on both.
func TestReview39FormatEdges(t *testing.T) {
	checks := v6Formats(t)
	for _, p := range review39FormatProbes {
		want := checks[p.format](p.s) == nil
		if want != p.valid {
			t.Fatalf("v6 %s(%q) = %v, the table says %v", p.format, p.s, want, p.valid)
		}
		if got := builtinFormat(p.format)([]byte(p.s)); got != want {
			t.Errorf("%s(%q) = %v, v6 says %v", p.format, p.s, got, want)
		}
	}
}

// TestReview39PatternFirstNonASCII pins patterns whose characters reach
// U+0080, the first rune beyond ASCII: they are compiled (by regexp, not
// the small automaton) and give regexp's verdict. A tool whose schema
// allows "~" through U+0080 must get a validator, not a panic.
func TestReview39PatternFirstNonASCII(t *testing.T) {
	allow := &Options{MaxStringBytes: 64, AllowControlChars: true}
	const (
		class   = `{"properties":{"s":{"pattern":"^[~-\\x{80}]+$"}}}`
		literal = `{"properties":{"s":{"pattern":"^a\\x{80}$"}}}`
	)
	const bad = `argument "s" must match the pattern `
	review39Check(t, []review39Case{
		{name: "class_tilde", schema: class, in: `{"s":"~~"}`, valid: true},
		{name: "class_del", schema: class, in: `{"s":"\u007f"}`, opts: allow, valid: true},
		{name: "class_0x80", schema: class, in: `{"s":"~\u0080"}`, opts: allow, valid: true},
		{name: "class_0x81", schema: class, in: `{"s":"\u0081"}`, opts: allow, msg: bad + `^[~-\x{80}]+$`, ptr: "/s"},
		{name: "class_letter", schema: class, in: `{"s":"a"}`, msg: bad + `^[~-\x{80}]+$`, ptr: "/s"},
		{name: "literal_0x80", schema: literal, in: `{"s":"a\u0080"}`, opts: allow, valid: true},
		{name: "literal_other", schema: literal, in: `{"s":"ab"}`, msg: bad + `^a\x{80}$`, ptr: "/s"},
	})
}

// TestReview39MessageNames pins how a message names its value (each
// message checked by hand against mcpguard's reference Validator): the
// path dotted, array indexes in decimal, the name cut at 64 bytes on a
// rune boundary with "…" (not cut at exactly 64), and the pointer escaping
// '~' and '/' as RFC 6901 says. A user is told which argument to fix, in
// the same words whichever path validated the call.
func TestReview39MessageNames(t *testing.T) {
	e20 := strings.Repeat("é", 20)
	k62, k63 := strings.Repeat("k", 62), strings.Repeat("k", 63)
	nested := func(a, b, kw string) string {
		return `{"properties":{"` + a + `":{"properties":{"` + b + `":` + kw + `}}}}`
	}
	review39Check(t, []review39Case{
		{name: "cut_on_rune_boundary", schema: nested(e20, e20, `{"type":"string"}`),
			in:  `{"` + e20 + `":{"` + e20 + `":1}}`,
			msg: `argument "` + e20 + `.` + strings.Repeat("é", 11) + `…" must be string`, ptr: "/" + e20 + "/" + e20},
		{name: "exactly_64_bytes", schema: nested("k", k62, `{"minimum":1}`),
			in:  `{"k":{"` + k62 + `":0}}`,
			msg: `argument "k.` + k62 + `" must be >= 1`, ptr: "/k/" + k62},
		{name: "65_bytes", schema: nested("k", k63, `{"minimum":1}`),
			in:  `{"k":{"` + k63 + `":0}}`,
			msg: `argument "k.` + k62 + `…" must be >= 1`, ptr: "/k/" + k63},
		{name: "indexes_and_escapes", schema: `{}`, in: `{"a~/b":{"c":[0,1,{"d":"\u0001"}]}}`,
			msg: `argument "a~/b.c.2.d" contains control characters`, ptr: "/a~0~1b/c/2/d"},
		{name: "nested_indexes", schema: `{"properties":{"a":{"items":{"items":{"type":"string"}}}}}`,
			in: `{"a":[[],[1]]}`, msg: `argument "a.1.0" must be string`, ptr: "/a/1/0"},
		{name: "index_ten", schema: `{"properties":{"a":{"items":{"type":"string"}}}}`,
			in: `{"a":["","","","","","","","","","",0]}`, msg: `argument "a.10" must be string`, ptr: "/a/10"},
		{name: "types_object_last", schema: `{"properties":{"v":{"type":["object","array","boolean"]}}}`,
			in: `{"v":1}`, msg: `argument "v" must be boolean or array or object`, ptr: "/v"},
		{name: "unknown_escaped", schema: `{"additionalProperties":false}`, in: `{"x/y~z":1}`,
			msg: `unknown argument "x/y~z"`, ptr: "/x~1y~0z"},
		{name: "unknown_escaped_key", schema: `{"additionalProperties":false}`, in: `{"x\/\u0079~z":1}`,
			msg: `unknown argument "x/y~z"`, ptr: "/x~1y~0z"},
	})
}

// review39Names returns a "properties" object of n names p0, p1, ...,
// each an integer, and the list of those names quoted.
func review39Names(n int) (props, list string) {
	var p, l []string
	for i := range n {
		p = append(p, fmt.Sprintf(`"p%d":{"type":"integer"}`, i))
		l = append(l, fmt.Sprintf(`"p%d"`, i))
	}
	return `{` + strings.Join(p, ",") + `}`, strings.Join(l, ",")
}

// TestReview39CompileRefusesOrAgrees pins the security contract on
// schemas at the edges of the subset: a keyword outside it nested in
// items, a count beyond what the fast path holds, more than 64 known
// names. Either Compile refuses the schema (the caller falls back to v6)
// or the fast path gives v6's verdict; it may never compile such a schema
// into one that accepts what the reference refuses.
func TestReview39CompileRefusesOrAgrees(t *testing.T) {
	props65, list65 := review39Names(65)
	props60, _ := review39Names(60)
	for _, tc := range []struct {
		name, schema string
		ins          []string // the first is refused by the reference
	}{
		{"items_outside_subset", `{"properties":{"a":{"type":"array","items":{"type":"integer","multipleOf":2}}}}`,
			[]string{`{"a":[3]}`, `{"a":["x"]}`, `{"a":[2]}`}},
		{"items_items_outside_subset", `{"properties":{"a":{"items":{"items":{"$ref":"#/properties/b"}}},"b":{"type":"string"}}}`,
			[]string{`{"a":[[1]]}`, `{"a":[["x"]]}`}},
		{"huge_max_length", `{"properties":{"s":{"type":"string","maxLength":3000000000}}}`,
			[]string{`{"s":1}`, `{"s":"x"}`}},
		{"huge_min_items", `{"properties":{"s":{"type":"array","minItems":2147483648}}}`,
			[]string{`{"s":[1]}`, `{"s":1}`}},
		{"sixty_five_properties", `{"properties":` + props65 + `,"additionalProperties":false}`,
			[]string{`{"p0":"x"}`, `{"q":1}`, `{"p64":1}`}},
		{"sixty_five_required", `{"required":[` + list65 + `]}`,
			[]string{`{}`, `{"p0":1}`}},
		{"sixty_properties_five_required_names", `{"properties":` + props60 +
			`,"required":["r0","r1","r2","r3","r4"],"additionalProperties":false}`,
			[]string{`{"p0":"x"}`, `{"r0":1}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOracle(t, decodeSchema(t, tc.schema), testOpts)
			if want, _ := o.verdict([]byte(tc.ins[0])); want == nil {
				t.Fatalf("oracle(%s) = nil, want the first document refused", tc.ins[0])
			}
			fast, ok := Compile(decodeSchema(t, tc.schema), testOpts)
			if !ok {
				return // the caller falls back to v6
			}
			for _, in := range tc.ins {
				agree(t, fast, o, []byte(in))
			}
		})
	}
}

// TestReview39SixtyFourNames pins the largest object schema the fast path
// compiles: 64 known names (properties and required names together), the
// last one held in the top bit of the bit sets. It is compiled, and a
// missing or doubled 64th name is found as the reference finds it.
func TestReview39SixtyFourNames(t *testing.T) {
	props63, list63 := review39Names(63)
	all := `{"properties":` + props63 + `,"required":[` + list63 + `,"last"]}`
	var b strings.Builder
	for i := range 63 {
		fmt.Fprintf(&b, `"p%d":%d,`, i, i)
	}
	members := b.String()
	review39Check(t, []review39Case{
		{name: "all_present", schema: all, in: `{` + members + `"last":1}`, valid: true},
		{name: "last_missing", schema: all, in: `{` + strings.TrimSuffix(members, ",") + `}`,
			msg: `missing required argument "last"`, ptr: "/last"},
		{name: "last_twice", schema: all, in: `{` + members + `"last":1,"LAST":2}`,
			msg: `argument "LAST" appears twice`, ptr: "/LAST"},
		{name: "first_missing", schema: all, in: `{"last":1}`, msg: `missing required argument "p0"`, ptr: "/p0"},
		{name: "p62_twice", schema: all, in: `{` + members + `"last":1,"p62":"x"}`,
			msg: `argument "p62" appears twice`, ptr: "/p62"},
	})
}

// TestReview39SchemaKeywordOnlyAtRoot pins the subset Compile documents:
// "$schema" (naming draft 2020-12) at the root only. v6 takes it anywhere,
// so a subschema's "$schema", in items as in properties, sends the whole
// schema to v6, which is always safe.
func TestReview39SchemaKeywordOnlyAtRoot(t *testing.T) {
	const draft = `"$schema":"https://json-schema.org/draft/2020-12/schema"`
	for _, tc := range []struct {
		name, schema string
		ok           bool
	}{
		{"root", `{` + draft + `,"items":{"type":"string"}}`, true},
		{"items", `{"items":{` + draft + `,"type":"string"}}`, false},
		{"property", `{"properties":{"a":{` + draft + `}}}`, false},
		{"property_items", `{"properties":{"a":{"items":{` + draft + `}}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CompileReference(decodeSchema(t, tc.schema)); err != nil {
				t.Fatalf("CompileReference(%s) = %v, want v6 to take it", tc.schema, err)
			}
			if _, ok := Compile(decodeSchema(t, tc.schema), testOpts); ok != tc.ok {
				t.Errorf("Compile(%s) ok = %v, want %v", tc.schema, ok, tc.ok)
			}
		})
	}
}

// TestReview39ReferenceLoadsNothing pins CompileReference's loader: a
// schema may reference only itself. A "$ref" to a local file (which v6's
// default loader would read) or to a URL is refused, even when the file
// exists and holds a valid schema, so a tool's schema cannot make the
// guard read files or the network.
func TestReview39ReferenceLoadsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + filepath.ToSlash(path), "https://example.com/s.json", "s.json"} {
		src := `{"properties":{"a":{"$ref":"` + ref + `"}}}`
		if _, err := CompileReference(decodeSchema(t, src)); err == nil {
			t.Errorf("CompileReference(%s) = nil error, want the reference refused", src)
		}
		if _, ok := Compile(decodeSchema(t, src), testOpts); ok {
			t.Errorf("Compile(%s) ok, want it refused", src)
		}
	}
	// A reference inside the schema itself is still compiled by v6.
	const self = `{"properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`
	if _, err := CompileReference(decodeSchema(t, self)); err != nil {
		t.Errorf("CompileReference(%s) = %v, want it compiled", self, err)
	}
}

// TestReview39HugeCountInArrays pins the refusal of a count keyword
// beyond math.MaxInt wherever it is, in the schemas of an array keyword
// (allOf, anyOf, prefixItems) too, and after other members: v6 would keep
// only its low bits, so maxLength 18446744073709551621 would be enforced
// as 5 and a valid call refused, or minItems 2^64+1 as 1 and a short one
// let through.
func TestReview39HugeCountInArrays(t *testing.T) {
	for _, src := range []string{
		`{"allOf":[{"maxLength":18446744073709551621}]}`,
		`{"allOf":[{},{"maxLength":18446744073709551621}]}`,
		`{"properties":{"a":{"anyOf":[{"type":"string"},{"minItems":18446744073709551617}]}}}`,
		`{"prefixItems":[true,{"type":"array","items":{"maxItems":18446744073709551616}}]}`,
	} {
		if _, err := CompileReference(decodeSchema(t, src)); err == nil {
			t.Errorf("CompileReference(%s) = nil error, want the huge count refused", src)
		}
	}
	const fine = `{"allOf":[{},{"maxLength":9223372036854775807}]}`
	if _, err := CompileReference(decodeSchema(t, fine)); err != nil {
		t.Errorf("CompileReference(%s) = %v, want math.MaxInt taken", fine, err)
	}
}

// TestReview39OneByteStrings pins the smallest string bound Compile takes,
// MaxStringBytes 1 (only a bound <= 0 is refused): strings and names of
// one byte pass, longer ones are refused as the reference refuses them.
func TestReview39OneByteStrings(t *testing.T) {
	one := &Options{MaxStringBytes: 1}
	if _, ok := Compile(decodeSchema(t, `{}`), Options{}); ok {
		t.Errorf("Compile with MaxStringBytes 0 ok, want it refused")
	}
	review39Check(t, []review39Case{
		{name: "one_byte", schema: `{}`, in: `{"a":"x"}`, opts: one, valid: true},
		{name: "two_bytes", schema: `{}`, in: `{"a":"é"}`, opts: one, msg: `argument "a" is longer than 1 bytes`, ptr: "/a"},
		{name: "long_name", schema: `{}`, in: `{"ab":1}`, opts: one,
			msg: "argument names must be short and free of control characters"},
	})
}

// TestReview39EmptyArguments pins the messages for empty or null
// arguments, which count as {}: a root schema that refuses {} names the
// document itself ("value", pointer ""), as for any other document, not
// an argument "0".
func TestReview39EmptyArguments(t *testing.T) {
	review39Check(t, []review39Case{
		{name: "empty_type", schema: `{"type":["string","null"]}`, in: ``, msg: "value must be null or string"},
		{name: "null_type", schema: `{"type":"array"}`, in: ` null `, msg: "value must be array"},
		{name: "empty_false", schema: `false`, in: "\n", msg: "value is not allowed"},
		{name: "null_enum", schema: `{"enum":[1,"a"]}`, in: `null`, msg: "value is not one of the allowed values"},
		{name: "empty_required", schema: `{"required":["a"]}`, in: ``, msg: `missing required argument "a"`, ptr: "/a"},
		{name: "empty_min_properties", schema: `{"minProperties":1}`, in: ``, msg: "value must have at least 1 properties"},
		{name: "empty_fine", schema: `{"type":"object","maxProperties":0}`, in: `null`, valid: true},
	})
}

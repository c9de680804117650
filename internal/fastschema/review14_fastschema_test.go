package fastschema

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// review14Probes pin the verdict of the reference pipeline on the edges a
// fast path is most likely to get wrong, and check that the fast path
// gives the same one. Pinning (not only comparing) keeps a drifting oracle
// from making the comparison vacuous.
var review14Probes = []struct {
	name   string
	schema string
	in     string
	valid  bool
	opts   *Options // nil: testOpts
}{
	// Keys are compared after unescaping, and letter case aside.
	{"escaped_key_is_the_property", `{"properties":{"ab":{"type":"string"}},"required":["ab"],"additionalProperties":false}`, `{"a\u0062":"x"}`, true, nil},
	{"escaped_key_repeats_the_property", `{"properties":{"ab":{"type":"string"}}}`, `{"ab":"x","a\u0062":"y"}`, false, nil},
	{"case_variant_repeats_the_property", `{"properties":{"ab":{"type":"string"}}}`, `{"ab":"x","AB":"y"}`, false, nil},
	{"kelvin_sign_repeats_k", `{"properties":{"k":{"type":"string"}}}`, `{"k":"x","\u212a":1}`, false, nil},
	{"kelvin_sign_alone_is_unknown", `{"properties":{"k":{"type":"string"}}}`, `{"\u212a":1}`, true, nil},
	{"lone_surrogate_keys_repeat", `{"type":"object"}`, `{"\ud800":1,"\udfff":2}`, false, nil},
	{"lone_surrogate_key_repeats_fffd", `{"type":"object"}`, `{"\ud800":1,"\ufffd":2}`, false, nil},
	{"surrogate_pair_keys_differ", `{"type":"object"}`, `{"\ud83d\ude00":1,"\ud83d\ude01":2}`, true, nil},
	{"many_unknown_keys_case_twins", `{"properties":{"p0":{},"p1":{},"p2":{},"p3":{},"p4":{},"p5":{},"p6":{},"p7":{},"p8":{}}}`,
		`{"q0":1,"q1":1,"q2":1,"q3":1,"q4":1,"q5":1,"q6":1,"q7":1,"q8":1,"q9":1,"q10":1,"q11":1,"q12":1,"q13":1,"q14":1,"q15":1,"Q7":1,"p8":2}`, false, nil},
	{"many_unknown_keys_distinct", `{"properties":{"p0":{},"p1":{},"p2":{},"p3":{},"p4":{},"p5":{},"p6":{},"p7":{},"p8":{}}}`,
		`{"q0":1,"q1":1,"q2":1,"q3":1,"q4":1,"q5":1,"q6":1,"q7":1,"q8":1,"q9":1,"q10":1,"q11":1,"q12":1,"q13":1,"q14":1,"q15":1,"q16":1,"P8":2}`, true, nil},
	{"empty_key_required", `{"properties":{"":{"type":"string"}},"required":[""],"additionalProperties":false}`, `{"":"x"}`, true, nil},
	{"empty_key_missing", `{"properties":{"":{"type":"string"}},"required":[""]}`, `null`, false, nil},
	{"empty_key_twice", `{"properties":{"":{"type":"string"}}}`, `{"":"x","":"y"}`, false, nil},

	// Lengths are in code points of the decoded string.
	{"astral_char_is_one_code_point", `{"properties":{"s":{"minLength":2}}}`, `{"s":"😀"}`, false, nil},
	{"escaped_pair_is_one_code_point", `{"properties":{"s":{"minLength":2}}}`, `{"s":"\ud83d\ude00"}`, false, nil},
	// Text encoding/json reads as U+FFFD (invalid UTF-8, a lone
	// surrogate) is refused outright since review17i, whatever it measures.
	{"lone_surrogates_refused", `{"properties":{"s":{"minLength":2,"maxLength":2}}}`, `{"s":"\ud800\ud800"}`, false, nil},
	{"reversed_pair_refused", `{"properties":{"s":{"minLength":2,"maxLength":2}}}`, `{"s":"\ude00\ud83d"}`, false, nil},
	{"overlong_slash_refused", `{"properties":{"s":{"minLength":2,"maxLength":2}}}`, "{\"s\":\"\xc0\xaf\"}", false, nil},
	{"raw_surrogate_is_three_fffd", `{"properties":{"s":{"maxLength":2}}}`, "{\"s\":\"\xed\xa0\x80\"}", false, nil},
	{"combining_mark_counts", `{"properties":{"s":{"maxLength":1}}}`, `{"s":"e\u0301"}`, false, nil},
	{"max_bytes_counts_utf8", `{"type":"object"}`, `{"s":"😀"}`, true, &Options{MaxStringBytes: 4}},
	{"max_bytes_fffd_is_three", `{"type":"object"}`, `{"s":"\ud800x"}`, false, &Options{MaxStringBytes: 3}},
	{"max_bytes_invalid_byte_refused", `{"type":"object"}`, "{\"s\":\"\xff\"}", false, &Options{MaxStringBytes: 3}},
	{"max_bytes_applies_to_keys", `{"type":"object"}`, `{"\u00e9\u00e9":1}`, false, &Options{MaxStringBytes: 3}},
	{"nul_escape_refused", `{"type":"object"}`, `{"s":"\u0000"}`, false, nil},
	{"c1_raw_refused", `{"type":"object"}`, "{\"s\":\"\xc2\x85\"}", false, nil},
	{"nbsp_allowed", `{"type":"object"}`, `{"s":"\u00a0"}`, true, nil},
	{"nul_allowed_when_asked", `{"properties":{"s":{"enum":["a\u0000b"]}}}`, `{"s":"a\u0000b"}`, true, &Options{MaxStringBytes: 8, AllowControlChars: true}},

	// enum and const compare decoded strings and exact numbers.
	{"enum_escaped_e_acute", `{"properties":{"s":{"enum":["é","😀"]}}}`, `{"s":"\u00e9"}`, true, nil},
	{"enum_decomposed_e_acute", `{"properties":{"s":{"enum":["é","😀"]}}}`, `{"s":"e\u0301"}`, false, nil},
	{"enum_escaped_pair", `{"properties":{"s":{"enum":["é","😀"]}}}`, `{"s":"\ud83d\ude00"}`, true, nil},
	{"enum_half_pair", `{"properties":{"s":{"enum":["é","😀"]}}}`, `{"s":"\ud83d"}`, false, nil},
	{"enum_fffd_from_lone_surrogate_refused", `{"properties":{"s":{"enum":["\ufffd"]}}}`, `{"s":"\udc00"}`, false, nil},
	{"enum_fffd", `{"properties":{"s":{"enum":["\ufffd"]}}}`, `{"s":"\ufffd"}`, true, nil},
	{"enum_1_as_10e-1", `{"properties":{"n":{"enum":[1,0.1,1e400]}}}`, `{"n":10e-1}`, true, nil},
	{"enum_0.1_as_1e-1", `{"properties":{"n":{"enum":[1,0.1,1e400]}}}`, `{"n":1e-1}`, true, nil},
	{"enum_1e400_as_10e399", `{"properties":{"n":{"enum":[1,0.1,1e400]}}}`, `{"n":10e399}`, true, nil},
	{"enum_near_1", `{"properties":{"n":{"enum":[1,0.1,1e400]}}}`, `{"n":1.0000000000000000000001}`, false, nil},
	{"enum_number_as_string", `{"properties":{"n":{"enum":[1,0.1,1e400]}}}`, `{"n":"1"}`, false, nil},
	{"const_0_as_minus_0", `{"properties":{"n":{"const":0}}}`, `{"n":-0.0e5}`, true, nil},
	{"const_0_tiny", `{"properties":{"n":{"const":0}}}`, `{"n":1e-400}`, false, nil},

	// integer is a mathematical integer, whatever the spelling.
	{"integer_1.0", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1.0}`, true, nil},
	{"integer_1.5e1", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1.5e1}`, true, nil},
	{"integer_1.55e1", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1.55e1}`, false, nil},
	{"integer_1e400", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1e400}`, true, nil},
	{"integer_1e-400", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1e-400}`, false, nil},
	{"integer_beyond_big_rat", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1e1000001}`, false, nil},

	// Number literals are bounded as the root bounds them (review 15):
	// at most 128 characters, an exponent within ±400, wherever they are.
	{"number_exponent_400", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1E+0400}`, true, nil},
	{"number_exponent_401", `{"properties":{"n":{"maximum":1e500}}}`, `{"n":1e401}`, false, nil},
	{"number_exponent_minus_401", `{"properties":{"n":{"type":"number"}}}`, `{"n":-1e-401}`, false, nil},
	{"number_exponent_401_in_enum", `{"properties":{"n":{"enum":[1e401]}}}`, `{"n":1e401}`, false, nil},
	{"number_exponent_401_unchecked", `{"type":"object"}`, `{"n":[{"m":0e401}]}`, false, nil},
	{"number_128_characters", `{"properties":{"n":{"minimum":1e127}}}`, `{"n":1` + strings.Repeat("0", 127) + `}`, true, nil},
	{"number_129_characters", `{"type":"object"}`, `{"n":-` + strings.Repeat("0", 1) + `.` + strings.Repeat("1", 127) + `}`, false, nil},
	{"number_bound_before_type", `{"properties":{"n":{"type":"string"}}}`, `{"n":1e401}`, false, nil},

	// Bounds compare exactly, whatever the schema's spelling.
	{"minimum_0.1_at", `{"properties":{"n":{"minimum":0.1,"exclusiveMaximum":1e1}}}`, `{"n":1e-1}`, true, nil},
	{"minimum_0.1_below", `{"properties":{"n":{"minimum":0.1,"exclusiveMaximum":1e1}}}`, `{"n":0.09999999999999999999999}`, false, nil},
	{"exclusive_maximum_at", `{"properties":{"n":{"minimum":0.1,"exclusiveMaximum":1e1}}}`, `{"n":10.0}`, false, nil},
	{"exclusive_maximum_below", `{"properties":{"n":{"minimum":0.1,"exclusiveMaximum":1e1}}}`, `{"n":9.99999999999999999999999}`, true, nil},
	{"exclusive_minimum_minus_0", `{"properties":{"n":{"exclusiveMinimum":-0}}}`, `{"n":0}`, false, nil},
	{"exclusive_minimum_tiny", `{"properties":{"n":{"exclusiveMinimum":-0}}}`, `{"n":1e-400}`, true, nil},
	{"maximum_float_spelling", `{"properties":{"n":{"maximum":1.0}}}`, `{"n":1.00000000000000000001}`, false, nil},

	// Formats: v6's verdicts, quirks included.
	{"date_time_lower_case", `{"properties":{"s":{"format":"date-time"}}}`, `{"s":"2024-01-01t10:00:00z"}`, true, nil},
	{"date_time_leap_second_utc", `{"properties":{"s":{"format":"date-time"}}}`, `{"s":"2024-12-31T23:59:60Z"}`, true, nil},
	{"date_time_leap_second_offset", `{"properties":{"s":{"format":"date-time"}}}`, `{"s":"2024-12-31T23:59:60+01:00"}`, false, nil},
	{"date_time_leap_second_shifted", `{"properties":{"s":{"format":"date-time"}}}`, `{"s":"2025-01-01T00:59:60+01:00"}`, true, nil},
	{"date_1900_feb_29", `{"properties":{"s":{"format":"date"}}}`, `{"s":"1900-02-29"}`, false, nil},
	{"date_2000_feb_29", `{"properties":{"s":{"format":"date"}}}`, `{"s":"2000-02-29"}`, true, nil},
	{"email_quoted_space", `{"properties":{"s":{"format":"email"}}}`, `{"s":"\"a b\"@x.com"}`, true, nil},
	{"email_quoted_quote", `{"properties":{"s":{"format":"email"}}}`, `{"s":"\"a\\\"b\"@x.com"}`, false, nil},
	{"email_ipv6_literal", `{"properties":{"s":{"format":"email"}}}`, `{"s":"a@[IPv6:::1]"}`, true, nil},
	{"ipv4_leading_zero", `{"properties":{"s":{"format":"ipv4"}}}`, `{"s":"01.2.3.4"}`, false, nil},
	{"ipv4_plus_sign", `{"properties":{"s":{"format":"ipv4"}}}`, `{"s":"+1.2.3.4"}`, true, nil},
	{"ipv6_zone", `{"properties":{"s":{"format":"ipv6"}}}`, `{"s":"fe80::1%eth0"}`, false, nil},
	{"hostname_trailing_dot", `{"properties":{"s":{"format":"hostname"}}}`, `{"s":"example.com."}`, true, nil},
	{"hostname_64_char_label", `{"properties":{"s":{"format":"hostname"}}}`, `{"s":"` + strings.Repeat("a", 64) + `.com"}`, false, nil},
	{"hostname_idn", `{"properties":{"s":{"format":"hostname"}}}`, `{"s":"b\u00fccher.example"}`, false, nil},
	{"hostname_punycode", `{"properties":{"s":{"format":"hostname"}}}`, `{"s":"xn--bcher-kva.example"}`, true, nil},
	{"uuid_upper_case", `{"properties":{"s":{"format":"uuid"}}}`, `{"s":"123E4567-E89B-12D3-A456-426614174000"}`, true, nil},
	{"uri_with_space", `{"properties":{"s":{"format":"uri"}}}`, `{"s":"http://x.com/a b"}`, true, nil},
	{"uri_with_zone", `{"properties":{"s":{"format":"uri"}}}`, `{"s":"http://[fe80::1%25eth0]/"}`, false, nil},
	{"uri_relative", `{"properties":{"s":{"format":"uri"}}}`, `{"s":"/a"}`, false, nil},

	// Patterns are Go (RE2) regexps, as v6 compiles them, not ECMA-262.
	{"pattern_dot_matches_cr", `{"properties":{"s":{"pattern":"^.+$"}}}`, `{"s":"a\rb"}`, true, nil},
	{"pattern_dot_matches_u2028", `{"properties":{"s":{"pattern":"^.+$"}}}`, `{"s":"a\u2028b"}`, true, nil},
	{"pattern_dot_not_lf", `{"properties":{"s":{"pattern":"^.+$"}}}`, `{"s":"a\nb"}`, false, nil},
	{"pattern_dollar_not_before_lf", `{"properties":{"s":{"pattern":"^a$"}}}`, `{"s":"a\n"}`, false, nil},
	{"pattern_non_space_nbsp", `{"properties":{"s":{"pattern":"^\\S+$"}}}`, `{"s":"a\u00a0b"}`, true, nil},
	{"pattern_digit_ascii_only", `{"properties":{"s":{"pattern":"^\\d+$"}}}`, `{"s":"\u0661\u0662"}`, false, nil},
	{"pattern_fold_kelvin", `{"properties":{"s":{"pattern":"(?i)^k$"}}}`, `{"s":"\u212a"}`, true, nil},
	{"pattern_word_boundary_ascii", `{"properties":{"s":{"pattern":"\\bfoo\\b"}}}`, `{"s":"\u00e9foo\u00e9"}`, true, nil},
	{"pattern_brace_literal", `{"properties":{"s":{"pattern":"^a{,3}$"}}}`, `{"s":"a{,3}"}`, true, nil},
	{"pattern_escaped_punctuation", `{"properties":{"s":{"pattern":"^\\/\\-$"}}}`, `{"s":"/-"}`, true, nil},

	// Objects and arrays.
	{"null_is_empty_object", `{"minProperties":1}`, `null`, false, nil},
	{"nested_items_integer", `{"properties":{"m":{"type":"array","items":{"type":"array","items":{"type":"integer"},"minItems":1}}}}`, `{"m":[[1],[2.0]]}`, true, nil},
	{"nested_items_empty", `{"properties":{"m":{"type":"array","items":{"type":"array","items":{"type":"integer"},"minItems":1}}}}`, `{"m":[[1],[]]}`, false, nil},
	{"empty_enum_refuses_all", `{"properties":{"s":{"enum":[]}}}`, `{"s":null}`, false, nil},
	{"empty_enum_absent", `{"properties":{"s":{"enum":[]}}}`, `{}`, true, nil},

	// White space and the top level.
	{"nbsp_before_null_is_trimmed", `{"type":"object"}`, "\u00a0null", true, nil},
	{"nbsp_before_object", `{"type":"object"}`, "\u00a0{}", false, nil},
	{"bom", `{"type":"object"}`, "\ufeff{}", false, nil},
	{"vertical_tab_after", `{"type":"object"}`, "{}\v", false, nil},
	{"nul_after", `{"type":"object"}`, "{}\x00", false, nil},
	{"trailing_comma_array", `{"type":"object"}`, `{"a":[1,]}`, false, nil},
	{"two_documents", `{"type":"object"}`, `{}{}`, false, nil},
	{"top_level_array", `true`, `[]`, false, nil},
	{"top_level_string", `true`, `"{}"`, false, nil},
}

// TestReview14Probes checks each probe as review39Check does: Compile takes
// the schema, the reference pipeline gives the table's verdict, and the fast
// path the same one.
func TestReview14Probes(t *testing.T) {
	cases := make([]review39Case, len(review14Probes))
	for i, p := range review14Probes {
		cases[i] = review39Case{name: p.name, schema: p.schema, in: p.in, opts: p.opts, valid: p.valid}
	}
	review39Check(t, cases)
}

// TestReview14DepthLimit: 64 levels pass on both paths; at 65 only the
// fast path refuses, the one documented deviation.
func TestReview14DepthLimit(t *testing.T) {
	const src = `{"properties":{"x":{"type":"array"}}}`
	fast := mustCompile(t, src, testOpts)
	o := newOracle(t, decodeSchema(t, src), testOpts)
	nest := func(levels int) []byte { // the top object is level 1
		return []byte(`{"x":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `}`)
	}
	if e := fast.Validate(nest(64)); e != nil {
		t.Errorf("64 levels: Validate = %v, want nil", e)
	}
	if want, _ := o.verdict(nest(64)); want != nil {
		t.Errorf("64 levels: oracle = %v, want nil", want)
	}
	if e := fast.Validate(nest(65)); e == nil || e.kind != errDepth {
		t.Errorf("65 levels: Validate = %v, want the depth refusal", e)
	}
}

// TestReview14CompileRefuses: schemas the fast path cannot match exactly.
func TestReview14CompileRefuses(t *testing.T) {
	for _, tc := range []struct{ name, schema string }{
		{"lookahead", `{"properties":{"s":{"pattern":"(?=a)"}}}`},
		{"lookbehind", `{"properties":{"s":{"pattern":"(?<=a)b"}}}`},
		{"backreference", `{"properties":{"s":{"pattern":"(a)\\1"}}}`},
		{"control_escape", `{"properties":{"s":{"pattern":"\\cA"}}}`},
		{"unicode_escape", `{"properties":{"s":{"pattern":"\\u0041"}}}`},
		{"required_twice", `{"required":["a","a"]}`},
		// v6 reads a count beyond int64 by its low 64 bits (this one as 5).
		{"max_length_beyond_int64", `{"properties":{"s":{"maxLength":18446744073709551621}}}`},
		{"min_items_beyond_int64", `{"properties":{"s":{"minItems":18446744073709551617}}}`},
		{"max_length_1e400", `{"properties":{"s":{"maxLength":1e400}}}`},
		{"format_regex", `{"properties":{"s":{"format":"regex"}}}`},
		{"format_iri", `{"properties":{"s":{"format":"iri"}}}`},
		{"format_upper_case", `{"properties":{"s":{"format":"Date"}}}`},
		{"dependent_required", `{"dependentRequired":{"a":["b"]}}`},
		{"schema_over_http", `{"$schema":"http://json-schema.org/draft/2020-12/schema"}`},
		{"property_names", `{"propertyNames":{"maxLength":3}}`},
		{"contains", `{"properties":{"a":{"contains":{"type":"string"}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := Compile(decodeSchema(t, tc.schema), testOpts); ok {
				t.Errorf("Compile(%s) = ok, want refused", tc.schema)
			}
		})
	}
}

// TestReview14DecimalMatchesBigRat checks the number analysis the fast
// path compares with against math/big.Rat, which v6 uses: which literals
// SetString accepts, which are integers, and their order.
func TestReview14DecimalMatchesBigRat(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0000123456789"[r.IntN(13)]
		}
		return strings.TrimLeft(string(b), "0")
	}
	exps := []string{"", "", "e0", "e1", "e-1", "E+2", "e-5", "e+400", "e-400", "e00000000000000000000001",
		"e9223372036854775807", "e-9223372036854775808", "e9223372036854775808", "e-9223372036854775809"}
	var prev *big.Rat
	var prevD decimal
	for range 20000 {
		var lit string
		if r.IntN(2) == 0 {
			lit = "-"
		}
		ip := digits(1 + r.IntN(4))
		if ip == "" {
			ip = "0"
		}
		lit += ip
		if r.IntN(2) == 0 {
			lit += "." + fmt.Sprint(r.IntN(3)) + digits(r.IntN(5)) + strings.Repeat("0", r.IntN(2))
		}
		lit += exps[r.IntN(len(exps))]
		d, ok := parseDecimal([]byte(lit))
		if !ok {
			t.Fatalf("parseDecimal(%q) refused a JSON number", lit)
		}
		rat, ratOK := new(big.Rat).SetString(lit)
		if d.ratOK != ratOK {
			t.Fatalf("parseDecimal(%q).ratOK = %v, big.Rat.SetString ok = %v", lit, d.ratOK, ratOK)
		}
		if !ratOK {
			continue
		}
		if d.isInt != rat.IsInt() {
			t.Fatalf("parseDecimal(%q).isInt = %v, big.Rat says %v", lit, d.isInt, rat.IsInt())
		}
		if prev != nil {
			if got, want := cmpDecimal(&d, &prevD), rat.Cmp(prev); got != want {
				t.Fatalf("cmpDecimal(%q, %s) = %d, big.Rat says %d", lit, prev.RatString(), got, want)
			}
		}
		prev, prevD = rat, d
	}
	// |exp5| right at big.Rat's limit of 1e6 (slow to parse: not compared).
	for _, tc := range []struct {
		lit         string
		ratOK, isIn bool
	}{
		{"1.5e1000000", true, true}, {"15e-1000000", true, false}, {"1.5e1000002", false, false},
		{"1.5e-999999", true, false}, {"1.5e-1000000", false, false}, {"0.5e1000001", true, true}, {"0.0e1000001", true, true}, {"0e9223372036854775808", false, false},
	} {
		d, _ := parseDecimal([]byte(tc.lit))
		_, ratOK := new(big.Rat).SetString(tc.lit)
		if d.ratOK != ratOK || d.ratOK != tc.ratOK || d.isInt != tc.isIn {
			t.Errorf("parseDecimal(%q): ratOK %v isInt %v; big.Rat ok %v; want %v %v", tc.lit, d.ratOK, d.isInt, ratOK, tc.ratOK, tc.isIn)
		}
	}
}

package audit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// review40Canonical returns appendCanonical's output for raw, and whether
// it reported raw valid.
func review40Canonical(t *testing.T, raw string) (string, bool) {
	t.Helper()
	got, ok := appendCanonical(nil, []byte(raw))
	return string(got), ok
}

// review40GoCanonical returns what encoding/json writes for raw after
// decoding it (numbers as written, map keys sorted): the canonical form of
// raw when raw is valid UTF-8 without duplicate or fold-alike keys and
// without escaped lone surrogates. It reports false when raw is not such a
// text.
func review40GoCanonical(t *testing.T, raw string) (string, bool) {
	t.Helper()
	if !json.Valid([]byte(raw)) || hasDuplicateKeys(raw) || !utf8.ValidString(raw) ||
		textsafe.JSONReplaced([]byte(raw)) {
		return "", false
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(decode(%q)): %v", raw, err)
	}
	return string(out), true
}

// TestReview40CanonicalValidity pins what appendCanonical accepts, against
// json.Valid: every text here that is not one JSON value (cut short, a
// missing or wrong separator, a bad key, a bad escape, a bad number, a
// blank text) is reported false, so that its hash is of its raw bytes
// rather than of a "canonical form" that two different texts could share;
// and every valid one gives the form encoding/json writes for its value.
// A scanner that accepted a broken member or element would hash garbage
// that reads nothing like what a handler is given, or panic on the text.
func TestReview40CanonicalValidity(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string // "" when raw is not valid JSON
	}{
		{"empty", ``, ""},
		{"blank", " ", ""},
		{"blank_mixed", " \t\r\n", ""},
		{"array_open", `[`, ""},
		{"array_open_space", `[ `, ""},
		{"array_cut_after_element", `[1`, ""},
		{"array_cut_after_element_space", `[1 `, ""},
		{"array_cut_after_comma", `[1,`, ""},
		{"array_trailing_comma", `[1,]`, ""},
		{"array_missing_comma", `[1 2]`, ""},
		{"array_closed_by_brace", `[1}`, ""},
		{"array_bad_element", `[x]`, ""},
		{"array_of_open_object", `[{]`, ""},
		{"array_of_object_comma", `[{,1]`, ""},
		{"array_of_object_trailing_comma", `[{"a":1,]`, ""},
		{"array_of_object_key_only", `[{"a"]`, ""},
		{"array_of_object_unclosed", `[{"a":1]`, ""},
		{"array_of_object_missing_comma", `[{"a":1 "b":2}]`, ""},
		{"object_open", `{`, ""},
		{"object_open_space", `{ `, ""},
		{"object_key_cut", `{"a`, ""},
		{"object_key_only", `{"a"`, ""},
		{"object_key_colon", `{"a":`, ""},
		{"object_cut_after_value", `{"a":1`, ""},
		{"object_cut_after_comma", `{"a":1,`, ""},
		{"object_trailing_comma", `{"a":1,}`, ""},
		{"object_missing_colon", `{"a" 1}`, ""},
		{"object_comma_for_colon", `{"a",1}`, ""},
		{"object_letter_for_colon", `{"a"x1}`, ""},
		{"object_unquoted_key", `{a":1}`, ""},
		{"object_number_key", `{1:2}`, ""},
		{"object_only_comma", `{,}`, ""},
		{"object_bad_escape_in_key", `{"\q:1}`, ""},
		{"object_short_unicode_escape_in_key", `{"\u:1}`, ""},
		{"object_key_cut_at_backslash", `{"a\`, ""},
		{"object_key_cut_after_surrogate", `{"\ud800`, ""},
		{"object_key_cut_after_surrogate_backslash", `{"\ud800\`, ""},
		{"object_key_cut_after_surrogate_u", `{"\ud800\u`, ""},
		{"object_key_cut_by_newline", "{\"a\n:1}", ""},
		{"object_escaped_key_cut_by_tab", "{\"\\n\t:1}", ""},
		{"object_value_cut_by_newline", "{\"a\":\"b\n}", ""},
		{"object_holding_open_array", `{"a":[1}`, ""},
		{"object_closed_by_bracket", `{"a":1]`, ""},
		{"object_extra_brace", `{"a":1}}`, ""},
		{"two_values", `{} {}`, ""},
		{"literal_cut", `tru`, ""},
		{"literal_misspelt", `nul1`, ""},
		{"literal_with_tail", `truex`, ""},
		{"minus_only", `-`, ""},
		{"minus_letter", `-x`, ""},
		{"minus_leading_zero", `-01`, ""},
		{"fraction_cut", `[1.]`, ""},
		{"exponent_cut", `[1E-]`, ""},
		{"two_points", `1.2.3`, ""},
		{"leading_zero", `01`, ""},
		{"plus_sign", `+1`, ""},
		{"no_integer_part", `.5`, ""},
		{"fraction_without_digits", `1.`, ""},
		{"exponent_without_digits", `1e`, ""},
		{"exponent_sign_without_digits", `1e+`, ""},
		{"string_cut", `"abc`, ""},
		{"string_control_char", "\"a\x01\"", ""},
		{"string_cut_by_newline", "\"a\n", ""},
		{"string_cut_by_carriage_return", "\"a\r ", ""},
		{"array_string_cut_by_newline", "[\"a\n]", ""},
		{"array_escaped_string_cut_by_tab", "[\"\\t\t]", ""},
		{"string_bad_escape", `"\x"`, ""},
		{"string_short_unicode_escape", `"\u12"`, ""},
		{"string_signed_unicode_escape", `"\u+123"`, ""},

		{"empty_object", ` { } `, `{}`},
		{"zero_alone", `0`, `0`},
		{"minus_zero_alone", `-0`, `-0`},
		{"integer_alone", `-1234567890`, `-1234567890`},
		{"fraction_alone", `12.05`, `12.05`},
		{"exponent_alone", `12.5e+3`, `12.5e+3`},
		{"exponent_digits_alone", `1e10`, `1e10`},
		{"nines", `[9,0.9,1e9,-19.99E+99]`, `[9,0.9,1e9,-19.99E+99]`},
		{"string_alone", `"x"`, `"x"`},
		{"true_alone", `true`, `true`},
		{"null_alone", ` null `, `null`},
		{"empty_array", ` [ ] `, `[]`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"numbers_as_given", "[-0,0.5e-3,1E+2,-12.50E10,7]", `[-0,0.5e-3,1E+2,-12.50E10,7]`},
		{"whitespace_everywhere", " {\r\n\t\"b\" :\t[ 1 ,\n2 ] , \"a\" : { \"d\" : null , \"c\" : \"x\" } } ",
			`{"a":{"c":"x","d":null},"b":[1,2]}`},
		{"nested_arrays_of_objects", `[[{"b":1,"a":2}],[],{"c":[{}]}]`, `[[{"a":2,"b":1}],[],{"c":[{}]}]`},
		{"escapes_decoded_and_rewritten", `{"\u0062":"\u0041\/\n\t<","a":"\"\\"}`,
			`{"a":"\"\\","b":"A/\n\t\u003c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := review40Canonical(t, tt.raw)
			if valid := json.Valid([]byte(tt.raw)); valid != (tt.want != "") {
				t.Fatalf("json.Valid(%q) = %v: the case is wrong", tt.raw, valid)
			}
			if tt.want == "" {
				if ok {
					t.Errorf("appendCanonical(%q) = %q, true; want false (not JSON)", tt.raw, got)
				}
				return
			}
			if !ok {
				t.Fatalf("appendCanonical(%q) = false, want %q", tt.raw, tt.want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("appendCanonical(%q) (-want +got):\n%s", tt.raw, diff)
			}
			if gw, ok := review40GoCanonical(t, tt.raw); ok && gw != tt.want {
				t.Errorf("encoding/json writes %q for %q: the case is wrong", gw, tt.raw)
			}
		})
	}
}

// TestReview40CanonicalDepthLimit pins the nesting limit: a value nested
// maxDepth containers deep (the limit the event encoder keeps too) has a
// canonical form; one level more is refused (its hash is then of the raw
// bytes), as is a broken value past the limit, which must not be taken for
// valid because the scanner stopped looking at it. Without a limit a
// hostile argument text could exhaust the stack of the process recording it.
func TestReview40CanonicalDepthLimit(t *testing.T) {
	nest := func(open, inner, closing string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(closing, n)
	}
	tests := []struct {
		name string
		raw  string
		ok   bool
	}{
		{"arrays_at_limit", nest("[", "1", "]", maxDepth), true},
		{"arrays_past_limit", nest("[", "1", "]", maxDepth+1), false},
		{"empty_arrays_at_limit", nest("[", "", "]", maxDepth+1), true},
		{"empty_arrays_past_limit", nest("[", "", "]", maxDepth+2), false},
		{"objects_at_limit", nest(`{"a":`, "1", "}", maxDepth), true},
		{"objects_past_limit", nest(`{"a":`, "1", "}", maxDepth+1), false},
		{"broken_array_past_limit", nest("[", "[1,]", "]", maxDepth), false},
		{"broken_object_past_limit", nest("[", `{"a":}`, "]", maxDepth), false},
		{"mixed_at_limit", nest(`[{"a":`, "1", "}]", maxDepth/2), true},
		{"mixed_past_limit", nest(`[{"a":`, "[1]", "}]", maxDepth/2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := review40Canonical(t, tt.raw)
			if ok != tt.ok {
				t.Fatalf("appendCanonical(<%d bytes, %s>) ok = %v, want %v", len(tt.raw), tt.name, ok, tt.ok)
			}
			if !ok {
				return
			}
			want := strings.Map(func(r rune) rune {
				if r == ' ' {
					return -1
				}
				return r
			}, tt.raw)
			if got != want {
				t.Errorf("appendCanonical(<%d bytes, %s>) changed the text: got %.60q..., want %.60q...",
					len(tt.raw), tt.name, got, want)
			}
		})
	}
}

// TestReview40CanonicalStrings pins the canonical form of strings, as a
// value, in an array and as a key, where they are read by different code
// (a value is checked first and decoded later, a key decoded at once):
// every escape decoded and written as encoding/json writes the text, an
// escaped pair as its character, an escaped lone surrogate kept as its
// escape in lower case, each byte of invalid UTF-8 as itself; a string
// with a broken escape, a control character or no end is not JSON. A
// text read differently by JavaScript's JSON.parse must not get the same
// form, and a broken one must hash as its raw bytes.
func TestReview40CanonicalStrings(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string // "" when raw is not a valid JSON string
	}{
		{"plain", `"abc"`, `"abc"`},
		{"empty", `""`, `""`},
		{"short_escapes", `"\"\\\/\b\f\n\r\t"`, `"\"\\/\b\f\n\r\t"`},
		{"escapes_between_text", `"a\nb\tc\/d"`, `"a\nb\tc/d"`},
		{"unicode_escapes_any_case", `"\u00e9\u00E9\u0041\u20Ac"`, "\"ééA€\""},
		{"escaped_controls", `"\u0000\u001F\u007f"`, "\"\\u0000\\u001f\x7f\""},
		{"html_and_separators", `"<>&\u2028\u2029"`, `"\u003c\u003e\u0026\u2028\u2029"`},
		{"escaped_pair", `"\ud83c\udf89"`, "\"\U0001F389\""},
		{"escaped_pair_upper", `"x\uD83C\uDF89y"`, "\"x\U0001F389y\""},
		{"raw_multibyte", "\"é€\U0001F389\"", "\"é€\U0001F389\""},
		{"lone_high", `"\ud800"`, `"\ud800"`},
		{"lone_high_upper", `"\uDBFF"`, `"\udbff"`},
		{"lone_low_mixed_case", `"\uDc0A"`, `"\udc0a"`},
		{"low_then_high", `"\udc00\ud800"`, `"\udc00\ud800"`},
		{"high_then_pair", `"\ud800\ud83c\udf89"`, "\"\\ud800\U0001F389\""},
		{"high_then_letter_escape", `"\ud800\u0041"`, `"\ud800A"`},
		{"high_then_text", `"\ud800xy"`, `"\ud800xy"`},
		{"text_then_high", `"xy\ud800"`, `"xy\ud800"`},
		{"lone_among_escapes", `"\b\ud800\n\"\\\/\f\r\t<\u00e9\udfff"`,
			"\"\\b\\ud800\\n\\\"\\\\/\\f\\r\\t\\u003cé\\udfff\""},
		{"lone_with_bad_bytes", "\"\xff\\ud800\xfe\"", "\"\xff\\ud800\xfe\""},
		{"bad_bytes", "\"\xff<\xe2\x82\\u00e9\xc3\"", "\"\xff\\u003c\xe2\x82é\xc3\""},
		{"bad_bytes_and_escapes", "\"\xc3\\n\x80\"", "\"\xc3\\n\x80\""},

		{"cut", `"abc`, ""},
		{"cut_after_escape", `"a\n`, ""},
		{"cut_in_escape", `"a\`, ""},
		{"cut_in_unicode_escape", `"a\u00`, ""},
		{"cut_after_u", `"\u`, ""},
		{"bad_escape", `"\x"`, ""},
		{"bad_escape_after_escape", `"\n\a"`, ""},
		{"bad_hex", `"\u00G0"`, ""},
		{"signed_hex", `"\u-123"`, ""},
		{"spaced_hex", `"\u 123"`, ""},
		{"control_char", "\"a\x1f\"", ""},
		{"control_char_after_escape", "\"\\n\x01\"", ""},
		{"newline_raw", "\"a\nb\"", ""},
		{"high_then_bad_hex", `"\ud800\u12"`, ""},
		{"high_then_bad_hex_long", `"\ud800\uZZZZ"`, ""},
		{"high_then_cut_u", `"\ud800\u`, ""},
		{"high_then_cut", `"\ud800\`, ""},
		{"high_then_bad_escape", `"\ud800\q"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, form := range []struct{ raw, want string }{
				{tt.raw, tt.want},
				{"[1," + tt.raw + "]", "[1," + tt.want + "]"},
				{"{" + tt.raw + ":" + tt.raw + "}", "{" + tt.want + ":" + tt.want + "}"},
				{`{"":0,` + tt.raw + `:1}`, `{"":0,` + tt.want + `:1}`},
			} {
				got, ok := review40Canonical(t, form.raw)
				if tt.want == "" {
					if ok {
						t.Errorf("appendCanonical(%q) = %q, true; want false (not JSON)", form.raw, got)
					}
					continue
				}
				if !ok {
					t.Errorf("appendCanonical(%q) = false, want %q", form.raw, form.want)
					continue
				}
				if diff := cmp.Diff(form.want, got); diff != "" {
					t.Errorf("appendCanonical(%q) (-want +got):\n%s", form.raw, diff)
				}
			}
			if valid := json.Valid([]byte(tt.raw)); valid != (tt.want != "") {
				t.Fatalf("json.Valid(%q) = %v: the case is wrong", tt.raw, valid)
			}
			if tt.want == "" || !utf8.ValidString(tt.raw) {
				return
			}
			// The form reads to JSON.parse as the text does.
			wantJS, ok1 := jsRead([]byte(tt.raw))
			gotJS, ok2 := jsRead([]byte(tt.want))
			if !ok1 || !ok2 || wantJS != gotJS {
				t.Errorf("JSON.parse reads %q as %q (%v) but its form %q as %q (%v): the case is wrong",
					tt.raw, wantJS, ok1, tt.want, gotJS, ok2)
			}
			if gw, ok := review40GoCanonical(t, tt.raw); ok && gw != tt.want {
				t.Errorf("encoding/json writes %q for %q: the case is wrong", gw, tt.raw)
			}
		})
	}
}

// review40Objects returns the object texts of keys (written as JSON
// string literals, without quotes) in the order given, and with the
// members in reverse order. The value of the i-th key is "pi".
func review40Objects(keys []string) (fwd, rev string) {
	var f, r []string
	for i, k := range keys {
		f = append(f, `"`+k+`":"p`+strconv.Itoa(i)+`"`)
	}
	for i := len(f) - 1; i >= 0; i-- {
		r = append(r, f[i])
	}
	return "{" + strings.Join(f, ",") + "}", "{" + strings.Join(r, ",") + "}"
}

// TestReview40CanonicalAlikeKeysKeepOrder pins that keys a decoder reads
// as one key keep their order in the document: those that fold alike
// (encoding/json matches "s", "S" and "\u017f" to one struct field, the last
// winning) and those of invalid UTF-8 that decode alike (Go reads each bad
// byte as U+FFFD). Such an object, written in either order, is already in
// canonical form, and so the two orders, which a handler reads
// differently, hash differently. The alike keys are put after prefixes
// of 0 to 17 bytes (so that the byte that makes them alike is looked at
// in any place of a key) and among up to 20 other members.
func TestReview40CanonicalAlikeKeysKeepOrder(t *testing.T) {
	pairs := []struct{ name, a, b string }{
		{"ascii_case", "s", "S"},
		{"ascii_case_z", "z", "Z"},
		{"ascii_case_a", "A", "a"},
		{"long_s", "s", "\u017f"},
		{"long_s_upper", "\u017f", "S"},
		{"kelvin", "k", "\u212a"},
		{"sigma", "\u03c3", "\u03c2"},
		{"invalid_bytes", "\xff", "\xfe"},
		{"invalid_and_replacement", "\xff", "\ufffd"},
		{"continuation_bytes_runs", "\x80", "\x80\x80"},
		{"invalid_run_and_replacement", "\xe2\x82", "\ufffd"},
		{"invalid_and_case", "\xffa", "\xfeA"},
		{"invalid_and_escape", "\xff", `\ufffd`},
		{"escaped_case", `\u0073`, "S"},
	}
	for _, p := range pairs {
		for _, pre := range []int{0, 1, 6, 7, 8, 9, 15, 16, 17} {
			for _, others := range []int{0, 1, 20} {
				prefix := strings.Repeat("x", pre)
				keys := []string{prefix + p.a, prefix + p.b}
				for i := range others {
					keys = append(keys, fmt.Sprintf("z%02d", i))
				}
				name := fmt.Sprintf("%s/prefix_%d/others_%d", p.name, pre, others)
				t.Run(name, func(t *testing.T) {
					fwd, rev := review40Objects(keys)
					gf, okf := review40Canonical(t, fwd)
					gr, okr := review40Canonical(t, rev)
					if !okf || !okr {
						t.Fatalf("appendCanonical(%q) ok = %v, appendCanonical(%q) ok = %v, want true",
							fwd, okf, rev, okr)
					}
					if gf == gr {
						t.Fatalf("appendCanonical(%q) == appendCanonical(%q) = %q, "+
							"but a handler reads them differently", fwd, rev, gf)
					}
					// The alike keys keep their order: the first of them in the
					// canonical form is the first in the document.
					if i, j := strings.Index(gf, `:"p0"`), strings.Index(gf, `:"p1"`); i > j {
						t.Errorf("appendCanonical(%q) = %q: %q put before %q", fwd, gf, keys[1], keys[0])
					}
					if i, j := strings.Index(gr, `:"p0"`), strings.Index(gr, `:"p1"`); i < j {
						t.Errorf("appendCanonical(%q) = %q: %q put before %q", rev, gr, keys[0], keys[1])
					}
				})
			}
		}
	}
}

// review40Zs returns n members "z00":0, "z01":0 and on, each after a comma.
func review40Zs(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"z%02d":0`, i)
	}
	return b.String()
}

// review40Braces returns an object of keys "a", "A", "{0" to "{9" and "_0"
// to "_9" (braces first, in the document or, canon, in fold order: the
// letters, then the underscores, then the braces).
func review40Braces(canon bool) string {
	var braces, unders string
	for i := range 10 {
		braces += fmt.Sprintf(`,"{%d":%d`, i, i)
		unders += fmt.Sprintf(`,"_%d":%d`, i, 10+i)
	}
	if canon {
		return `{"a":20,"A":21` + unders + braces + `}`
	}
	return `{"a":20` + braces + unders + `,"A":21}`
}

// TestReview40CanonicalKeyOrder pins the order of an object's members: by
// the bytes of their decoded keys; in an object with two keys that fold
// alike, by their folded keys ("_" after the letters, which fold to upper
// case; "\u017f" with "s"), keys that fold alike in document order; in an
// object with a key of invalid UTF-8 and two keys some decoder reads
// alike, by their keys with each run of invalid UTF-8 and U+FFFD read as
// one U+FFFD and folded. Other objects keep the byte order of their
// keys, and so the hash recorded by earlier versions. These are the
// orders the audit record's hash is computed over: another order would
// change the recorded hash of the same arguments.
func TestReview40CanonicalKeyOrder(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"bytes", `{"b":1,"_":2,"a":3,"C":4,"ab":5,"":6}`, `{"":6,"C":4,"_":2,"a":3,"ab":5,"b":1}`},
		{"bytes_prefix_first", `{"ab":1,"a":2,"abc":3}`, `{"a":2,"ab":1,"abc":3}`},
		{"bytes_decoded", `{"\u0062":1,"a\u0062":2,"\u0061":3}`, `{"a":3,"ab":2,"b":1}`},
		{"bytes_wide", "{\"\u00e9\":1,\"z\":2,\"\u017f\":3,\"\U0001F389\":4}",
			"{\"z\":2,\"\u00e9\":1,\"\u017f\":3,\"\U0001F389\":4}"},
		{"case_not_alike_16", `{"a":1,"B":2` + review40Zs(14) + `}`, `{"B":2,"a":1` + review40Zs(14) + `}`},
		{"case_not_alike_17", `{"a":1,"B":2` + review40Zs(15) + `}`, `{"B":2,"a":1` + review40Zs(15) + `}`},
		{"case_not_alike_20", `{"a":1,"B":2` + review40Zs(18) + `}`, `{"B":2,"a":1` + review40Zs(18) + `}`},
		{"fold_alike_17", `{"b":1,"B":2,"a":3` + review40Zs(14) + `}`, `{"a":3,"b":1,"B":2` + review40Zs(14) + `}`},
		{"fold_underscore_after_letters", `{"_":1,"a":2,"B":3,"b":4}`, `{"a":2,"B":3,"b":4,"_":1}`},
		{"fold_backquote_brace_after_letters", "{\"`\":1,\"{\":2,\"z\":3,\"Z\":4,\"@\":5,\"_\":6}",
			"{\"@\":5,\"z\":3,\"Z\":4,\"_\":6,\"`\":1,\"{\":2}"},
		{"fold_brace_after_underscore_many", review40Braces(false), review40Braces(true)},
		{"fold_brace_after_underscore", "{\"{\":1,\"_\":2,\"a\":3,\"A\":4}", "{\"a\":3,\"A\":4,\"_\":2,\"{\":1}"},
		{"fold_prefix_first", `{"ab":1,"A":2,"a":3}`, `{"A":2,"a":3,"ab":1}`},
		{"fold_long_s_before_t", "{\"t\":1,\"\u017f\":2,\"s\":3}", "{\"\u017f\":2,\"s\":3,\"t\":1}"},
		{"fold_kelvin_before_l", "{\"l\":1,\"\u212a\":2,\"k\":3}", "{\"\u212a\":2,\"k\":3,\"l\":1}"},
		{"fold_wide_vs_ascii", "{\"\u00e9\":1,\"E\":2,\"e\":3}", "{\"E\":2,\"e\":3,\"\u00e9\":1}"},
		{"fold_case_of_wide", "{\"\u00c9\":1,\"\u00e9\":2,\"a\":3}", "{\"a\":3,\"\u00c9\":1,\"\u00e9\":2}"},
		{"fold_same_keys_kept", `{"a":1,"b":2,"a":3,"A":4}`, `{"a":1,"a":3,"A":4,"b":2}`},
		{"coarse_fold_order", "{\"b\":1,\"\xff\":2,\"A\":3,\"a\":4}", "{\"A\":3,\"a\":4,\"b\":1,\"\xff\":2}"},
		{"coarse_run_alike", "{\"x\":1,\"\xe2\x82y\":2,\"\ufffdy\":3,\"\xffz\":4}",
			"{\"x\":1,\"\xe2\x82y\":2,\"\ufffdy\":3,\"\xffz\":4}"},
		{"coarse_shorter_first", "{\"\xffa\":1,\"\xfe\":2,\"\ufffd\":3}", "{\"\xfe\":2,\"\ufffd\":3,\"\xffa\":1}"},
		{"invalid_alike_document_order", "{\"\xff\":1,\"b\":2,\"\xc3\":3,\"a\":4}", "{\"a\":4,\"b\":2,\"\xff\":1,\"\xc3\":3}"},
		{"invalid_not_alike_case", "{\"a\":1,\"B\":2,\"\xff\":3}", "{\"B\":2,\"a\":1,\"\xff\":3}"},
		{"invalid_not_alike_case_many", "{\"a\":1,\"B\":2,\"\xff\":3" + review40Zs(17) + "}",
			"{\"B\":2,\"a\":1" + review40Zs(17) + ",\"\xff\":3}"},
		{"invalid_nul_keys", "{\"\\u0000b\":1,\"\\u0000a\":2,\"\xff\":3}", "{\"\\u0000a\":2,\"\\u0000b\":1,\"\xff\":3}"},
		{"invalid_not_alike_bytes", "{\"\xff\":1,\"b\":2,\"a\xc3\":3,\"a\":4}", "{\"a\":4,\"a\xc3\":3,\"b\":2,\"\xff\":1}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := review40Canonical(t, tt.raw)
			if !ok {
				t.Fatalf("appendCanonical(%q) = false, want %q", tt.raw, tt.want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("appendCanonical(%q) (-want +got):\n%s", tt.raw, diff)
			}
		})
	}
}

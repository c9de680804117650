package mcpguard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// review37Refusal checks that err is an INVALID_ARGUMENTS refusal that
// unwraps to ErrInvalidArguments, as the error contract wants, and returns
// it (nil when err is nil).
func review37Refusal(t *testing.T, call string, err error) *DenialError {
	t.Helper()
	if err == nil {
		return nil
	}
	var de *DenialError
	if !errors.As(err, &de) || de.Code != CodeInvalidArguments || !errors.Is(err, ErrInvalidArguments) {
		t.Fatalf("%s = %v (%T); want an INVALID_ARGUMENTS *DenialError", call, err, err)
	}
	return de
}

// review37Verdict is what a refusal says: its message and details.field
// ("" when it has none), or "ok" for no refusal.
type review37Verdict struct {
	Message string
	Field   string
}

func review37VerdictOf(t *testing.T, call string, err error) review37Verdict {
	t.Helper()
	de := review37Refusal(t, call, err)
	if de == nil {
		return review37Verdict{Message: "ok"}
	}
	f, _ := de.Details["field"].(string)
	return review37Verdict{Message: de.Message, Field: f}
}

// review37Validator compiles schema, failing the test on an error, and
// checks the premise that the pipeline's check takes the fast path exactly
// when fast is true.
func review37Validator(t *testing.T, schema string, opts *ValidationOptions, fast bool) *Validator {
	t.Helper()
	v, err := NewValidator(json.RawMessage(schema), opts)
	if err != nil {
		t.Fatalf("NewValidator(%s): %v", schema, err)
	}
	if (v.fast != nil) != fast {
		t.Fatalf("test premise: NewValidator(%s) fast path = %v, want %v", schema, v.fast != nil, fast)
	}
	return v
}

// review37RefSuffix keeps a schema out of the fast path's subset without
// changing what it accepts (as review20's tests do).
const review37RefSuffix = `,"propertyNames":{"maxLength":70000}}`

// Only empty arguments and JSON null stand for "no arguments" (an empty
// object): any other value, a one-byte number included, is not an object
// and is refused before the handler. Pinned on both paths (Validate, and
// check with and without the fast path) because a tool whose schema
// requires nothing would otherwise run on arguments the client never sent
// as an object.
func TestReview37OnlyEmptyOrNullIsNoArguments(t *testing.T) {
	const props = `{"type":"object","properties":{"a":{"type":"integer"}}`
	validators := map[string]*Validator{
		"fast":      review37Validator(t, props+`}`, nil, true),
		"reference": review37Validator(t, props+review37RefSuffix, nil, false),
		// Lenient with declared properties: the fast path and the
		// letter-case check both run.
		"fast_cases": review37Validator(t, props+`}`, &ValidationOptions{Lenient: true}, true),
	}
	if validators["fast_cases"].cases == nil {
		t.Fatal("test premise: a lenient schema with properties has a letter-case check")
	}
	notObject := review37Verdict{Message: "arguments must be a JSON object"}
	for _, tc := range []struct {
		name, raw string
		want      review37Verdict
	}{
		{"empty", ``, review37Verdict{Message: "ok"}},
		{"blank", " \n\t", review37Verdict{Message: "ok"}},
		{"null", `null`, review37Verdict{Message: "ok"}},
		{"null_padded", ` null `, review37Verdict{Message: "ok"}},
		{"object", `{"a":1}`, review37Verdict{Message: "ok"}},
		{"one_digit", `5`, notObject},
		{"one_digit_padded", ` 7 `, notObject},
		{"array", `[]`, notObject},
		{"string", `"x"`, notObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for vname, v := range validators {
				for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
					call := vname + " " + which + "(" + tc.raw + ")"
					doc, err := f(json.RawMessage(tc.raw))
					got := review37VerdictOf(t, call, err)
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("%s: verdict (-want +got):\n%s", call, diff)
					}
					if which == "Validate" && err == nil && doc == nil {
						t.Errorf("%s returned no decoded value", call)
					}
				}
			}
		})
	}
}

// A case variant of a declared name ("A" for "a") is refused on the fast
// path too, where the letter-case check runs after the fast schema check;
// the same validator accepts absent arguments. Pins that the case check is
// skipped only for empty or null arguments: a raw handler would read
// {"A": ...} into its field "a", which the schema's checks never saw.
func TestReview37FastPathCaseCheckRunsOnArguments(t *testing.T) {
	v := review37Validator(t, `{"type":"object","properties":{"a":{"type":"integer","maximum":5}}}`, &ValidationOptions{Lenient: true}, true)
	for _, tc := range []struct {
		name, raw string
		refused   bool
	}{
		{"declared", `{"a":1}`, false},
		{"case_variant", `{"A":1000}`, true},
		{"case_variant_padded", ` {"A":1000} `, true},
		{"undeclared_unrelated", `{"b":1000}`, false},
		{"absent", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.check(json.RawMessage(tc.raw))
			review37Refusal(t, "check("+tc.raw+")", err)
			if (err != nil) != tc.refused {
				t.Errorf("check(%s) = %v; want refused %v", tc.raw, err, tc.refused)
			}
		})
	}
}

// Data after the arguments' one JSON value, even a single byte, is refused:
// a downstream that reads the text otherwise (a second value, a comment)
// would act on what the validator never checked.
func TestReview37TrailingDataRefused(t *testing.T) {
	v := review37Validator(t, `{"type":"object"`+review37RefSuffix, &ValidationOptions{Lenient: true}, false)
	for _, tc := range []struct{ name, raw string }{
		{"one_byte", `{}x`},
		{"one_digit", `{}1`},
		{"spaced_value", `{} 1`},
		{"second_object", `{}{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Validate(json.RawMessage(tc.raw))
			if review37Refusal(t, "Validate("+tc.raw+")", err) == nil {
				t.Errorf("Validate(%s) = nil; want a refusal of the trailing data", tc.raw)
			}
		})
	}
	for _, raw := range []string{"{} \n\t\r", "{}"} {
		if _, err := v.Validate(json.RawMessage(raw)); err != nil {
			t.Errorf("Validate(%q) = %v; want nil (trailing white space is no data)", raw, err)
		}
	}
}

// An output validator's Validate checks the schema's own rules only: a
// lone surrogate in a result is not refused there (tools may answer any
// text), while an input validator refuses it before the handler (the
// handler would read U+FFFD where a downstream keeps the surrogate).
func TestReview37BrokenTextRefusedOnlyInArguments(t *testing.T) {
	const schema = `{"type":"object","properties":{"s":{"type":"string"}}}`
	const raw = `{"s":"a\ud800b"}`
	in, err := NewValidator(json.RawMessage(schema), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := NewOutputValidator(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Validate(json.RawMessage(raw)); err != nil {
		t.Errorf("output Validate(%s) = %v; want nil", raw, err)
	}
	_, err = in.Validate(json.RawMessage(raw))
	got := review37VerdictOf(t, "input Validate("+raw+")", err)
	if diff := cmp.Diff(review37Verdict{Message: brokenTextMessage}, got); diff != "" {
		t.Errorf("input Validate(%s) (-want +got):\n%s", raw, diff)
	}
}

// MaxStringBytes is an inclusive bound, for values and names alike, and a
// name over it is refused even where control characters are allowed.
// Pinned on the reference path (Validate): the fast path has its own
// implementation, and a user who sets the bound to the longest value a
// tool takes must not see that value refused.
func TestReview37StringBoundIsInclusive(t *testing.T) {
	const schema = `{"type":"object","properties":{"s":{"type":"string"},"abcd":{},"abcde":{}}}`
	tooLongName := review37Verdict{Message: "argument names must be short and free of control characters"}
	for _, tc := range []struct {
		name, raw string
		ctrl      bool
		want      review37Verdict
	}{
		{"value_at_bound", `{"s":"abcd"}`, false, review37Verdict{Message: "ok"}},
		{"value_over_bound", `{"s":"abcde"}`, false, review37Verdict{Message: `argument "s" is longer than 4 bytes`, Field: "/s"}},
		{"name_at_bound", `{"abcd":1}`, false, review37Verdict{Message: "ok"}},
		{"name_over_bound", `{"abcde":1}`, false, tooLongName},
		{"name_over_bound_controls_allowed", `{"abcde":1}`, true, tooLongName},
		{"value_over_bound_controls_allowed", `{"s":"abcde"}`, true, review37Verdict{Message: `argument "s" is longer than 4 bytes`, Field: "/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{MaxStringBytes: 4, AllowControlChars: tc.ctrl})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Validate(json.RawMessage(tc.raw))
			got := review37VerdictOf(t, "Validate("+tc.raw+")", err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate(%s), MaxStringBytes 4, AllowControlChars %v (-want +got):\n%s", tc.raw, tc.ctrl, diff)
			}
		})
	}
}

// Control characters: C0 except tab, line feed and carriage return, DEL
// and the C1 controls (U+0080 to U+009F) are refused in values and in
// names, wherever they stand in the string; a space, U+00A0 and other text
// pass. AllowControlChars lets them all through. Both paths must agree, so
// that whether a tool's schema is in the fast subset never changes what
// reaches the handler (a log or terminal downstream may act on controls).
func TestReview37ControlCharacters(t *testing.T) {
	const props = `{"type":"object","properties":{"s":{"type":"string"}}`
	for _, tc := range []struct {
		name, text string // text: JSON string content
		refused    bool
	}{
		{"plain", `abc`, false},
		{"space", ` `, false},
		{"tab_lf_cr", `\t\n\r`, false},
		{"tilde", `~`, false},
		{"latin1_letter", `\u00c0`, false},
		{"nbsp", `\u00a0`, false},
		{"cjk", `日本`, false},
		{"nul", `\u0000`, true},
		{"soh_first", `\u0001abc`, true},
		{"unit_separator_last", `abc\u001f`, true},
		{"escape_middle", `a\u001bb`, true},
		{"del", `\u007f`, true},
		{"c1_first", `\u0080`, true},
		{"c1_last", `\u009f`, true},
		{"c1_after_text", `ab\u0085`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pos := range []struct{ where, raw, msg string }{
				{"value", `{"s":"` + tc.text + `"}`, `argument "s" contains control characters`},
				{"name", `{"` + tc.text + `":1}`, "argument names must be short and free of control characters"},
			} {
				// Lenient: an undeclared name is not refused as unknown.
				opts := &ValidationOptions{Lenient: true}
				for path, v := range map[string]*Validator{
					"fast":      review37Validator(t, props+`}`, opts, true),
					"reference": review37Validator(t, props+review37RefSuffix, opts, false),
				} {
					for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
						call := path + " " + which + "(" + pos.raw + ")"
						_, err := f(json.RawMessage(pos.raw))
						de := review37Refusal(t, call, err)
						if (de != nil) != tc.refused {
							t.Errorf("%s = %v; want refused %v", call, err, tc.refused)
						}
						if de != nil && de.Message != pos.msg {
							t.Errorf("%s: message %q; want %q", call, de.Message, pos.msg)
						}
					}
				}
				allow := review37Validator(t, props+review37RefSuffix, &ValidationOptions{Lenient: true, AllowControlChars: true}, false)
				if _, err := allow.Validate(json.RawMessage(pos.raw)); err != nil {
					t.Errorf("AllowControlChars: Validate(%s) = %v; want nil", pos.raw, err)
				}
			}
		})
	}
}

// details.field is kept up to 256 bytes and left out past that (a cut
// pointer would point elsewhere); the quoted name in the message is cut at
// 64 bytes, at a rune's start, with "…". Both paths give the same refusal.
func TestReview37NameAndFieldBounds(t *testing.T) {
	const props = `{"type":"object","properties":{"a":{}}`
	long := func(n int) string { return strings.Repeat("n", n) }
	for _, tc := range []struct {
		name, key string
		want      review37Verdict
	}{
		{"name_64", long(64), review37Verdict{Message: `unknown argument "` + long(64) + `"`, Field: "/" + long(64)}},
		{"name_65", long(65), review37Verdict{Message: `unknown argument "` + long(64) + `…"`, Field: "/" + long(65)}},
		// 3-byte runes: byte 64 is inside the 22nd rune, cut before it.
		{"name_runes", strings.Repeat("日", 30), review37Verdict{
			Message: `unknown argument "` + strings.Repeat("日", 21) + `…"`, Field: "/" + strings.Repeat("日", 30)}},
		{"field_255", long(255), review37Verdict{Message: `unknown argument "` + long(64) + `…"`, Field: "/" + long(255)}},
		{"field_256", long(256), review37Verdict{Message: `unknown argument "` + long(64) + `…"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"` + tc.key + `":1}`
			for path, v := range map[string]*Validator{
				"fast":      review37Validator(t, props+`}`, nil, true),
				"reference": review37Validator(t, props+review37RefSuffix, nil, false),
			} {
				for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
					call := path + " " + which + "(" + tc.name + ")"
					_, err := f(json.RawMessage(raw))
					got := review37VerdictOf(t, call, err)
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("%s (-want +got):\n%s", call, diff)
					}
				}
			}
		})
	}
}

// The reference path's messages: the bound a value misses is given as
// the schema wrote it (an integer bound as digits, not "1e+06"), the
// first missing required field is named, a keyword without its own
// message is named. The fast path gives the same message where it applies,
// so that a model reads the same correction whichever path ran.
func TestReview37ReferenceMessages(t *testing.T) {
	for _, tc := range []struct {
		name, props, raw string
		fastToo          bool
		want             review37Verdict
	}{
		{"int_maximum", `"n":{"type":"number","maximum":1000000}`, `{"n":2000000}`, true,
			review37Verdict{Message: `argument "n" must be <= 1000000`, Field: "/n"}},
		{"fraction_maximum", `"n":{"type":"number","maximum":2.5}`, `{"n":3}`, true,
			review37Verdict{Message: `argument "n" must be <= 2.5`, Field: "/n"}},
		{"int_exclusive_minimum", `"n":{"type":"number","exclusiveMinimum":10}`, `{"n":10}`, true,
			review37Verdict{Message: `argument "n" must be > 10`, Field: "/n"}},
		{"unique_items", `"l":{"type":"array","uniqueItems":true}`, `{"l":[1,1]}`, false,
			review37Verdict{Message: `argument "l" must not hold the same item twice`, Field: "/l"}},
		{"multiple_of", `"n":{"type":"number","multipleOf":3}`, `{"n":4}`, false,
			review37Verdict{Message: `argument "n" must be a multiple of 3`, Field: "/n"}},
		{"multiple_of_cents", `"n":{"type":"number","multipleOf":0.01}`, `{"n":0.001}`, false,
			review37Verdict{Message: `argument "n" must be a multiple of 0.01`, Field: "/n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := map[string]string{"reference": `{"type":"object","properties":{` + tc.props + `}` + review37RefSuffix}
			if tc.fastToo {
				paths["fast"] = `{"type":"object","properties":{` + tc.props + `}}`
			}
			for path, schema := range paths {
				v := review37Validator(t, schema, nil, path == "fast")
				_, err := v.check(json.RawMessage(tc.raw))
				got := review37VerdictOf(t, path+" check("+tc.raw+")", err)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s check(%s) (-want +got):\n%s", path, tc.raw, diff)
				}
			}
		})
	}
}

// Where one value breaks several rules, or several required fields are
// missing, the reference path names the same problem as the fast path:
// the refusal a model reads must not depend on whether a tool's schema is
// in the fast subset.
func TestReview37PathsNameTheSameProblem(t *testing.T) {
	for _, tc := range []struct{ name, props, required, raw string }{
		{"two_missing", `"a":{"type":"string"},"b":{"type":"string"}`, `["a","b"]`, `{}`},
		{"two_missing_reversed", `"a":{"type":"string"},"b":{"type":"string"}`, `["b","a"]`, `{}`},
		{"length_and_pattern", `"s":{"type":"string","minLength":5,"pattern":"^a"}`, `[]`, `{"s":"b"}`},
		{"pattern_and_enum", `"s":{"type":"string","pattern":"^a","enum":["zz"]}`, `[]`, `{"s":"b"}`},
		{"minimum_and_maximum", `"n":{"type":"integer","minimum":5,"maximum":1}`, `[]`, `{"n":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"type":"object","properties":{` + tc.props + `},"required":` + tc.required
			fast := review37Validator(t, body+`}`, nil, true)
			ref := review37Validator(t, body+review37RefSuffix, nil, false)
			_, ferr := fast.check(json.RawMessage(tc.raw))
			_, rerr := ref.check(json.RawMessage(tc.raw))
			want := review37VerdictOf(t, "fast check("+tc.raw+")", ferr)
			got := review37VerdictOf(t, "reference check("+tc.raw+")", rerr)
			if want.Message == "ok" {
				t.Fatalf("test premise: fast check(%s) accepts", tc.raw)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("check(%s): reference path vs fast path (-fast +reference):\n%s", tc.raw, diff)
			}
		})
	}
}

// Strings inside arrays, at any depth and after good elements, are bounded
// and checked for controls like any other: a list argument must not carry
// what a plain one may not. Both paths give the same refusal.
func TestReview37ArrayElementsChecked(t *testing.T) {
	const props = `{"type":"object","properties":{"l":{"type":"array"}}`
	for _, tc := range []struct {
		name, raw string
		want      review37Verdict
	}{
		{"clean", `{"l":["ab",["cd"],{"k":"ef"}]}`, review37Verdict{Message: "ok"}},
		{"control_second", `{"l":["ok","a\u0001"]}`,
			review37Verdict{Message: `argument "l.1" contains control characters`, Field: "/l/1"}},
		{"long_third", `{"l":["ok","ok","abcde"]}`,
			review37Verdict{Message: `argument "l.2" is longer than 4 bytes`, Field: "/l/2"}},
		{"nested_array", `{"l":["ok",["ok","\u007f"]]}`,
			review37Verdict{Message: `argument "l.1.1" contains control characters`, Field: "/l/1/1"}},
		{"object_in_array", `{"l":["ok",{"k":"\u0085"}]}`,
			review37Verdict{Message: `argument "l.1.k" contains control characters`, Field: "/l/1/k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &ValidationOptions{Lenient: true, MaxStringBytes: 4}
			for path, v := range map[string]*Validator{
				"fast":      review37Validator(t, props+`}`, opts, true),
				"reference": review37Validator(t, props+review37RefSuffix, opts, false),
			} {
				for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
					call := path + " " + which + "(" + tc.raw + ")"
					_, err := f(json.RawMessage(tc.raw))
					got := review37VerdictOf(t, call, err)
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("%s (-want +got):\n%s", call, diff)
					}
				}
			}
		})
	}
}

// ValidateValue takes any decoded value, so a name need not be UTF-8: a
// long name of continuation bytes only has no rune start to cut at, and
// the refusal quotes it as "…" alone (the cut at the last rune start, byte
// 0, even when that byte is a rune start) instead of panicking (a panic
// would end a server that validates values it built itself) or quoting a
// stray byte.
func TestReview37ValidateValueCutsNameWithoutRuneStart(t *testing.T) {
	v := review37Validator(t, `{"type":"object","properties":{"a":{}}}`, nil, true)
	for _, tc := range []struct {
		name string
		key  string
		want review37Verdict
	}{
		{"continuation_bytes_only", strings.Repeat("\x80", 70), review37Verdict{Message: `unknown argument "…"`, Field: "/" + strings.Repeat("\x80", 70)}},
		{"one_rune_start_first", "a" + strings.Repeat("\x80", 70), review37Verdict{Message: `unknown argument "…"`, Field: "/a" + strings.Repeat("\x80", 70)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := map[string]any{tc.key: json.Number("1")}
			err := v.ValidateValue(doc)
			got := review37VerdictOf(t, "ValidateValue", err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateValue(%q: 1) (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}

// A schema must be a JSON object or true: false, another value, or a
// value that does not marshal at all is a configuration error reported at
// compile time (a false schema would refuse every call with a confusing
// message; a nil Validator would crash at the first call). A marshal
// failure keeps its cause for errors.As.
func TestReview37NewValidatorSchemaShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema any
		ok     bool
	}{
		{"object", map[string]any{"type": "object"}, true},
		{"true", true, true},
		{"raw_true", json.RawMessage(`true`), true},
		{"false", false, false},
		{"raw_false", json.RawMessage(` false `), false},
		{"number", 5, false},
		{"string", "object", false},
		{"array", []any{map[string]any{}}, false},
		{"null", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for which, compile := range map[string]func(any) (*Validator, error){
				"NewValidator":       func(s any) (*Validator, error) { return NewValidator(s, nil) },
				"NewOutputValidator": NewOutputValidator,
			} {
				v, err := compile(tc.schema)
				if (err == nil) != tc.ok || (err == nil) != (v != nil) {
					t.Errorf("%s(%#v) = %v, %v; want ok %v", which, tc.schema, v, err, tc.ok)
				}
			}
		})
	}
	_, err := NewValidator(map[string]any{"type": make(chan int)}, nil)
	var ute *json.UnsupportedTypeError
	if !errors.As(err, &ute) {
		t.Errorf("NewValidator(schema holding a chan) = %v; want an error that unwraps to *json.UnsupportedTypeError", err)
	}
}

// MaxStringBytes 0 or negative means 65536 (inclusive), and a positive
// value, 1 included, is used as given: a user who sets a bound of one
// byte gets it, and the default is the documented one.
func TestReview37StringBoundDefaults(t *testing.T) {
	const schema = `{"type":"object","properties":{"s":{"type":"string"}}}`
	for _, tc := range []struct {
		name    string
		max     int
		okLen   int // longest accepted
		wantMsg string
	}{
		{"zero_means_64k", 0, 65536, `argument "s" is longer than 65536 bytes`},
		{"negative_means_64k", -1, 65536, `argument "s" is longer than 65536 bytes`},
		{"one", 1, 1, `argument "s" is longer than 1 bytes`},
		{"two", 2, 2, `argument "s" is longer than 2 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{MaxStringBytes: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
				at := `{"s":"` + strings.Repeat("x", tc.okLen) + `"}`
				if _, err := f(json.RawMessage(at)); err != nil {
					t.Errorf("%s(string of %d bytes), MaxStringBytes %d = %v; want nil", which, tc.okLen, tc.max, err)
				}
				over := `{"s":"` + strings.Repeat("x", tc.okLen+1) + `"}`
				_, err := f(json.RawMessage(over))
				got := review37VerdictOf(t, which, err)
				want := review37Verdict{Message: tc.wantMsg, Field: "/s"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s(string of %d bytes), MaxStringBytes %d (-want +got):\n%s", which, tc.okLen+1, tc.max, diff)
				}
			}
		})
	}
}

// A schema that does not compile is refused by every constructor, the
// lenient and output ones included, where the compile of the schema as
// written is the only check: a nil Validator returned without an error
// would fail on the first call instead of at start-up.
func TestReview37UncompilableSchemaRefused(t *testing.T) {
	const schema = `{"type":"nope"}`
	for name, newV := range map[string]func() (*Validator, error){
		"strict": func() (*Validator, error) { return NewValidator(json.RawMessage(schema), nil) },
		"lenient": func() (*Validator, error) {
			return NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true})
		},
		"output": func() (*Validator, error) { return NewOutputValidator(json.RawMessage(schema)) },
	} {
		t.Run(name, func(t *testing.T) {
			if v, err := newV(); err == nil || v != nil {
				t.Errorf("%s validator of %s = %v, %v; want nil and an error", name, schema, v, err)
			}
		})
	}
}

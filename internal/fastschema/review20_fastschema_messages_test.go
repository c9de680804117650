package fastschema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// review20Paths compiles src on the fast path and as mcpguard's lenient
// Validator (whose Validate always runs the reference pipeline), with
// strings bounded at 64 bytes.
func review20Paths(t *testing.T, src string) (*fastschema.Schema, *mcpguard.Validator) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	fast, ok := fastschema.Compile(doc, fastschema.Options{MaxStringBytes: 64})
	if !ok {
		t.Fatalf("fastschema.Compile(%s) refused", src)
	}
	v, err := mcpguard.NewValidator(json.RawMessage(src), &mcpguard.ValidationOptions{Lenient: true, MaxStringBytes: 64})
	if err != nil {
		t.Fatalf("NewValidator(%s): %v", src, err)
	}
	return fast, v
}

// TestReview20SameMessage: documents with one problem each (or several
// on one value, which v6 checks in a fixed order) get the reference's
// message and pointer from the fast path, word for word: the type names
// in v6's order, the document itself called "value", the key "" named as
// any other, a bound written as the reference prints it, one message for
// a bad member name, and the keywords of one value in v6's order (type,
// const, enum, format, then minLength, maxLength, pattern; minimum,
// maximum, exclusiveMinimum, exclusiveMaximum; minProperties,
// maxProperties, required).
func TestReview20SameMessage(t *testing.T) {
	for _, tc := range []struct {
		name, schema, in, want string
	}{
		{"type_order", `{"properties":{"v":{"type":["string","null","integer"]}}}`, `{"v":true}`, `argument "v" must be null or integer or string`},
		{"type_order_all", `{"properties":{"v":{"type":["object","array","string","number","boolean","null"]}}}`, `{"v":1}`, ``},
		{"type_order_object_last", `{"properties":{"v":{"type":["object","boolean"]}}}`, `{"v":1}`, `argument "v" must be boolean or object`},
		{"root_type", `{"type":["string","null"]}`, `{}`, `value must be null or string`},
		{"root_enum", `{"enum":[1,"a"]}`, `{}`, `value is not one of the allowed values`},
		{"root_never", `{"properties":{"v":false}}`, `{"v":1}`, `argument "v" is not allowed`},
		{"min_items", `{"properties":{"v":{"minItems":2}}}`, `{"v":[1]}`, `argument "v" must have at least 2 items`},
		{"max_items", `{"properties":{"v":{"maxItems":0}}}`, `{"v":[1]}`, `argument "v" must have at most 0 items`},
		{"empty_key_array", `{"properties":{"":{"items":{"type":"string"}}}}`, `{"":[1]}`, `argument ".0" must be string`},
		{"empty_key_required", `{"required":[""]}`, `{}`, `missing required argument ""`},
		{"empty_key_unknown", `{"additionalProperties":false}`, `{"":1}`, `unknown argument ""`},
		{"empty_key_type", `{"properties":{"":{"type":"string"}}}`, `{"":1}`, `argument "" must be string`},
		{"empty_key_nested", `{"properties":{"":{"properties":{"":{"type":"string"}}}}}`, `{"":{"":1}}`, `argument "." must be string`},
		{"empty_key_too_long", `{}`, `{"":"` + strings.Repeat("x", 65) + `"}`, `argument "" is longer than 64 bytes`},
		{"empty_key_control", `{}`, `{"":"\u0001"}`, `argument "" contains control characters`},
		{"empty_key_number", `{}`, `{"":1e401}`, `argument "" is a number of more than 128 characters or with an exponent beyond ±400`},
		{"bound_negative_zero", `{"properties":{"v":{"exclusiveMaximum":-0}}}`, `{"v":1}`, `argument "v" must be < 0`},
		{"bound_exponent", `{"properties":{"v":{"maximum":1e2}}}`, `{"v":101}`, `argument "v" must be <= 100`},
		{"bound_upper_exponent", `{"properties":{"v":{"minimum":1E+2}}}`, `{"v":99}`, `argument "v" must be >= 100`},
		{"bound_trailing_zeros", `{"properties":{"v":{"maximum":2.50}}}`, `{"v":3}`, `argument "v" must be <= 2.5`},
		{"bound_integer_as_decimal", `{"properties":{"v":{"minimum":2.0}}}`, `{"v":1}`, `argument "v" must be >= 2`},
		{"bound_tiny", `{"properties":{"v":{"exclusiveMinimum":1e-400}}}`, `{"v":0}`, `argument "v" must be > 0`},
		{"bound_float", `{"properties":{"v":{"maximum":0.30000000000000004}}}`, `{"v":1}`, `argument "v" must be <= 0.30000000000000004`},
		{"bound_long_fraction", `{"properties":{"v":{"maximum":0.1000000000000000000001}}}`, `{"v":1}`, `argument "v" must be <= 0.1`},
		{"bound_huge", `{"properties":{"v":{"maximum":1e30}}}`, `{"v":1e31}`, `argument "v" must be <= 1000000000000000000000000000000`},
		{"key_control", `{}`, `{"a":{"b\u0001":1}}`, `argument names must be short and free of control characters`},
		{"key_too_long", `{}`, `{"a":{"` + strings.Repeat("k", 65) + `":1}}`, `argument names must be short and free of control characters`},
		{"root_key_control", `{}`, `{"\u007f":1}`, `argument names must be short and free of control characters`},
		{"enum_before_length", `{"properties":{"v":{"enum":["abc"],"maxLength":1}}}`, `{"v":"xyz"}`, `argument "v" is not one of the allowed values`},
		{"const_before_min_length", `{"properties":{"v":{"const":"abc","minLength":5}}}`, `{"v":"x"}`, `argument "v" is not one of the allowed values`},
		{"format_before_length", `{"properties":{"v":{"format":"date","maxLength":3}}}`, `{"v":"xyzw"}`, `argument "v" must be a valid date`},
		{"min_length_before_pattern", `{"properties":{"v":{"pattern":"^a","minLength":3}}}`, `{"v":"x"}`, `argument "v" must be at least 3 characters`},
		{"minimum_before_exclusive", `{"properties":{"v":{"exclusiveMinimum":5,"minimum":3}}}`, `{"v":1}`, `argument "v" must be >= 3`},
		{"maximum_before_exclusive", `{"properties":{"v":{"exclusiveMaximum":1,"maximum":3}}}`, `{"v":5}`, `argument "v" must be <= 3`},
		{"minimum_before_maximum", `{"properties":{"v":{"maximum":0,"minimum":3}}}`, `{"v":1}`, `argument "v" must be >= 3`},
		{"exclusive_min_before_max", `{"properties":{"v":{"exclusiveMaximum":0,"exclusiveMinimum":3}}}`, `{"v":1}`, `argument "v" must be > 3`},
		{"min_properties_before_required", `{"required":["a"],"minProperties":2}`, `{"b":1}`, `value must have at least 2 properties`},
		{"max_properties_before_required", `{"required":["a"],"maxProperties":1}`, `{"b":1,"c":2}`, `value must have at most 1 properties`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, v := review20Paths(t, tc.schema)
			_, ref := v.Validate(json.RawMessage(tc.in))
			wantMsg, wantPtr := "", ""
			if ref != nil {
				var de *mcpguard.DenialError
				if !errors.As(ref, &de) {
					t.Fatalf("reference Validate(%s) = %v", tc.in, ref)
				}
				wantMsg = de.Message
				wantPtr, _ = de.Details["field"].(string)
			}
			if wantMsg != tc.want {
				t.Fatalf("reference Validate(%s) = %q; the table says %q", tc.in, wantMsg, tc.want)
			}
			gotMsg, gotPtr := "", ""
			if e := fast.Validate([]byte(tc.in)); e != nil {
				gotMsg, gotPtr = e.Message, e.Pointer
			}
			if gotMsg != wantMsg || gotPtr != wantPtr {
				t.Errorf("fast Validate(%s) = %q at %q; reference %q at %q", tc.in, gotMsg, gotPtr, wantMsg, wantPtr)
			}
		})
	}
}

// TestReview20BoundText: a bound of any spelling is printed in the
// fast path's message as the reference prints it (an integer in full,
// anything else as the nearest float64), for each of the four keywords.
func TestReview20BoundText(t *testing.T) {
	lits := []string{
		"0", "-0", "0.0", "-0.0", "0e5", "1", "1.0", "1e0", "10e-1", "-1", "-1.50", "2.5", "0.1", "0.3", "1e-1", "1E+2", "1e2",
		"100", "0.30000000000000004", "9007199254740993", "123456789012345678901234567890", "1e30", "1.5e30", "1e-20",
		"1e-400", "-1e-400", "1e400", "-1e400", "1.7976931348623157e308", "1.8e308", "4.9e-324", "2e-324", "0.1000000000000000000001",
		"12345678901234567.5", "-0.000001", "1e21", "1.25e-7", "33.333333333333333333",
	}
	for _, lit := range lits {
		for kw, docs := range map[string][2]string{
			"minimum": {"-2e400", ""}, "exclusiveMinimum": {"-2e400", lit},
			"maximum": {"2e400", ""}, "exclusiveMaximum": {"2e400", lit},
		} {
			fast, v := review20Paths(t, `{"properties":{"v":{"`+kw+`":`+lit+`}}}`)
			for _, d := range docs {
				if d == "" {
					continue
				}
				in := `{"v":` + d + `}`
				_, ref := v.Validate(json.RawMessage(in))
				var de *mcpguard.DenialError
				if !errors.As(ref, &de) {
					t.Fatalf("reference Validate(%s) against %s %s = %v, want a refusal", in, kw, lit, ref)
				}
				e := fast.Validate([]byte(in))
				if e == nil || e.Message != de.Message {
					t.Errorf("%s %s: fast Validate(%s) = %v; reference %q", kw, lit, in, e, de.Message)
				}
			}
		}
	}
}

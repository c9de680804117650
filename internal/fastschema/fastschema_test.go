package fastschema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustCompile(t testing.TB, src string, opts Options) *Schema {
	t.Helper()
	s, ok := Compile(decodeSchema(t, src), opts)
	if !ok {
		t.Fatalf("Compile(%s) refused", src)
	}
	return s
}

type errView struct{ Pointer, Message string }

func view(e *Error) *errView {
	if e == nil {
		return nil
	}
	return &errView{e.Pointer, e.Message}
}

func TestValidateMessages(t *testing.T) {
	const refundOK = `{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`
	tests := []struct {
		name   string
		schema string
		in     string
		want   *errView
	}{
		{"valid", refundSchema, refundOK, nil},
		{"valid_with_white_space", refundSchema, " \n" + refundOK + "\t\r\n", nil},
		{"exclusive_minimum", refundSchema, `{"customer_id":"CUST-00001","amount":0,"reason":"damaged on arrival"}`,
			&errView{"/amount", `argument "amount" must be > 0`}},
		{"negative_zero", refundSchema, `{"customer_id":"CUST-00001","amount":-0.0,"reason":"damaged on arrival"}`,
			&errView{"/amount", `argument "amount" must be > 0`}},
		{"maximum", refundSchema, `{"customer_id":"CUST-00001","amount":10000.0000000000000000001,"reason":"damaged on arrival"}`,
			&errView{"/amount", `argument "amount" must be <= 10000`}},
		{"maximum_exact", refundSchema, `{"customer_id":"CUST-00001","amount":1.0000e4,"reason":"damaged on arrival"}`, nil},
		{"tiny_positive", refundSchema, `{"customer_id":"CUST-00001","amount":1e-400,"reason":"damaged on arrival"}`, nil},
		{"unparsable_exponent", refundSchema, `{"customer_id":"CUST-00001","amount":1e1000001,"reason":"damaged on arrival"}`,
			&errView{"/amount", `argument "amount" is a number of more than 128 characters or with an exponent beyond ±400`}},
		{"number_as_string", refundSchema, `{"customer_id":"CUST-00001","amount":"12.5","reason":"damaged on arrival"}`,
			&errView{"/amount", `argument "amount" must be number`}},
		{"bool_as_number", refundSchema, `{"customer_id":"CUST-00001","amount":true,"reason":"damaged on arrival"}`,
			&errView{"/amount", `argument "amount" must be number`}},
		{"unknown", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"damaged on arrival","admin":true}`,
			&errView{"/admin", `unknown argument "admin"`}},
		{"missing_required_in_order", refundSchema, `{"amount":1}`,
			&errView{"/customer_id", `missing required argument "customer_id"`}},
		{"empty_is_empty_object", refundSchema, ``, &errView{"/customer_id", `missing required argument "customer_id"`}},
		{"null_is_empty_object", refundSchema, ` null `, &errView{"/customer_id", `missing required argument "customer_id"`}},
		{"pattern", refundSchema, `{"customer_id":"SECRET-1","amount":1,"reason":"damaged on arrival"}`,
			&errView{"/customer_id", `argument "customer_id" must match the pattern ^CUST-[A-Z0-9]{5}$`}},
		{"pattern_on_unescaped", refundSchema, `{"customer_id":"\u0043UST-0000\u0031","amount":1,"reason":"damaged on arrival"}`, nil},
		{"min_length", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"SECRET"}`,
			&errView{"/reason", `argument "reason" must be at least 10 characters`}},
		{"min_length_counts_code_points", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"ééééééééé"}`,
			&errView{"/reason", `argument "reason" must be at least 10 characters`}},
		{"max_length", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"` + strings.Repeat("x", 51) + `"}`,
			&errView{"/reason", `argument "reason" must be at most 50 characters`}},
		{"control", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"SECRET\u0000 ok ok ok"}`,
			&errView{"/reason", `argument "reason" contains control characters`}},
		{"c1_control", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"SECRET\u0085 ok ok ok"}`,
			&errView{"/reason", `argument "reason" contains control characters`}},
		{"too_long", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"` + strings.Repeat("é", 33) + `"}`,
			&errView{"/reason", `argument "reason" is longer than 64 bytes`}},
		{"key_control", openSchema, `{"a\u0001":1}`, &errView{"", `argument names must be short and free of control characters`}},
		{"key_too_long", openSchema, `{"a":{"` + strings.Repeat("k", 65) + `":1}}`, &errView{"/a", `argument names must be short and free of control characters`}},
		{"duplicate", refundSchema, `{"customer_id":"CUST-00001","amount":1,"reason":"damaged on arrival","amount":2}`,
			&errView{"/amount", `argument "amount" appears twice`}},
		{"escaped_duplicate", openSchema, `{"a":{"b":1,"\u0062":2}}`, &errView{"/a/b", `argument "a.b" appears twice`}},
		{"duplicate_reported_before_schema", refundSchema, `{"amount":"x","amount":2}`, &errView{"/amount", `argument "amount" appears twice`}},
		{"invalid_json", refundSchema, `{"customer_id":"CUST-00001",}`, &errView{"", "arguments are not valid JSON"}},
		{"invalid_json_after_schema_error", refundSchema, `{"admin":1,`, &errView{"", "arguments are not valid JSON"}},
		{"trailing_data", refundSchema, refundOK + ` {}`, &errView{"", "arguments have trailing data"}},
		{"not_object", refundSchema, `[1]`, &errView{"", "arguments must be a JSON object"}},
		{"not_object_string", refundSchema, `"SECRET"`, &errView{"", "arguments must be a JSON object"}},
		{"nested_format", noteSchema, `{"title":"t","meta":{"due":"2023-02-29"}}`,
			&errView{"/meta/due", `argument "meta.due" must be a valid date`}},
		{"nested_required", noteSchema, `{"title":"t","meta":{}}`, &errView{"/meta/due", `missing required argument "meta.due"`}},
		{"array_item", noteSchema, `{"title":"t","tags":["2024-01-01","SECRET"]}`,
			&errView{"/tags/1", `argument "tags.1" must be a valid date`}},
		{"min_items", noteSchema, `{"title":"t","tags":[]}`, &errView{"/tags", `argument "tags" must have at least 1 items`}},
		{"max_items", noteSchema, `{"title":"t","tags":["2024-01-01","2024-01-01","2024-01-01","2024-01-01"]}`,
			&errView{"/tags", `argument "tags" must have at most 3 items`}},
		{"integer", noteSchema, `{"title":"t","meta":{"due":"2024-01-01","priority":1.5}}`,
			&errView{"/meta/priority", `argument "meta.priority" must be integer`}},
		{"integer_1_0", noteSchema, `{"title":"t","meta":{"due":"2024-01-01","priority":1.0}}`, nil},
		{"integer_exponent", noteSchema, `{"title":"t","meta":{"due":"2024-01-01","priority":0.5e1}}`, nil},
		{"integer_bound", noteSchema, `{"title":"t","meta":{"due":"2024-01-01","priority":6}}`,
			&errView{"/meta/priority", `argument "meta.priority" must be <= 5`}},
		{"enum", enumSchema, `{"status":"SECRET"}`, &errView{"/status", `argument "status" is not one of the allowed values`}},
		{"enum_number_by_value", enumSchema, `{"level":35e-1,"n":1e2}`, nil},
		{"enum_type_first", enumSchema, `{"n":1.5}`, &errView{"/n", `argument "n" must be null or integer`}},
		{"const", enumSchema, `{"mode":"Dry"}`, &errView{"/mode", `argument "mode" is not one of the allowed values`}},
		{"enum_container", enumSchema, `{"level":[1]}`, &errView{"/level", `argument "level" is not one of the allowed values`}},
		{"false_schema", falseSchema, `{"x":1}`, &errView{"/x", `argument "x" is not allowed`}},
		{"min_properties", falseSchema, `{}`, &errView{"", `value must have at least 1 properties`}},
		{"max_properties", falseSchema, `{"a":1,"b":2,"c":3,"d":4}`, &errView{"", `value must have at most 3 properties`}},
		{"pointer_escaping", requiredOnlySchema, `{"a":"x","b":1,"c":{"d/e~f":{"g":[true,{"h":1,"h":2}]}}}`,
			&errView{"/c/d~1e~0f/g/1/h", `argument "c.d/e~f.g.1.h" appears twice`}},
		{"too_deep", openSchema, `{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
			&errView{"", "arguments are nested too deeply"}},
		{"deep_enough", openSchema, `{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`, nil},
		{"true_schema", trueSchema, `{"anything":[1,"x",{"y":null}]}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, tc.schema, testOpts)
			got := s.Validate([]byte(tc.in))
			if diff := cmp.Diff(tc.want, view(got)); diff != "" {
				t.Errorf("Validate(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
			if got != nil && (strings.Contains(got.Message, "SECRET") || strings.Contains(got.Pointer, "SECRET")) {
				t.Errorf("Validate(%q) = %q: quotes the value", tc.in, got.Message)
			}
			if got != nil && got.Error() != got.Message {
				t.Errorf("Error() = %q, want the message", got.Error())
			}
			// Every case is also a differential probe.
			agree(t, s, newOracle(t, decodeSchema(t, tc.schema), testOpts), []byte(tc.in))
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		opts   Options
	}{
		{"ref", `{"$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, testOpts},
		{"all_of", `{"allOf":[{"type":"object"}]}`, testOpts},
		{"any_of", `{"anyOf":[{"type":"object"}]}`, testOpts},
		{"not", `{"not":{"type":"string"}}`, testOpts},
		{"additional_properties_schema", `{"additionalProperties":{"type":"string"}}`, testOpts},
		{"pattern_properties", `{"patternProperties":{"^a":{"type":"string"}}}`, testOpts},
		{"unknown_format", `{"properties":{"d":{"format":"duration"}}}`, testOpts},
		{"multiple_of", `{"properties":{"n":{"multipleOf":2}}}`, testOpts},
		{"enum_of_objects", `{"properties":{"n":{"enum":[{"a":1}]}}}`, testOpts},
		{"const_array", `{"properties":{"n":{"const":[1]}}}`, testOpts},
		{"unique_items", `{"properties":{"n":{"uniqueItems":true}}}`, testOpts},
		{"prefix_items", `{"properties":{"n":{"prefixItems":[true]}}}`, testOpts},
		{"draft_07", `{"$schema":"http://json-schema.org/draft-07/schema#"}`, testOpts},
		{"nested_schema_keyword", `{"properties":{"n":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`, testOpts},
		{"invalid_for_v6", `{"properties":{"n":{"minLength":-1}}}`, testOpts},
		{"bad_type_for_v6", `{"type":"integer-ish"}`, testOpts},
		{"bad_regexp", `{"properties":{"n":{"pattern":"(?<x"}}}`, testOpts},
		{"huge_bound", `{"properties":{"n":{"maximum":1e1000001}}}`, testOpts},
		{"no_string_limit", `{"type":"object"}`, Options{}},
		{"not_a_schema", `"object"`, testOpts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if s, ok := Compile(decodeSchema(t, tc.schema), tc.opts); ok || s != nil {
				t.Errorf("Compile(%s) = %v, %v; want nil, false", tc.schema, s, ok)
			}
		})
	}
}

func TestCompileAcceptsAnnotations(t *testing.T) {
	src := `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d","$comment":"c",
		"type":"object","properties":{"a":{"type":"string","default":"x","examples":["y"],"readOnly":false,"writeOnly":false,"deprecated":true}}}`
	s := mustCompile(t, src, testOpts)
	if e := s.Validate([]byte(`{"a":"z"}`)); e != nil {
		t.Fatalf("Validate = %v", e)
	}
}

func TestValidateConcurrent(t *testing.T) {
	s := mustCompile(t, noteSchema, testOpts)
	good := []byte(`{"title":"t","meta":{"due":"2024-02-29"},"tags":["2024-01-01"]}`)
	bad := []byte(`{"title":"t","meta":{"due":"2024-02-30"}}`)
	done := make(chan bool)
	for g := range 4 {
		go func() {
			for range 200 {
				if (s.Validate(good) == nil) != true || (s.Validate(bad) == nil) != false {
					done <- false
					return
				}
			}
			done <- g >= 0
		}()
	}
	for range 4 {
		if !<-done {
			t.Fatal("a concurrent Validate gave a wrong verdict")
		}
	}
}

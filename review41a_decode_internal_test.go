package mcpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review41aSchema decodes a JSON schema for the tests of the decode checks.
func review41aSchema(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("schema %s: %v", s, err)
	}
	return m
}

// beyondIntegers draws the line where the widest Go integer type a schema
// stands for ends: an int64's two ends (the wrapper's float64 reads
// 9223372036854775807 as 2^63, past it; -2^63 fits), a uint64's when the
// minimum is not negative (0 included, as the go-sdk writes for a uint64),
// and nothing but "integer" (or "integer" and "null") counts.
func TestReview41aBeyondIntegers(t *testing.T) {
	const (
		integer   = `{"type":"integer"}`
		unsigned  = `{"type":"integer","minimum":0}`
		negMin    = `{"type":"integer","minimum":-1}`
		textMin   = `{"type":"integer","minimum":"0"}`
		orNull    = `{"type":["integer","null"]}`
		number    = `{"type":"number"}`
		untyped   = `{}`
		twoTo63   = float64(1 << 63)
		twoTo64   = float64(1 << 64)
		between   = float64(1e19) // 2^63 < 1e19 < 2^64
		bigNumber = float64(1e30)
	)
	for _, tc := range []struct {
		name   string
		v      any
		schema string
		want   bool
	}{
		{"int64_max_read_as_float", float64(9223372036854775807), integer, true},
		{"two_to_63", twoTo63, integer, true},
		{"int64_min_fits", -twoTo63, integer, false},
		{"below_int64_min", -between, integer, true},
		{"between_without_minimum", between, integer, true},
		{"between_with_negative_minimum", between, negMin, true},
		{"between_minimum_not_a_number", between, textMin, true},
		{"between_unsigned_fits", between, unsigned, false},
		{"two_to_64_unsigned", twoTo64, unsigned, true},
		{"below_two_to_64_unsigned", float64(18446744073709549568), unsigned, false},
		{"integer_or_null", bigNumber, orNull, true},
		{"small_integer", float64(5), integer, false},
		{"fraction", 1.5, integer, false},
		{"number_schema", bigNumber, number, false},
		{"no_type", bigNumber, untyped, false},
		{"string_value", "1e30", integer, false},
		{"nil_value", nil, integer, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := beyondIntegers(tc.v, review41aSchema(t, tc.schema)); got != tc.want {
				t.Errorf("beyondIntegers(%v, %s) = %v, want %v", tc.v, tc.schema, got, tc.want)
			}
		})
	}
}

// onlyInteger accepts "integer" alone or with "null", in either order,
// and nothing else.
func TestReview41aOnlyInteger(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    any
		want bool
	}{
		{"integer", "integer", true},
		{"number", "number", false},
		{"integer_null", []any{"integer", "null"}, true},
		{"null_integer", []any{"null", "integer"}, true},
		{"integer_alone_in_list", []any{"integer"}, true},
		{"null_alone", []any{"null"}, false},
		{"empty_list", []any{}, false},
		{"integer_string", []any{"integer", "string"}, false},
		{"string_integer", []any{"string", "integer"}, false},
		{"typed_list", []string{"integer"}, false},
		{"absent", nil, false},
		{"not_a_type", float64(1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyInteger(tc.t); got != tc.want {
				t.Errorf("onlyInteger(%#v) = %v, want %v", tc.t, got, tc.want)
			}
		})
	}
}

// integerKind sees through pointers to Go's integer types, and no further.
func TestReview41aIntegerKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    reflect.Type
		want bool
	}{
		{"int", reflect.TypeFor[int](), true},
		{"int8", reflect.TypeFor[int8](), true},
		{"int16", reflect.TypeFor[int16](), true},
		{"int32", reflect.TypeFor[int32](), true},
		{"int64", reflect.TypeFor[int64](), true},
		{"uint", reflect.TypeFor[uint](), true},
		{"uint8", reflect.TypeFor[uint8](), true},
		{"uint16", reflect.TypeFor[uint16](), true},
		{"uint32", reflect.TypeFor[uint32](), true},
		{"uint64", reflect.TypeFor[uint64](), true},
		{"uintptr", reflect.TypeFor[uintptr](), true},
		{"pointer_to_int", reflect.TypeFor[*int](), true},
		{"pointer_to_pointer_to_uint8", reflect.TypeFor[**uint8](), true},
		{"float64", reflect.TypeFor[float64](), false},
		{"pointer_to_float32", reflect.TypeFor[*float32](), false},
		{"string", reflect.TypeFor[string](), false},
		{"slice_of_int", reflect.TypeFor[[]int](), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := integerKind(tc.t); got != tc.want {
				t.Errorf("integerKind(%v) = %v, want %v", tc.t, got, tc.want)
			}
		})
	}
}

// undecodable confirms a decode failure only where the arguments hold, at
// the error's field read every way its dots allow, a number no Go integer
// type the schema stands for there can hold; anything else (a fitting
// value, a field that leads nowhere, an error of a non-integer type) is
// the handler's own error.
func TestReview41aUndecodable(t *testing.T) {
	const (
		object = `{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"}}}`
		dotted = `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer"}}},"a.b":{"type":"integer"}}}`
		byName = `{"type":"object","properties":{"by_name":{"type":"object","additionalProperties":{"type":"integer"}}}}`
		ids    = `{"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer"}}}}`
		items  = `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}}}}}}`
		mixed  = `{"type":"object","properties":{"n":{"type":"number"}},"additionalProperties":{"type":"integer"}}`
		bare   = `{"type":"object"}`
		anyKey = `{"type":"object","additionalProperties":{"type":"integer"}}`
	)
	intType := reflect.TypeFor[int]()
	for _, tc := range []struct {
		name, raw, schema, field string
		typ                      reflect.Type
		want                     bool
	}{
		{"top_level", `{"n":1e30}`, object, "n", intType, true},
		{"pointer_type", `{"n":1e30}`, object, "n", reflect.TypeFor[*int64](), true},
		{"fits", `{"n":1}`, object, "n", intType, false},
		{"float_type_error", `{"n":1e30}`, object, "n", reflect.TypeFor[float64](), false},
		{"number_property", `{"x":1e30}`, object, "x", intType, false},
		{"unparsable_arguments", `{"n":1e30`, object, "n", intType, false},
		{"no_arguments", ``, object, "n", intType, false},
		{"field_absent", `{"m":1e30}`, object, "n", intType, false},
		{"no_field", `{"":1e30}`, anyKey, "", intType, false},
		{"path_past_a_number", `{"n":1e30}`, object, "n.x", intType, false},
		{"dotted_key", `{"a.b":1e30}`, dotted, "a.b", intType, true},
		{"dotted_key_after_fitting_object", `{"a":{"b":1},"a.b":1e30}`, dotted, "a.b", intType, true},
		{"nested_object", `{"a":{"b":1e30},"a.b":1}`, dotted, "a.b", intType, true},
		{"map_key_with_dot", `{"by_name":{"a.b":1e30}}`, byName, "by_name.a.b", intType, true},
		{"map_key_fits", `{"by_name":{"a.b":1}}`, byName, "by_name.a.b", intType, false},
		{"array_first", `{"ids":[1e30]}`, ids, "ids.0", intType, true},
		{"array_second", `{"ids":[1,1e30]}`, ids, "ids.1", intType, true},
		{"array_index_fits", `{"ids":[1e30,1]}`, ids, "ids.1", intType, false},
		{"array_index_past_end", `{"ids":[1e30]}`, ids, "ids.1", intType, false},
		{"array_index_negative", `{"ids":[1e30]}`, ids, "ids.-1", intType, false},
		{"array_index_not_a_number", `{"ids":[1e30]}`, ids, "ids.x", intType, false},
		{"array_of_objects", `{"items":[{"n":1},{"n":-1e19}]}`, items, "items.1.n", intType, true},
		{"array_of_objects_fits", `{"items":[{"n":-1e19},{"n":1}]}`, items, "items.1.n", intType, false},
		{"property_before_additional", `{"n":1e30}`, mixed, "n", intType, false},
		{"additional_property", `{"m":1e30}`, mixed, "m", intType, true},
		{"schema_says_nothing", `{"n":1e30}`, bare, "n", intType, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &json.UnmarshalTypeError{Value: "number", Type: tc.typ, Field: tc.field}
			if got := undecodable(json.RawMessage(tc.raw), review41aSchema(t, tc.schema), e); got != tc.want {
				t.Errorf("undecodable(%s, %s, field %q type %v) = %v, want %v", tc.raw, tc.schema, tc.field, tc.typ, got, tc.want)
			}
		})
	}
	// No schema, or one that cannot be read, confirms nothing.
	e := &json.UnmarshalTypeError{Value: "number", Type: intType, Field: "n"}
	for _, schema := range []any{nil, map[string]any{"type": "object", "x": make(chan int)}} {
		if undecodable(json.RawMessage(`{"n":1e30}`), schema, e) {
			t.Errorf("undecodable with schema %v = true, want false", schema)
		}
	}
}

// sdkToolError takes back the Go error a typed tool's result carries, and
// marks as the wrapper's own only the errors shaped as its are.
func TestReview41aSDKToolError(t *testing.T) {
	type outcome struct {
		SameResult bool   // the result given (not nil) is returned
		NilResult  bool   // no result is returned
		Err        string // the error's text, "" for none
		SameErr    bool   // the error is the one given or set, unwrapped
		Code       Code   // an *sdkCheck's code
		Decode     bool   // an *sdkCheck's decode is the error set
		Args       bool   // an *sdkCheck's args
	}
	errored := func(err error) *mcp.CallToolResult {
		r := &mcp.CallToolResult{}
		r.SetError(err)
		return r
	}
	ute := &json.UnmarshalTypeError{Value: "number 1e30", Type: reflect.TypeFor[int](), Field: "n"}
	withOffset := &json.UnmarshalTypeError{Value: "number 1e30", Type: reflect.TypeFor[int](), Field: "n", Offset: 7}
	refusal := errors.New(sdkArgsPrefix + "missing properties")
	wrapped := fmt.Errorf(sdkArgsPrefix+"%w", io.EOF)
	plain := errors.New("boom")
	denial := Deny(CodeForbidden, "no")
	output := errors.New("validating tool output: bad")
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		err  error
		want outcome
	}{
		{"output_refused", nil, output, outcome{NilResult: true, Err: output.Error(), Code: CodeInvalidResponse}},
		{"handler_error", nil, plain, outcome{NilResult: true, Err: "boom", SameErr: true}},
		{"nothing", nil, nil, outcome{NilResult: true}},
		{"success", review41aTextResult("ok"), nil, outcome{SameResult: true}},
		{"error_result_without_go_error", &mcp.CallToolResult{IsError: true}, nil, outcome{SameResult: true}},
		{"decode_error", errored(ute), nil, outcome{NilResult: true, Err: ute.Error(), Code: CodeInvalidArguments, Decode: true}},
		{"decode_error_with_offset", errored(withOffset), nil, outcome{NilResult: true, Err: withOffset.Error(), SameErr: true}},
		{"arguments_refused", errored(refusal), nil, outcome{NilResult: true, Err: refusal.Error(), Code: CodeInvalidArguments, Args: true}},
		{"arguments_text_wrapping", errored(wrapped), nil, outcome{NilResult: true, Err: wrapped.Error(), SameErr: true}},
		{"set_error", errored(plain), nil, outcome{NilResult: true, Err: "boom", SameErr: true}},
		{"set_denial", errored(denial), nil, outcome{NilResult: true, Err: denial.Error(), SameErr: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sdkToolError(tc.res, tc.err)
			got := outcome{SameResult: tc.res != nil && res == tc.res, NilResult: res == nil}
			if err != nil {
				got.Err = err.Error()
				var sc *sdkCheck
				if errors.As(err, &sc) {
					got.Code, got.Args = sc.code, sc.args
					got.Decode = sc.decode != nil && sc.decode == ute && errors.Is(err, ute)
				} else {
					set := tc.err
					if tc.res != nil {
						set = tc.res.GetError()
					}
					got.SameErr = err == set
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sdkToolError (-want +got):\n%s", diff)
			}
		})
	}
}

func review41aTextResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// notFoundWire says what the go-sdk says of a tool it does not have, with
// the configured code, -32602 by default; wireError finds a JSON-RPC error
// anywhere in a chain.
func TestReview41aNotFoundWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int64
		want *jsonrpc.Error
	}{
		{"default_code", 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "a \"b\""`}},
		{"configured_code", jsonrpc.CodeMethodNotFound, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: `unknown tool "a \"b\""`}},
		{"code_one", 1, &jsonrpc.Error{Code: 1, Message: `unknown tool "a \"b\""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := notFoundWire(`a "b"`, tc.code)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("notFoundWire (-want +got):\n%s", diff)
			}
			if we := wireError(fmt.Errorf("call: %w", got)); we != got {
				t.Errorf("wireError of a wrapped %v = %v, want it", got, we)
			}
		})
	}
	if we := wireError(errors.New("plain")); we != nil {
		t.Errorf("wireError of a plain error = %v, want nil", we)
	}
}

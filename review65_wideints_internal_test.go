package mcpguard

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestReview65WideIntegers: which integers a typed tool's handler would
// get rounded (go-sdk v1.8.0's wrapper reads numbers as float64s), and
// where the schema makes them count (wideints.go).
func TestReview65WideIntegers(t *testing.T) {
	for _, tc := range []struct {
		lit      string
		unsigned bool
		want     bool
	}{
		{"12345678901234567", false, true},
		{"-12345678901234567", false, true},
		{"9007199254740993", false, true},        // 2^53+1
		{"9007199254740992", false, false},       // 2^53
		{"9007199254740994", false, false},       // 2^53+2: a float64
		{"9223372036854775807", false, false},    // 2^63 as a float64: beyond an int64, the wrapper refuses it
		{"9223372036854775807", true, true},      // but a uint64 gets 9223372036854775808
		{"18446744073709551615", true, false},    // 2^64: beyond a uint64
		{"-9223372036854775807", false, true},    // -2^63: an int64
		{"1e16", false, false},                   // 10^16 = 2^16 * 5^16: a float64
		{"1e18", false, false},                   // exact too
		{"1e23", false, false},                   // beyond an int64
		{"1234567890123456789e-1", false, false}, // not an integer: its Go type's to refuse
		{"12345678901234567e0", false, true},
		{"1234567890123456.5", false, false},
		{"0.1", false, false},
		{"1e401", false, false}, // beyond the validator's bounds: its to refuse
	} {
		if got := inexactInteger(tc.lit, tc.unsigned); got != tc.want {
			t.Errorf("inexactInteger(%s, unsigned %v) = %v, want %v", tc.lit, tc.unsigned, got, tc.want)
		}
	}
	for raw, want := range map[string]bool{
		`{"a":123456789012345}`:             false,
		`{"a":1234567890123456}`:            true,
		`{"a":"12345678901234567890"}`:      false, // a string
		`{"a":"x\"12345678901234567890"}`:   false,
		`{"a":"\\","b":1234567890123456}`:   true,
		`{"a":1e5}`:                         true,
		`{"a":true,"b":null,"c":-12.5}`:     false,
		`{"a":[123456789,123456789012345]}`: false,
	} {
		if got := longNumber([]byte(raw)); got != want {
			t.Errorf("longNumber(%s) = %v, want %v", raw, got, want)
		}
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"to":     map[string]any{"type": "integer"},
			"maybe":  map[string]any{"type": []any{"null", "integer"}},
			"amount": map[string]any{"type": "number"},
			"ids":    map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
			"byName": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
		},
	}
	s := intSchema(schema)
	if s == nil {
		t.Fatal("intSchema: nil for a schema with integers")
	}
	if intSchema(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}}) != nil {
		t.Error("intSchema: not nil for a schema without integers")
	}
	for raw, want := range map[string][]string{
		`{"to":12345678901234567}`:                           {"to"},
		`{"maybe":12345678901234567}`:                        {"maybe"},
		`{"amount":12345678901234567}`:                       nil, // a float64 field gets the same float64 either way
		`{"ids":[1,12345678901234567]}`:                      {"ids", "1"},
		`{"byName":{"x":12345678901234567}}`:                 {"byName", "x"},
		`{"to":9007199254740994,"amount":1e300}`:             nil,
		`{"other":12345678901234567}`:                        nil, // no schema for it
		`{"to":1,"ids":[99999999999999999]}`:                 {"ids", "0"},
		`{"maybe":12345678901234567,"to":12345678901234567}`: {"maybe"}, // the first by sorted keys
	} {
		got, ok := roundedInteger(json.RawMessage(raw), s)
		if ok != (want != nil) || !slices.Equal(got, want) {
			t.Errorf("roundedInteger(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

package mcpguard

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestReview40DuplicateKeysAtEachLevel: the duplicate-key scan keeps each
// object's keys apart. A key of a nested object or of an object in an
// array is not its parent's (so {"a":{"x":1},"x":2} passes), and closing a
// nested object or array gives the parent back its own keys (so a name
// repeated after one, {"a":1,"l":[],"a":2}, is still the duplicate a
// validator and a handler would read differently). The scan has two ways
// to compare (one by one, and a set past 16 keys): both are checked.
func TestReview40DuplicateKeysAtEachLevel(t *testing.T) {
	// many is an object's first 17 members, enough for the set.
	var many strings.Builder
	for i := range 17 {
		many.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	for _, tc := range []struct {
		name string
		raw  string
		dup  bool // refused as a duplicate (in both modes)
	}{
		{"nested_key_not_parents", `{"a":{"x":1},"x":2}`, false},
		{"array_object_key_not_parents", `{"l":[{"a":1}],"a":2}`, false},
		{"sibling_objects_in_array", `{"l":[{"a":1},{"a":2}]}`, false},
		{"repeat_after_nested_object", `{"a":{"x":1},"a":2}`, true},
		{"repeat_after_nested_array", `{"a":1,"l":[],"a":2}`, true},
		{"repeat_after_arrays_and_objects", `{"a":1,"l":[[],{"b":[]}],"m":{},"a":2}`, true},
		{"repeat_inside_nested_after_deeper", `{"o":{"a":1,"b":{"c":[1]},"a":2}}`, true},
		{"set_nested_key_not_parents", `{` + many.String() + `"o":{"x":1},"x":2}`, false},
		{"set_repeat_after_nested", `{` + many.String() + `"o":{"x":[]},"l":[],"k3":2}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fold := range []bool{false, true} {
				err := checkKeys([]byte(tc.raw), fold)
				if got := err != nil; got != tc.dup {
					t.Errorf("checkKeys(%s, fold %v) = %v, want a duplicate refused: %v", tc.raw, fold, err, tc.dup)
				}
			}
		})
	}
}

// TestReview40DuplicateKeysStringsAndEscapes: the scan reads keys as the
// decoder does. An escaped key is compared decoded ("\u0061" is a, and an
// escaped quote or backslash does not end the key); a key with invalid
// UTF-8 is compared decoded too, where every invalid byte reads as U+FFFD,
// so keys that differ only there are one key to encoding/json; a string
// value is never taken for a key. The scan runs before the decoder, on
// any input: a text cut inside a key or a string, after a backslash
// included, is left to the decoder (no panic), which refuses it.
func TestReview40DuplicateKeysStringsAndEscapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		dup  bool
	}{
		{"value_equal_to_its_key", `{"a":"a"}`, false},
		{"value_equal_to_next_key", `{"k":"v","v":1}`, false},
		{"escaped_letter", `{"\u0061":1,"a":2}`, true},
		{"escaped_quote_in_key", `{"a\"b":1,"a\"b":2}`, true},
		{"escaped_quote_keys_differ", `{"a\"b":1,"a\"c":2}`, false},
		{"escaped_backslash_in_key", `{"a\\":1,"a\\":2}`, true},
		{"escaped_quote_in_value", `{"x":"\"","x":1}`, true},
		{"invalid_utf8_bytes", "{\"a\x80\":1,\"a\x81\":2}", true},
		{"invalid_utf8_lead_bytes", "{\"a\xff\":1,\"a\xfe\":2}", true},
		{"invalid_utf8_only", "{\"\x80\":1,\"\x81\":2}", true},
		{"valid_non_ascii_differ", `{"añ":1,"aé":2}`, false},
		{"valid_non_ascii_same", `{"añ":1,"añ":2}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fold := range []bool{false, true} {
				err := checkKeys([]byte(tc.raw), fold)
				if got := err != nil; got != tc.dup {
					t.Errorf("checkKeys(%q, fold %v) = %v, want a duplicate refused: %v", tc.raw, fold, err, tc.dup)
				}
			}
		})
	}
	v, err := NewValidator(json.RawMessage(`{"type":"object"}`), &ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{"a`, `{"a\`, `{"a\u00`, `{"a\u0041`, `{"a":"b`, `{"a":"b\`, `{"a":1,"`, `{"a":1,"b\"`} {
		for _, fold := range []bool{false, true} {
			b := []byte(raw)
			if err := checkKeys(b[:len(b):len(b)], fold); err != nil { // no room past the end
				t.Errorf("checkKeys(%q, fold %v) = %v, want nil (the decoder's to refuse)", raw, fold, err)
			}
		}
		if _, err := v.Validate(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("Validate(%q) = %v, want arguments that are not valid JSON", raw, err)
		}
	}
}

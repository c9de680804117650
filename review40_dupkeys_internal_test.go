package mcpguard

import (
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

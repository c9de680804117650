package mcpguard

import (
	"encoding/json"
	"testing"
)

// TestReview45cBindsHeadersShapes: bindsHeaders follows "properties" only
// when it is an object and a property's schema only when it is one, skips
// whatever else a schema holds (arrays of objects too) without losing its
// place, and reads on after a "properties" (any spelling) that binds
// nothing. A schema it cannot read binds (fail closed): one whose
// encoding nests deeper than encoding/json decodes, under a key it skips
// or in a property's schema. Read directly, as TestReview16cBindsHeaders
// reads it.
func TestReview45cBindsHeadersShapes(t *testing.T) {
	var deep any = "x" // 10010 objects deep: encoding/json decodes at most 10000
	for range 10010 {
		deep = map[string]any{"x": deep}
	}
	for _, tc := range []struct {
		name   string
		schema any
		want   bool
	}{
		{"deep_skipped", map[string]any{"type": "object", "x": deep}, true},
		{"deep_in_property", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"x": deep}}}, true},
		{"properties_array", json.RawMessage(`{"type":"object","properties":["a",{"x-mcp-header":"A"}]}`), false},
		{"property_schema_array", json.RawMessage(`{"type":"object","properties":{"a":["x-mcp-header","A"]}}`), false},
		{"property_schema_array_of_one", json.RawMessage(`{"type":"object","properties":{"a":[1]}}`), false},
		{"after_other_spelling", json.RawMessage(`{"type":"object","Properties":0,"properties":{"a":{"x-mcp-header":"A"}}}`), true},
		{"second_of_duplicates", json.RawMessage(`{"type":"object","properties":{},"properties":{"a":{"x-mcp-header":"A"}}}`), true},
		{"after_array_schema", json.RawMessage(`{"type":"object","properties":{"a":[{}],"b":{"x-mcp-header":"B"}}}`), true},
		{"after_nested_arrays", json.RawMessage(`{"type":"object","properties":{"a":[[{"c":[1]}],{}],"b":{"x-mcp-header":"B"}}}`), true},
		{"after_object_properties_value", json.RawMessage(`{"type":"object","properties":{"a":{"properties":[{}]},"b":{"x-mcp-header":"B"}}}`), true},
	} {
		if got := bindsHeaders(tc.schema); got != tc.want {
			t.Errorf("%s: bindsHeaders = %v, want %v", tc.name, got, tc.want)
		}
	}
}

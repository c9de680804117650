package mcpguard

import (
	"encoding/json"
	"testing"
)

// TestReview45cBindsHeadersShapes: bindsHeaders follows "properties" only
// when it is an object and a property's schema only when it is one, skips
// whatever else a schema holds (arrays of objects too) without losing its
// place, and reads on after a "properties" (any spelling) that binds
// nothing. Read directly, as TestReview16cBindsHeaders reads it.
func TestReview45cBindsHeadersShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		want   bool
	}{
		{"properties_array", `{"type":"object","properties":["a",{"x-mcp-header":"A"}]}`, false},
		{"property_schema_array", `{"type":"object","properties":{"a":["x-mcp-header","A"]}}`, false},
		{"property_schema_array_of_one", `{"type":"object","properties":{"a":[1]}}`, false},
		{"after_other_spelling", `{"type":"object","Properties":0,"properties":{"a":{"x-mcp-header":"A"}}}`, true},
		{"second_of_duplicates", `{"type":"object","properties":{},"properties":{"a":{"x-mcp-header":"A"}}}`, true},
		{"after_array_schema", `{"type":"object","properties":{"a":[{}],"b":{"x-mcp-header":"B"}}}`, true},
		{"after_nested_arrays", `{"type":"object","properties":{"a":[[{"c":[1]}],{}],"b":{"x-mcp-header":"B"}}}`, true},
		{"after_object_properties_value", `{"type":"object","properties":{"a":{"properties":[{}]},"b":{"x-mcp-header":"B"}}}`, true},
	} {
		if got := bindsHeaders(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("%s: bindsHeaders(%s) = %v, want %v", tc.name, tc.schema, got, tc.want)
		}
	}
}

package mcpguard

import (
	"encoding/json"
	"testing"
)

// TestReview16cBindsHeaders: bindsHeaders reads at least what go-sdk
// v1.8.0 reads of a schema's x-mcp-header annotations (properties at any
// depth, keys matched exactly), whatever else the schema holds, and fails
// closed on what it cannot read.
func TestReview16cBindsHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema any
		want   bool
	}{
		{"none", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`), false},
		{"bool_schema", json.RawMessage(`true`), false},
		{"root_only", json.RawMessage(`{"type":"object","x-mcp-header":"A"}`), false},
		{"in_defs", json.RawMessage(`{"type":"object","$defs":{"a":{"properties":{"b":{"x-mcp-header":"B"}}}}}`), false},
		{"in_items", json.RawMessage(`{"type":"object","properties":{"a":{"type":"array","items":{"properties":{"b":{"x-mcp-header":"B"}}}}}}`), false},
		{"top", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}`), true},
		{"escaped_key", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-\u0068eader":"A"}}}`), true},
		{"after_bool_property", json.RawMessage(`{"type":"object","properties":{"f":true,"n":null,"a":{"type":"string","x-mcp-header":"A"}}}`), true},
		{"after_array_keyword", json.RawMessage(`{"type":"object","required":["a",{"b":[1]}],"properties":{"a":{"type":"string","x-mcp-header":"A"}}}`), true},
		{"upper_case_beside", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}},"Properties":0}`), true},
		{"first_of_duplicates", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}},"properties":{}}`), true},
		{"deep", json.RawMessage(`{"type":"object","properties":{"a":{"properties":{"b":{"properties":{"c":{"type":"string","x-mcp-header":"C"}}}}}}}`), true},
		{"map", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "x-mcp-header": "A"}}}, true},
		{"unmarshalable", map[string]any{"type": "object", "f": func() {}}, true},
	} {
		if got := bindsHeaders(tc.schema); got != tc.want {
			t.Errorf("%s: bindsHeaders = %v, want %v", tc.name, got, tc.want)
		}
	}
}

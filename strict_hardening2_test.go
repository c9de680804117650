package mcpguard

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Strict mode's closing of schemas (closeObjects, validate.go); each test
// below failed on an earlier version of it. The limits it documents for
// drafts before 2019-09 (composed schemas) are not tested here.

// Strict mode must never accept what lenient mode refuses, also where
// objects nest inside "not", "if", "oneOf" and "anyOf" branches (closing
// them would change what the branch matches).
func TestStrictNestedInFilterDoesNotWeaken(t *testing.T) {
	for _, tc := range []struct{ name, schema, raw string }{
		{
			name: "not_nested_property",
			schema: `{"type":"object",
				"properties":{"acct":{"type":"object","properties":{"role":{"type":"string"},"note":{"type":"string"}}}},
				"not":{"properties":{"acct":{"properties":{"role":{"const":"admin"}},"required":["role"]}},"required":["acct"]}}`,
			raw: `{"acct":{"role":"admin","note":"x"}}`,
		},
		{
			name: "if_then_nested_property",
			schema: `{"type":"object",
				"properties":{"order":{"type":"object","properties":{"kind":{"type":"string"},"amount":{"type":"integer"}}}},
				"if":{"properties":{"order":{"properties":{"kind":{"const":"big"}}}}},
				"then":{"properties":{"order":{"properties":{"amount":{"minimum":1000}}}}}}`,
			raw: `{"order":{"kind":"big","amount":5}}`,
		},
		{
			name: "not_items",
			schema: `{"type":"object",
				"properties":{"xs":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":"string"}}}}},
				"not":{"properties":{"xs":{"items":{"properties":{"id":{"const":0}}}}},"required":["xs"]}}`,
			raw: `{"xs":[{"id":0,"tag":"t"}]}`,
		},
		{
			name: "oneOf_nested_property",
			schema: `{"type":"object",
				"properties":{"p":{"type":"object","properties":{"a":{},"b":{}}}},
				"oneOf":[{"properties":{"p":{"properties":{"a":{"type":"integer"}}}}},
				         {"properties":{"p":{"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}}}]}`,
			raw: `{"p":{"a":1,"b":2}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, ref, lenient := strictVerdicts(t, tc.schema, tc.raw)
			if lenient == nil {
				t.Fatalf("test premise: lenient accepts %s", tc.raw)
			}
			if check == nil || ref == nil {
				t.Errorf("strict accepts what lenient refuses (check=%v, Validate=%v; lenient: %v)", check, ref, lenient)
			}
		})
	}
}

// Unknown fields must be refused wherever an object schema that declares
// fields applies, however the schema is reached.
func TestStrictUnknownFieldRefused(t *testing.T) {
	for _, tc := range []struct{ name, schema, raw string }{
		{
			// resolve only knows JSON pointers: "#name" anchors are nil.
			name: "anchor_ref",
			schema: `{"type":"object","properties":{"r":{"$ref":"#refund"}},
				"$defs":{"R":{"$anchor":"refund","type":"object","properties":{"amount":{"type":"number"}}}}}`,
			raw: `{"r":{"amount":1,"sneaky":true}}`,
		},
		{
			// a $ref fragment is percent-encoded (resolve once did not
			// decode it, and left the object open).
			name: "percent_encoded_ref",
			schema: `{"type":"object","properties":{"r":{"$ref":"#/$defs/a%25b"}},
				"$defs":{"a%b":{"type":"object","properties":{"amount":{"type":"number"}}}}}`,
			raw: `{"r":{"amount":1,"sneaky":true}}`,
		},
		{
			name: "absolute_id_ref",
			schema: `{"$id":"https://example.com/s.json","type":"object","properties":{"r":{"$ref":"https://example.com/s.json#/$defs/R"}},
				"$defs":{"R":{"type":"object","properties":{"amount":{"type":"number"}}}}}`,
			raw: `{"r":{"amount":1,"sneaky":true}}`,
		},
		{
			name: "embedded_id_ref",
			schema: `{"type":"object","properties":{"r":{"$ref":"urn:example:refund"}},
				"$defs":{"R":{"$id":"urn:example:refund","type":"object","properties":{"amount":{"type":"number"}}}}}`,
			raw: `{"r":{"amount":1,"sneaky":true}}`,
		},
		{
			// "#/..." inside an embedded resource is relative to that
			// resource, not to the root; resolve looks in the root's $defs
			// and finds a free-form schema there.
			name: "ref_relative_to_embedded_resource",
			schema: `{"type":"object","properties":{"r":{"$ref":"urn:example:b"}},
				"$defs":{"Inner":{},
				  "B":{"$id":"urn:example:b","type":"object","properties":{"q":{"$ref":"#/$defs/Inner"}},
				       "$defs":{"Inner":{"type":"object","properties":{"amount":{"type":"number"}}}}}}}`,
			raw: `{"r":{"q":{"amount":1,"sneaky":true}}}`,
		},
		{
			name: "dynamicRef",
			schema: `{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},
				"$defs":{"node":{"$dynamicAnchor":"node","type":"object",
				  "properties":{"name":{"type":"string"},"child":{"$dynamicRef":"#node"}}}}}`,
			raw: `{"tree":{"name":"a","child":{"name":"b","sneaky":true}}}`,
		},
		{
			// a $ref target outside $defs/definitions (once never walked,
			// so the objects nested in it were never closed).
			name: "ref_into_unknown_keyword_nested",
			schema: `{"type":"object","properties":{"r":{"$ref":"#/components/R"}},
				"components":{"R":{"type":"object","properties":{"inner":{"type":"object","properties":{"amount":{"type":"number"}}}}}}}`,
			raw: `{"r":{"inner":{"amount":1,"sneaky":true}}}`,
		},
		{
			// a chain of 17 allOf+$ref levels (declaresInPlace once gave up
			// past depth 32, two steps per level, and left the property
			// open although its schema declares fields).
			name:   "deep_inplace_chain",
			schema: deepChain(17),
			raw:    `{"x":{"amount":1,"sneaky":true}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, ref, lenient := strictVerdicts(t, tc.schema, tc.raw)
			_ = lenient
			if check == nil || ref == nil {
				t.Errorf("strict mode let an unknown field through (check=%v, Validate=%v)", check, ref)
			}
		})
	}
}

// Strict mode must not refuse fields the schema declares.
func TestStrictAcceptsDeclaredField(t *testing.T) {
	for _, tc := range []struct{ name, schema, raw string }{
		{
			// the properties nested in allOf members are each closed with
			// additionalProperties:false, so each refuses the other's field.
			name: "allOf_nested_object_merge",
			schema: `{"type":"object","properties":{"p":{"type":"object"}},
				"allOf":[{"properties":{"p":{"properties":{"a":{"type":"integer"}}}}},
				         {"properties":{"p":{"properties":{"b":{"type":"integer"}}}}}]}`,
			raw: `{"p":{"a":1,"b":2}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, ref, lenient := strictVerdicts(t, tc.schema, tc.raw)
			if lenient != nil {
				t.Fatalf("test premise: lenient refuses: %v", lenient)
			}
			if check != nil || ref != nil {
				t.Errorf("strict refuses declared fields (check=%v, Validate=%v)", check, ref)
			}
		})
	}
}

// declaresInPlace has no memo: a DAG of $defs where each level names the
// next twice through allOf is walked 2^depth times (for every map in the
// schema), so NewValidator hangs on a small, valid, acyclic schema.
func TestStrictDeclaresInPlaceNotExponential(t *testing.T) {
	const depth = 20
	defs := map[string]any{}
	for i := 0; i < depth; i++ {
		next := fmt.Sprintf("#/$defs/d%d", i+1)
		var refs []any
		for j := 0; j < 4; j++ {
			refs = append(refs, map[string]any{"$ref": next})
		}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"allOf": refs}
	}
	defs[fmt.Sprintf("d%d", depth)] = map[string]any{"type": "string"}
	schema := map[string]any{"type": "object",
		"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d0"}},
		"$defs":      defs}
	raw, _ := json.Marshal(schema)
	done := make(chan error, 1)
	go func() {
		_, err := NewValidator(json.RawMessage(raw), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !strings.Contains(err.Error(), "schema") {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("NewValidator did not return within 3s on a 21-definition acyclic schema (exponential declaresInPlace)")
	}
}

// deepChain builds x -> d0 -> ... -> d(n-1) -> leaf through allOf + $ref,
// the leaf declaring "amount".
func deepChain(n int) string {
	defs := map[string]any{}
	for i := 0; i < n; i++ {
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"allOf": []any{
			map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}}}
	}
	defs[fmt.Sprintf("d%d", n)] = map[string]any{"type": "object",
		"properties": map[string]any{"amount": map[string]any{"type": "number"}}}
	raw, _ := json.Marshal(map[string]any{"type": "object",
		"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d0"}},
		"$defs":      defs})
	return string(raw)
}

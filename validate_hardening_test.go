package mcpguard

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// strictVerdicts compiles schema in the default (strict) mode and returns
// the verdicts of the pipeline's check (fast path when available) and of the
// reference Validate, plus the lenient (plain JSON Schema) verdict.
func strictVerdicts(t *testing.T, schema, raw string) (strictCheck, strictRef, lenient error) {
	t.Helper()
	v, err := NewValidator(json.RawMessage(schema), nil)
	if err != nil {
		t.Fatalf("NewValidator(strict): %v", err)
	}
	l, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatalf("NewValidator(lenient): %v", err)
	}
	_, strictCheck = v.check(json.RawMessage(raw))
	_, strictRef = v.Validate(json.RawMessage(raw))
	_, lenient = l.Validate(json.RawMessage(raw))
	return
}

// Strict mode must never accept what plain JSON Schema (lenient mode)
// refuses: closing the schemas of "if" and "not" would turn their verdicts
// around, so that a constraint in "then" stopped applying and "not"
// stopped forbidding.
func TestStrictModeMustNotWeakenConditionals(t *testing.T) {
	for _, tc := range []struct{ name, schema, raw string }{
		{
			name: "if_then",
			schema: `{"type":"object",
				"properties":{"kind":{"type":"string"},"amount":{"type":"integer"}},
				"if":{"properties":{"kind":{"const":"big"}}},
				"then":{"properties":{"amount":{"minimum":1000}}}}`,
			raw: `{"kind":"big","amount":5}`,
		},
		{
			name: "not",
			schema: `{"type":"object",
				"properties":{"role":{"type":"string"},"note":{"type":"string"}},
				"not":{"properties":{"role":{"const":"admin"}},"required":["role"]}}`,
			raw: `{"role":"admin","note":"x"}`,
		},
		{
			// "exactly one of": a given as "x", or b given; not both.
			name: "oneOf_exclusivity",
			schema: `{"type":"object",
				"properties":{"a":{"type":"string"},"b":{"type":"integer"}},
				"oneOf":[{"properties":{"a":{"const":"x"}},"required":["a"]},{"required":["b"]}]}`,
			raw: `{"a":"x","b":1}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, ref, lenient := strictVerdicts(t, tc.schema, tc.raw)
			if lenient == nil {
				t.Fatalf("test premise: lenient mode should refuse %s", tc.raw)
			}
			if check == nil || ref == nil {
				t.Errorf("strict mode accepts %s (check: %v, Validate: %v) which plain JSON Schema refuses (%v)", tc.raw, check, ref, lenient)
			}
		})
	}
}

// Strict mode must refuse unknown fields at every level, whatever keyword
// declares the known ones.
func TestStrictModeRefusesUnknownFields(t *testing.T) {
	for _, tc := range []struct{ name, schema, raw string }{
		{
			name:   "allOf_at_root",
			schema: `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}}}]}`,
			raw:    `{"a":"x","injected":1}`,
		},
		{
			name:   "patternProperties_sibling",
			schema: `{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^x-":{"type":"string"}}}`,
			raw:    `{"a":"x","injected":1}`,
		},
		{
			name:   "argument_named_default",
			schema: `{"type":"object","properties":{"default":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
			raw:    `{"default":{"a":"x","injected":1}}`,
		},
		{
			name:   "argument_named_examples",
			schema: `{"type":"object","properties":{"examples":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
			raw:    `{"examples":{"a":"x","injected":1}}`,
		},
		{
			name:   "argument_named_allOf",
			schema: `{"type":"object","properties":{"allOf":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
			raw:    `{"allOf":{"a":"x","injected":1}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, ref, _ := strictVerdicts(t, tc.schema, tc.raw)
			if check == nil || ref == nil {
				t.Errorf("strict mode accepts the unknown field in %s (check: %v, Validate: %v)", tc.raw, check, ref)
			}
		})
	}
}

// Strict mode must not refuse fields that the schema itself declares
// through a composition keyword: the input is valid JSON Schema and every
// field it has is named by the schema.
func TestStrictModeAcceptsComposedFields(t *testing.T) {
	for _, tc := range []struct{ name, schema, raw string }{
		{
			name: "allOf_with_sibling_properties",
			schema: `{"type":"object","properties":{"a":{"type":"string"}},
				"allOf":[{"properties":{"b":{"type":"string"}}}]}`,
			raw: `{"a":"x","b":"y"}`,
		},
		{
			name: "oneOf_discriminated_union",
			schema: `{"type":"object","properties":{"kind":{"enum":["card","bank"]}},"required":["kind"],
				"oneOf":[
					{"properties":{"kind":{"const":"card"},"card_number":{"type":"string"}},"required":["card_number"]},
					{"properties":{"kind":{"const":"bank"},"iban":{"type":"string"}},"required":["iban"]}]}`,
			raw: `{"kind":"card","card_number":"4111"}`,
		},
		{
			name: "ref_with_sibling_properties",
			schema: `{"type":"object","$defs":{"base":{"properties":{"id":{"type":"string"}}}},
				"$ref":"#/$defs/base","properties":{"note":{"type":"string"}}}`,
			raw: `{"id":"1","note":"n"}`,
		},
		{
			name: "allOf_of_refs",
			schema: `{"type":"object","$defs":{"base":{"properties":{"id":{"type":"string"}}}},
				"allOf":[{"$ref":"#/$defs/base"},{"properties":{"note":{"type":"string"}}}]}`,
			raw: `{"id":"1","note":"n"}`,
		},
		{
			name: "if_then_with_then_properties",
			schema: `{"type":"object","properties":{"kind":{"type":"string"}},
				"if":{"properties":{"kind":{"const":"big"}}},
				"then":{"properties":{"approver":{"type":"string"}},"required":["approver"]}}`,
			raw: `{"kind":"big","approver":"ann"}`,
		},
		{
			name: "dependentSchemas",
			schema: `{"type":"object","properties":{"card":{"type":"string"},"billing":{"type":"string"}},
				"dependentSchemas":{"card":{"properties":{"billing":{"type":"string"}},"required":["billing"]}}}`,
			raw: `{"card":"4111","billing":"addr"}`,
		},
		{
			name: "anyOf_with_unevaluatedProperties",
			schema: `{"type":"object","properties":{"a":{"type":"string"}},
				"anyOf":[{"properties":{"b":{"type":"string"}}}],"unevaluatedProperties":false}`,
			raw: `{"a":"x","b":"y"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, ref, lenient := strictVerdicts(t, tc.schema, tc.raw)
			if lenient != nil {
				t.Fatalf("test premise: lenient mode should accept %s: %v", tc.raw, lenient)
			}
			if check != nil || ref != nil {
				t.Errorf("strict mode refuses %s, whose every field the schema declares (check: %v, Validate: %v)", tc.raw, check, ref)
			}
		})
	}
}

// The duplicate-key scan that runs before the reference validator (and
// before every decodeStrict: output validation, argsMap for cost functions,
// ArgLimits and recorded arguments) must not be quadratic in the keys of an
// object: 60000 distinct keys (650 kB) took seconds, where decoding and
// validating the same document take tens of milliseconds.
func TestDuplicateKeyScanIsNotQuadratic(t *testing.T) {
	var b strings.Builder
	b.WriteByte('{')
	for i := range 60000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	b.WriteByte('}')
	raw := json.RawMessage(b.String())
	// propertyNames is outside the fast subset: the reference path runs.
	v, err := NewValidator(json.RawMessage(`{"type":"object","propertyNames":{"maxLength":20}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.fast != nil {
		t.Fatal("test premise: the schema should need the reference validator")
	}
	start := time.Now()
	if _, err := v.Validate(raw); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("validating %d bytes with 60000 distinct keys took %v (decoding plus v6 take well under 100ms)", len(raw), d)
	}
}

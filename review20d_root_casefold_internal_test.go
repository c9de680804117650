package mcpguard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCaseVariantReachesNoHandler: a case variant of a property that a
// schema declares must be refused wherever the schema declares it: in a
// branch that also names the position elsewhere (allOf beside properties),
// under dependentSchemas, not, if, prefixItems, draft-07 tuple items,
// additionalItems, patternProperties values, $recursiveRef / $dynamicRef
// and anchors, each on both paths with the same message.
func TestCaseVariantReachesNoHandler(t *testing.T) {
	const amount = `{"type":"object","properties":{"amount":{"type":"number","maximum":100}}}`
	for _, tc := range []struct {
		name, schema, args string
	}{
		{"allof_beside_properties", `{"type":"object","properties":{"order":{"type":"object"}},"allOf":[{"properties":{"order":` + amount + `}}]}`, `{"order":{"AMOUNT":1e6}}`},
		{"dependent_schemas", `{"type":"object","properties":{"kind":{}},"dependentSchemas":{"kind":{"properties":{"amount":{"maximum":100}}}}}`, `{"kind":1,"AMOUNT":1e6}`},
		{"dependencies_draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"kind":{}},"dependencies":{"kind":{"properties":{"amount":{"maximum":100}}}}}`, `{"kind":1,"AMOUNT":1e6}`},
		{"not", `{"type":"object","not":{"properties":{"admin":{"const":true}},"required":["admin"]}}`, `{"ADMIN":true}`},
		{"if", `{"type":"object","if":{"properties":{"kind":{"const":"a"}},"required":["kind"]},"then":{"required":["x"]}}`, `{"KIND":"a"}`},
		{"prefix_items", `{"type":"object","properties":{"l":{"type":"array","prefixItems":[` + amount + `]}}}`, `{"l":[{"AMOUNT":1e6}]}`},
		{"items_array_draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"l":{"type":"array","items":[` + amount + `]}}}`, `{"l":[{"AMOUNT":1e6}]}`},
		{"additional_items_draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"l":{"type":"array","items":[{}],"additionalItems":` + amount + `}}}`, `{"l":[1,{"AMOUNT":1e6}]}`},
		{"pattern_value", `{"type":"object","patternProperties":{"^o":` + amount + `}}`, `{"order":{"AMOUNT":1e6}}`},
		{"unevaluated_value", `{"type":"object","properties":{"x":{}},"unevaluatedProperties":` + amount + `}`, `{"o":{"AMOUNT":1e6}}`},
		{"recursive_ref", `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"type":"object","properties":{"amount":{"maximum":100},"child":{"$recursiveRef":"#"}}}`, `{"child":{"AMOUNT":1e6}}`},
		{"dynamic_ref", `{"$dynamicAnchor":"node","type":"object","properties":{"amount":{"maximum":100},"child":{"$dynamicRef":"#node"}}}`, `{"child":{"AMOUNT":1e6}}`},
		{"anchor_ref", `{"type":"object","$defs":{"o":{"$anchor":"ord","type":"object","properties":{"amount":{"maximum":100}}}},"properties":{"order":{"$ref":"#ord"}}}`, `{"order":{"AMOUNT":1e6}}`},
		{"kelvin", `{"type":"object","properties":{"kind":{"const":"a"}}}`, `{"\u212aind":"b"}`},
		{"long_s", `{"type":"object","properties":{"seats":{"maximum":2}}}`, `{"\u017feats":9}`},
	} {
		for _, lenient := range []bool{true, false} {
			v, err := NewValidator(json.RawMessage(tc.schema), &ValidationOptions{Lenient: lenient})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			_, refErr := v.Validate(json.RawMessage(tc.args))
			_, pipeErr := v.check(json.RawMessage(tc.args))
			if refErr == nil || pipeErr == nil {
				t.Errorf("%s (lenient %v): %s passed: reference %v, pipeline %v", tc.name, lenient, tc.args, refErr, pipeErr)
				continue
			}
			if refErr.Error() != pipeErr.Error() {
				t.Errorf("%s (lenient %v): the paths differ: %q and %q", tc.name, lenient, refErr, pipeErr)
			}
		}
	}
}

// TestCaseCheckRefusesNothingLegitimate: names that fold to a property
// declared at another position, exact names when a schema declares both
// "id" and "ID", and members of a map whose values are objects pass.
func TestCaseCheckRefusesNothingLegitimate(t *testing.T) {
	for _, tc := range []struct {
		name, schema, args string
	}{
		{"other_position", `{"type":"object","properties":{"name":{},"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`, `{"name":"a","labels":{"NAME":"x"}}`},
		{"tuple_positions", `{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"type":"object","properties":{"id":{}}},{"type":"object","additionalProperties":true}]}}}`, `{"l":[{"id":1},{"ID":2}]}`},
		{"tuple_draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"l":{"type":"array","items":[{"type":"object","properties":{"id":{}}}],"additionalItems":{"type":"object"}}}}`, `{"l":[{"id":1},{"ID":2}]}`},
		{"id_and_ID", `{"type":"object","properties":{"id":{},"ID":{}}}`, `{"id":1}`},
		{"id_and_ID_upper", `{"type":"object","properties":{"id":{},"ID":{}}}`, `{"ID":1}`},
		{"sibling_property", `{"type":"object","properties":{"a":{"type":"object","properties":{"id":{}}},"b":{"type":"object"}}}`, `{"a":{"id":1},"b":{"ID":2}}`},
	} {
		v, err := NewValidator(json.RawMessage(tc.schema), &ValidationOptions{Lenient: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, err := v.Validate(json.RawMessage(tc.args)); err != nil {
			t.Errorf("%s: reference path refused %s: %v", tc.name, tc.args, err)
		}
		if _, err := v.check(json.RawMessage(tc.args)); err != nil {
			t.Errorf("%s: pipeline refused %s: %v", tc.name, tc.args, err)
		}
	}
}

// TestCaseCheckNamesOneDeclaredName: where "id" and "ID" are both
// declared, "Id" is refused naming the same declared name every time
// (the message does not depend on map iteration order).
func TestCaseCheckNamesOneDeclaredName(t *testing.T) {
	const schema = `{"type":"object","properties":{"id":{},"ID":{},"iD":{}}}`
	want := ""
	for i := 0; i < 30; i++ {
		v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.check(json.RawMessage(`{"Id":1}`))
		if err == nil {
			t.Fatal("Id passed")
		}
		if want == "" {
			want = err.Error()
		} else if err.Error() != want {
			t.Fatalf("messages differ between builds: %q and %q", want, err)
		}
	}
}

// TestCaseCheckCyclicAndLargeSchemas: reference cycles (direct, mutual,
// through in-place applicators) and a wide recursive schema build quickly
// and check without panicking.
func TestCaseCheckCyclicAndLargeSchemas(t *testing.T) {
	var defs []string
	const n = 200
	for i := 0; i < n; i++ {
		next := (i + 1) % n
		defs = append(defs, `"d`+itoa(i)+`":{"type":"object","allOf":[{"$ref":"#/$defs/d`+itoa(next)+`"}],"properties":{"p`+itoa(i)+`":{"$ref":"#/$defs/d`+itoa(next)+`"}}}`)
	}
	schemas := []string{
		`{"$ref":"#"}`,
		`{"type":"object","allOf":[{"$ref":"#"}],"properties":{"a":{"$ref":"#"}}}`,
		`{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		`{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/d0"}`,
	}
	for _, s := range schemas {
		start := time.Now()
		v, err := NewValidator(json.RawMessage(s), &ValidationOptions{Lenient: true})
		if err != nil {
			t.Fatalf("%.60s: %v", s, err)
		}
		for _, args := range []string{`{}`, `{"a":{"a":{"A":1}}}`, `{"x":{"X":1}}`, `{"p0":{"P1":{}}}`} {
			_, _ = v.Validate(json.RawMessage(args))
			_, _ = v.check(json.RawMessage(args))
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%.60s: took %v", s, d)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestCaseCheckCostsNothingOnClosedFastSchemas: a strict schema inside the
// fast path's subset that opens no object (nested objects, arrays of
// objects) gets no case check, so the fast path decodes nothing more; one
// that opens an object gets it.
func TestCaseCheckCostsNothingOnClosedFastSchemas(t *testing.T) {
	const closed = `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"integer"}}},"l":{"type":"array","items":{"type":"object","properties":{"b":{}}}}}}`
	v, err := NewValidator(json.RawMessage(closed), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.fast == nil || v.cases != nil {
		t.Fatalf("closed fast schema: fast %v, case check %v", v.fast != nil, v.cases != nil)
	}
	if doc, err := v.check(json.RawMessage(`{"o":{"a":1},"l":[{"b":1}]}`)); err != nil || doc != nil {
		t.Errorf("closed fast schema: decoded %v, error %v", doc, err)
	}
	const open = `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true}}}`
	if v, err = NewValidator(json.RawMessage(open), nil); err != nil {
		t.Fatal(err)
	}
	if v.fast == nil || v.cases == nil {
		t.Fatalf("open fast schema: fast %v, case check %v", v.fast != nil, v.cases != nil)
	}
	if _, err := v.check(json.RawMessage(`{"o":{"A":1}}`)); err == nil {
		t.Errorf("open fast schema: o.A passed")
	}
}

// TestCaseCheckBoundsItsNodes: a schema whose positions would take more
// nodes than the bound is refused with an error, not built without end.
func TestCaseCheckBoundsItsNodes(t *testing.T) {
	old := maxCaseNodes
	maxCaseNodes = 3
	defer func() { maxCaseNodes = old }()
	const schema = `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"object","properties":{"d":{}}}}}}}}}`
	if _, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true}); err == nil || !strings.Contains(err.Error(), "too complex") {
		t.Errorf("error %v, want the schema refused as too complex", err)
	}
	maxCaseNodes = old
	if _, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true}); err != nil {
		t.Errorf("at the default bound: %v", err)
	}
}

package mcpguard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestReview40CaseCheckBehindEveryReference: the letter-case check (a member
// "AMOUNT" where the schema declares "amount" and admits undeclared
// members) followed only plain local references. Behind a reference whose
// fragment is percent-encoded ("#/$defs/a%20b", "#%61n"), one to a
// resource embedded with its own $id, or one relative to the root's $id,
// it saw no declared name, while the validator follows all of them: the
// target's maximum applied to "amount" and never to "AMOUNT", which a
// handler decoding with encoding/json reads as amount. So {"order":
// {"AMOUNT":1e6}} passed a maximum of 100. A percent-encoded fragment is
// now decoded and followed; a reference the check cannot follow makes its
// position and those below it blind, where a variant of a name the
// document declares anywhere is refused. Both paths (Validate and the
// pipeline's check) refuse alike, with the same message.
func TestReview40CaseCheckBehindEveryReference(t *testing.T) {
	const amount = `"amount":{"type":"number","maximum":100}`
	const target = `{"type":"object","properties":{` + amount + `}}`
	// Every schema puts the target, which declares amount, behind the
	// property order.
	common := []review40Verdict{
		{`{"order":{"amount":5}}`, false},
		{`{"order":{"amount":1e6}}`, true}, // the validator follows the reference
		{`{"order":{"AMOUNT":1e6}}`, true},
		{`{"order":{"a_mount":1e6}}`, true},
		{`{"order":{"note":"x"}}`, false}, // a name no schema declares
	}
	for _, tc := range []struct {
		name    string
		schema  string
		lenient bool
		more    []review40Verdict
	}{
		{
			name: "percent_encoded_pointer",
			schema: `{"type":"object","$defs":{"a b":` + target + `},"properties":{"order":{"$ref":"#/$defs/a%20b"}},
				"required":["order"]}`,
			lenient: true,
			// Followed, not blind: a member the target does not declare
			// is free-form below.
			more: []review40Verdict{{`{"order":{"z":{"AMOUNT":1}}}`, false}},
		},
		{
			name:    "percent_encoded_percent",
			schema:  `{"type":"object","$defs":{"a%b":` + target + `},"properties":{"order":{"$ref":"#/$defs/a%25b"}}}`,
			lenient: true,
		},
		{
			name: "percent_encoded_anchor",
			schema: `{"type":"object","$defs":{"ab":{"$anchor":"an","type":"object","properties":{` + amount + `}}},
				"properties":{"order":{"$ref":"#%61n"}}}`,
			lenient: true,
			more:    []review40Verdict{{`{"order":{"z":{"AMOUNT":1}}}`, false}},
		},
		{
			name: "embedded_resource",
			schema: `{"type":"object","$defs":{"ab":{"$id":"urn:example:ab","type":"object","properties":{` + amount + `}}},
				"properties":{"order":{"$ref":"urn:example:ab"}}}`,
			lenient: true,
			// Blind below the reference too.
			more: []review40Verdict{{`{"order":{"z":{"AMOUNT":1}}}`, true}, {`{"order":{"z":{"amount":1}}}`, false}},
		},
		{
			name: "relative_to_root_id",
			schema: `{"$id":"http://example.com/dir/root.json","type":"object","$defs":{"ab":` + target + `},
				"properties":{"order":{"$ref":"root.json#/$defs/ab"}}}`,
			lenient: true,
		},
		{
			// "#/$defs/in" inside the embedded resource names its own
			// definition, not the root's (which declares nothing).
			name: "relative_to_embedded_resource",
			schema: `{"type":"object","$defs":{"in":{},
				"b":{"$id":"urn:example:b","type":"object","allOf":[{"$ref":"#/$defs/in"}],
				     "properties":{"z":{"$ref":"#/$defs/in"}},"$defs":{"in":` + target + `}}},
				"properties":{"order":{"$ref":"urn:example:b"}}}`,
			lenient: true,
			more:    []review40Verdict{{`{"order":{"z":{"AMOUNT":1e6}}}`, true}, {`{"order":{"z":{"amount":5}}}`, false}},
		},
		{
			// Draft 4 embeds a resource with "id"; "#/definitions/in" in it
			// names its own definition.
			name: "draft4_embedded_id",
			schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","definitions":{"in":{},
				"b":{"id":"urn:example:b","type":"object","allOf":[{"$ref":"#/definitions/in"}],
				     "properties":{"z":{"$ref":"#/definitions/in"}},"definitions":{"in":` + target + `}}},
				"properties":{"order":{"$ref":"#/definitions/b"}}}`,
			lenient: true,
			more:    []review40Verdict{{`{"order":{"z":{"AMOUNT":1e6}}}`, true}, {`{"order":{"z":{"amount":5}}}`, false}},
		},
		{
			// The root's own $id (or draft 4's id) embeds nothing: a local
			// reference is followed, not blind.
			name: "root_id_local_ref",
			schema: `{"$id":"urn:example:root","type":"object","$defs":{"ab":` + target + `},
				"properties":{"order":{"$ref":"#/$defs/ab"}}}`,
			lenient: true,
			more:    []review40Verdict{{`{"order":{"z":{"AMOUNT":1}}}`, false}},
		},
		{
			// A reference by the root's own $id, with a pointer or alone.
			name: "root_id_absolute_ref",
			schema: `{"$id":"urn:example:root","type":"object","$defs":{"ab":` + target + `},
				"properties":{"order":{"$ref":"urn:example:root#/$defs/ab"},"self":{"$ref":"urn:example:root"}}}`,
			lenient: true,
			more: []review40Verdict{{`{"order":{"z":{"AMOUNT":1}}}`, false},
				{`{"self":{"order":{"AMOUNT":1e6}}}`, true}, {`{"self":{"z":{"AMOUNT":1}}}`, false}},
		},
		{
			// Draft 4 embeds a resource with "id" in an array too (allOf).
			name: "draft4_embedded_id_in_array",
			schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","definitions":{"in":{}},
				"properties":{"order":{"allOf":[{"id":"urn:example:b","type":"object","allOf":[{"$ref":"#/definitions/in"}],
				"definitions":{"in":` + target + `}}]}}}`,
			lenient: true,
		},
		{
			name: "draft4_root_id_local_ref",
			schema: `{"$schema":"http://json-schema.org/draft-04/schema#","id":"urn:example:root","type":"object",
				"definitions":{"ab":` + target + `},"properties":{"order":{"$ref":"#/definitions/ab"}}}`,
			lenient: true,
			more:    []review40Verdict{{`{"order":{"z":{"AMOUNT":1}}}`, false}},
		},
		{
			// A property named id (its value a schema) embeds nothing:
			// the reference is followed, not blind.
			name: "property_named_id",
			schema: `{"type":"object","$defs":{"ab":{"type":"object","properties":{"id":{"type":"string"},` + amount + `}}},
				"properties":{"order":{"$ref":"#/$defs/ab"}}}`,
			lenient: true,
			more:    []review40Verdict{{`{"order":{"z":{"AMOUNT":1}}}`, false}},
		},
		{
			// Strict mode, the target opening itself explicitly: the
			// closing cannot refuse AMOUNT, which the target evaluates.
			name: "strict_embedded_open_target",
			schema: `{"type":"object","$defs":{"ab":{"$id":"urn:example:ab","type":"object","properties":{` + amount + `},
				"additionalProperties":true}},"properties":{"order":{"$ref":"urn:example:ab"}}}`,
			more: []review40Verdict{{`{"order":{"note":"x"}}`, false}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewValidator(json.RawMessage(tc.schema), &ValidationOptions{Lenient: tc.lenient})
			if err != nil {
				t.Fatalf("NewValidator: %v", err)
			}
			review40Verdicts(t, v, append(append([]review40Verdict{}, common...), tc.more...))
		})
	}
}

// TestReview40CaseCheckBlindOnlyWhereNeeded: a reference the check cannot
// follow adds a check only where the document declares a name to vary: a
// schema that declares none gets no case check (and so no decoding on the
// fast path).
func TestReview40CaseCheckBlindOnlyWhereNeeded(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		lenient      bool
		want         bool
	}{
		{"embedded_declares_nothing", `{"type":"object","$defs":{"ab":{"$id":"urn:example:ab","type":"object"}},
			"properties":{"order":{"$ref":"urn:example:ab"}}}`, true, true},
		{"embedded_no_names_anywhere", `{"type":"object","$defs":{"ab":{"$id":"urn:example:ab","type":"object"}},
			"additionalProperties":{"$ref":"urn:example:ab"}}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewValidator(json.RawMessage(tc.schema), &ValidationOptions{Lenient: tc.lenient})
			if err != nil {
				t.Fatalf("NewValidator: %v", err)
			}
			if got := v.cases != nil; got != tc.want {
				t.Errorf("case check built: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReview40CaseCheckBelowDependentSchemas: strict mode closes nothing
// below an in-place applicator, so an object a dependentSchemas branch
// declares stays open there, and only the letter-case check refuses a
// variant of a name it declares: {"a":1,"order":{"AMOUNT":1e6}} where
// order's amount has a maximum of 100. (Draft 7's dependencies are closed
// otherwise: before 2019-09 strict mode refuses what only a branch
// declares.)
func TestReview40CaseCheckBelowDependentSchemas(t *testing.T) {
	const order = `{"properties":{"order":{"type":"object","properties":{"amount":{"type":"number","maximum":100}}}}}`
	for _, tc := range []struct{ name, schema string }{
		{"dependentSchemas", `{"type":"object","properties":{"a":{}},"dependentSchemas":{"a":` + order + `}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewValidator(json.RawMessage(tc.schema), nil)
			if err != nil {
				t.Fatalf("NewValidator: %v", err)
			}
			review40Verdicts(t, v, []review40Verdict{
				{`{"a":1,"order":{"amount":5}}`, false},
				{`{"a":1,"order":{"amount":1e6}}`, true},
				{`{"a":1,"order":{"AMOUNT":1e6}}`, true},
			})
		})
	}
}

// TestReview40CaseCheckPointerThroughArrays: a JSON pointer may pass through
// an array by index ("#/x-list/1", under an extension keyword): the letter-case check follows it to
// the element the validator applies (not blind: a free-form member below
// keeps its names). A pointer past the array's end, negative or not a
// number is a schema the validator cannot compile: NewValidator says so,
// the check having built without a panic.
func TestReview40CaseCheckPointerThroughArrays(t *testing.T) {
	const target = `{"type":"object","properties":{"amount":{"type":"number","maximum":100}}}`
	schema := func(ref string) string {
		return `{"type":"object","x-list":[{},` + target + `],"properties":{"order":{"$ref":"` + ref + `"}}}`
	}
	v, err := NewValidator(json.RawMessage(schema("#/x-list/1")), &ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	review40Verdicts(t, v, []review40Verdict{
		{`{"order":{"amount":5}}`, false},
		{`{"order":{"amount":1e6}}`, true},
		{`{"order":{"AMOUNT":1e6}}`, true},
		{`{"order":{"z":{"AMOUNT":1}}}`, false},
	})
	// Index 0, a free-form schema: followed, and nothing declared there.
	v, err = NewValidator(json.RawMessage(schema("#/x-list/0")), &ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	if _, err := v.check(json.RawMessage(`{"order":{"AMOUNT":1}}`)); err != nil {
		t.Errorf(`$ref "#/x-list/0": check({"order":{"AMOUNT":1}}) = %v, want nil (order is free-form)`, err)
	}
	for _, ref := range []string{"#/x-list/2", "#/x-list/-1", "#/x-list/x", "#/x-list/1/properties/amount/x"} {
		if _, err := NewValidator(json.RawMessage(schema(ref)), &ValidationOptions{Lenient: true}); err == nil {
			t.Errorf("NewValidator with $ref %q = nil error, want the schema refused", ref)
		}
	}
}

// TestReview40CaseCheckWalksOnlyDeclaringPositions: the case check has a
// node only where some schema names members or elements (or a reference it
// cannot follow makes the position blind): below a property whose schema
// declares nothing, and for members no schema declares, there is none, so
// the check does not walk those parts of the arguments. (The set of no
// schemas was built as a node that was its own additionalProperties and
// items, so every value of the arguments was walked.)
func TestReview40CaseCheckWalksOnlyDeclaringPositions(t *testing.T) {
	v, err := NewValidator(json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"},"note":{}}}`),
		&ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	n := v.cases
	if n == nil {
		t.Fatal("no case check for a lenient schema that declares amount")
	}
	if n.extra != nil || n.items != nil || n.props["amount"] != nil || n.props["note"] != nil {
		t.Errorf("nodes for positions that declare nothing: extra %v, items %v, amount %v, note %v",
			n.extra != nil, n.items != nil, n.props["amount"] != nil, n.props["note"] != nil)
	}
	if _, err := v.check(json.RawMessage(`{"amount":1,"note":{"AMOUNT":2},"other":[{"Amount":3}]}`)); err != nil {
		t.Errorf("check: %v, want nil (nothing declared below amount, note or other)", err)
	}
	if _, err := v.check(json.RawMessage(`{"Amount":1}`)); err == nil {
		t.Error(`check({"Amount":1}) = nil, want the letter-case refusal`)
	}
}

// A review40Verdict is whether a validator refuses the arguments args.
type review40Verdict struct {
	args    string
	refused bool
}

// review40Verdicts checks v's verdict on each of cases on both paths
// (Validate and the pipeline's check): refused or not as wanted, refusals
// unwrapping to ErrInvalidArguments with the same message on both, and a
// refusal of a member spelled AMOUNT the letter-case one.
func review40Verdicts(t *testing.T, v *Validator, cases []review40Verdict) {
	t.Helper()
	for _, c := range cases {
		_, refErr := v.Validate(json.RawMessage(c.args))
		_, pipeErr := v.check(json.RawMessage(c.args))
		for path, err := range map[string]error{"reference": refErr, "pipeline": pipeErr} {
			if got := err != nil; got != c.refused {
				t.Errorf("%s path, %s: error %v, want refused %v", path, c.args, err, c.refused)
			}
			if err != nil && !errors.Is(err, ErrInvalidArguments) {
				t.Errorf("%s path, %s: %v does not unwrap to ErrInvalidArguments", path, c.args, err)
			}
		}
		if refErr != nil && pipeErr != nil && refErr.Error() != pipeErr.Error() {
			t.Errorf("%s: the paths differ: %q and %q", c.args, refErr, pipeErr)
		}
		if c.refused && strings.Contains(c.args, "AMOUNT") && refErr != nil &&
			!strings.Contains(refErr.Error(), `differs from the declared argument "amount"`) {
			t.Errorf("%s: refused with %q, want the letter-case refusal", c.args, refErr)
		}
	}
}

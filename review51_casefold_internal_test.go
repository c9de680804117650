package mcpguard

import (
	"encoding/json"
	"testing"
)

// TestReview51CaseBlindAndSeeing: two positions where the same schema
// applies, one through a reference the letter-case check follows and one
// also through one it cannot (relative to the root's $id), are two nodes:
// the second is blind (a variant of any name the document declares is
// refused there), the first is not, whichever the check builds first.
func TestReview51CaseBlindAndSeeing(t *testing.T) {
	const schema = `{"$id":"http://example.com/dir/root.json","type":"object",
		"$defs":{"A":{"type":"object","properties":{"amount":{"type":"number"}}}},
		"properties":{
			"plain":{"$ref":"#/$defs/A"},
			"blind":{"$ref":"root.json#/$defs/A","allOf":[{"$ref":"#/$defs/A"}]}
		}}`
	// Built again and again: the order the check builds the two
	// positions in follows a map's, which varies.
	for range 20 {
		v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true})
		if err != nil {
			t.Fatalf("NewValidator: %v", err)
		}
		review40Verdicts(t, v, []review40Verdict{
			{`{"plain":{"amount":1}}`, false},
			{`{"plain":{"AMOUNT":1}}`, true},
			{`{"plain":{"PLAIN":1}}`, false}, // no name declared there
			{`{"blind":{"AMOUNT":1}}`, true},
			{`{"blind":{"PLAIN":1}}`, true}, // a name declared elsewhere
			{`{"blind":{"plain":1}}`, false},
		})
		if t.Failed() {
			return
		}
	}
}

// TestReview51CaseBlindOneName: a document that declares a single name
// makes a blind position refuse its variants too.
func TestReview51CaseBlindOneName(t *testing.T) {
	const schema = `{"$id":"http://example.com/dir/root.json","type":"object","$defs":{"x":{}},
		"properties":{"amount":{"$ref":"root.json#/$defs/x"}}}`
	v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	review40Verdicts(t, v, []review40Verdict{
		{`{"amount":{"AMOUNT":1}}`, true},
		{`{"amount":{"a_mount":1}}`, true},
		{`{"amount":{"amount":1}}`, false},
		{`{"amount":{"note":1}}`, false},
	})
}

// TestReview51CaseCheckNoneWhereNothingDeclared: a schema that declares no
// property anywhere gets no letter-case check, whatever it applies in
// place or admits: there is no name to have a variant of.
func TestReview51CaseCheckNoneWhereNothingDeclared(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","allOf":[{"type":"object"}]}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","patternProperties":{"^x":{"type":"object","allOf":[{}]}}}`,
		`{"type":"object","$defs":{"a":{"type":"object"}},"additionalProperties":{"$ref":"#/$defs/a"}}`,
	} {
		for _, lenient := range []bool{false, true} {
			var doc any
			if err := json.Unmarshal([]byte(schema), &doc); err != nil {
				t.Fatal(err)
			}
			n, err := newCaseCheck(doc, lenient)
			if err != nil || n != nil {
				t.Errorf("newCaseCheck(%s, lenient %v) = %v, %v; want no check", schema, lenient, n, err)
			}
		}
	}
}

// TestReview51CaseTuplesOfTwoLengths: where two tuples of different
// lengths apply to one array, each index gets the schemas that apply
// there: both heads where both reach, the shorter's items past its head.
func TestReview51CaseTuplesOfTwoLengths(t *testing.T) {
	obj := func(name string) string {
		return `{"type":"object","properties":{"` + name + `":{"type":"number","maximum":100}}}`
	}
	schema := `{"type":"object","properties":{"list":{"type":"array","allOf":[
		{"prefixItems":[` + obj("alpha") + `,` + obj("beta") + `]},
		{"prefixItems":[` + obj("gamma") + `],"items":` + obj("delta") + `}]}}}`
	v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	review40Verdicts(t, v, []review40Verdict{
		{`{"list":[{"ALPHA":1}]}`, true},
		{`{"list":[{"GAMMA":1}]}`, true},
		{`{"list":[{"DELTA":1}]}`, false}, // delta applies past the first element only
		{`{"list":[{},{"BETA":1}]}`, true},
		{`{"list":[{},{"DELTA":1}]}`, true},
		{`{"list":[{},{"GAMMA":1}]}`, false},
		{`{"list":[{},{},{"DELTA":1}]}`, true},
		{`{"list":[{},{},{"BETA":1}]}`, false},
	})
}

// TestReview51CaseTupleHeadFree: where a tuple's head declares nothing and
// its items do, the items' names are checked past the head only: at the
// head's index no schema declares them (nor bounds them), so their
// variants are free there as in any free-form object.
func TestReview51CaseTupleHeadFree(t *testing.T) {
	const schema = `{"type":"object","properties":{"list":{"type":"array",
		"prefixItems":[{"type":"object"}],
		"items":{"type":"object","properties":{"amount":{"type":"number","maximum":100}}}}}}`
	v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	review40Verdicts(t, v, []review40Verdict{
		{`{"list":[{"amount":1e6}]}`, false},
		{`{"list":[{"AMOUNT":1e6}]}`, false},
		{`{"list":[{},{"amount":1e6}]}`, true},
		{`{"list":[{},{"AMOUNT":1e6}]}`, true},
	})
}

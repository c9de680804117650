package mcpguard

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestReview55DeclaredMemberSeesOtherSchemas: the letter-case check must
// see every schema that applies to a member's value, also when the member
// is declared. JSON Schema applies to a member named in "properties" the
// patternProperties schemas whose pattern matches its name, and, in a
// schema that applies in place beside the one declaring it (an allOf
// branch, say), that schema's additionalProperties. The check followed
// only the "properties" schemas of a declared member, so that below it a
// variant of a name those other schemas declare ({"AMOUNT": 1e6} for
// "amount" with a maximum of 100) passed, in the default strict mode too
// (strict mode closes nothing below an in-place applicator, nor a schema
// that says "additionalProperties": true), and reached the handler, whose
// encoding/json reads it as amount 1e6. The same value spelt "amount" is
// refused, as the control case shows.
func TestReview55DeclaredMemberSeesOtherSchemas(t *testing.T) {
	const amount = `{"type":"object","properties":{"amount":{"type":"number","maximum":100}}}`
	const amountOpen = `{"type":"object","properties":{"amount":{"type":"number","maximum":100}},"additionalProperties":true}`
	for _, tc := range []struct {
		name    string
		schema  string
		lenient bool
	}{
		{"pattern_matches_declared_lenient", `{"type":"object","properties":{"order":{}},"patternProperties":{"^ord":` + amount + `}}`, true},
		{"pattern_matches_declared_strict", `{"type":"object","properties":{"order":{}},"patternProperties":{"^ord":` + amountOpen + `}}`, false},
		{"allOf_sibling_additional_strict", `{"type":"object","allOf":[{"properties":{"order":{}}},{"additionalProperties":` + amount + `}]}`, false},
		{"allOf_sibling_additional_lenient", `{"type":"object","allOf":[{"properties":{"order":{}}},{"additionalProperties":` + amount + `}]}`, true},
		{"properties_beside_allOf_additional", `{"type":"object","properties":{"order":{"type":"object"}},"allOf":[{"additionalProperties":` + amount + `}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewValidator(json.RawMessage(tc.schema), &ValidationOptions{Lenient: tc.lenient})
			if err != nil {
				t.Fatalf("NewValidator(%s): %v", tc.schema, err)
			}
			// Premise: the schema applies the maximum to order.amount.
			if _, err := v.check(json.RawMessage(`{"order":{"amount":1e6}}`)); !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("test premise: check({\"order\":{\"amount\":1e6}}) = %v, want INVALID_ARGUMENTS", err)
			}
			for _, raw := range []string{`{"order":{"AMOUNT":1e6}}`, `{"order":{"a_mount":1e6}}`} {
				if _, err := v.check(json.RawMessage(raw)); !errors.Is(err, ErrInvalidArguments) {
					t.Errorf("check(%s) = %v, want INVALID_ARGUMENTS (a letter-case variant of the declared amount)", raw, err)
				}
				if _, err := v.Validate(json.RawMessage(raw)); !errors.Is(err, ErrInvalidArguments) {
					t.Errorf("Validate(%s) = %v, want INVALID_ARGUMENTS", raw, err)
				}
			}
			// Names declared nowhere stay admitted where the schema admits them.
			if !tc.lenient && tc.name != "pattern_matches_declared_strict" {
				return
			}
			if _, err := v.check(json.RawMessage(`{"order":{"amount":5,"note":"x"}}`)); err != nil {
				t.Errorf("check of valid arguments: %v", err)
			}
		})
	}
}

// TestReview55StrictContainsCaseVariant: strict mode closes nothing below
// "contains" (closing a filter would change which elements it counts), so
// an object schema there admits undeclared names, and the letter-case
// check must run there as below an in-place applicator. newCaseCheck kept
// the check only for a schema that admits undeclared names itself, that
// applies others in place, or that has a reference it cannot follow: for
// a schema whose only open object schema sat below "contains" it returned
// no check at all, and {"list":[{"AMOUNT":1e6}]} passed a schema requiring
// some element's amount to be at most 100 (the handler reads amount 1e6),
// where {"list":[{"amount":1e6}]} is refused.
func TestReview55StrictContainsCaseVariant(t *testing.T) {
	const schema = `{"type":"object","properties":{"list":{"type":"array","contains":{"type":"object","properties":{"amount":{"type":"number","maximum":100}}}}}}`
	v, err := NewValidator(json.RawMessage(schema), nil)
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	if _, err := v.check(json.RawMessage(`{"list":[{"amount":1e6}]}`)); !errors.Is(err, ErrInvalidArguments) {
		t.Fatalf("test premise: check({\"list\":[{\"amount\":1e6}]}) = %v, want INVALID_ARGUMENTS", err)
	}
	for _, raw := range []string{`{"list":[{"AMOUNT":1e6}]}`, `{"list":[{"a-mount":1e6}]}`} {
		if _, err := v.check(json.RawMessage(raw)); !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("check(%s) = %v, want INVALID_ARGUMENTS (a letter-case variant of the declared amount)", raw, err)
		}
	}
	if _, err := v.check(json.RawMessage(`{"list":[{"amount":5,"note":"x"}]}`)); err != nil {
		t.Errorf("check of valid arguments: %v", err)
	}
}

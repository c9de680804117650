package mcpguard

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestCaseVariantOfADeclaredName: where a schema admits members it does
// not declare (lenient mode; an explicit additionalProperties or
// patternProperties in strict mode), a member whose name differs from a
// declared property's only in letter case passed validation unchecked:
// {"AMOUNT": 1e6} against "amount" with a maximum of 100. A raw handler
// that decodes the arguments with encoding/json into a struct field
// "amount" then read 1e6. Such a member is refused, on the fast path and
// on the reference path alike, with the same message; exact names, and
// names that fold to no declared property, pass as before.
func TestCaseVariantOfADeclaredName(t *testing.T) {
	const amount = `"amount":{"type":"number","maximum":100}`
	schemas := []struct {
		name    string
		schema  string
		lenient bool
	}{
		{"lenient", `{"type":"object","properties":{` + amount + `}}`, true},
		{"strict_additional_true", `{"type":"object","properties":{` + amount + `},"additionalProperties":true}`, false},
		{"strict_additional_schema", `{"type":"object","properties":{` + amount + `},"additionalProperties":{"type":"number"}}`, false},
		{"strict_pattern", `{"type":"object","properties":{` + amount + `},"patternProperties":{"^[A-Z]+$":{}}}`, false},
		{"lenient_nested", `{"type":"object","properties":{"order":{"type":"object","properties":{` + amount + `}}}}`, true},
		{"lenient_items", `{"type":"object","properties":{"lines":{"type":"array","items":{"type":"object","properties":{` + amount + `}}}}}`, true},
		{"lenient_ref", `{"type":"object","$defs":{"o":{"type":"object","properties":{` + amount + `}}},"properties":{"order":{"$ref":"#/$defs/o"}}}`, true},
		{"lenient_allof", `{"type":"object","allOf":[{"properties":{` + amount + `}}]}`, true},
	}
	wrap := func(name, args string) string {
		switch name {
		case "lenient_nested", "lenient_ref":
			return `{"order":` + args + `}`
		case "lenient_items":
			return `{"lines":[{"amount":1},` + args + `]}`
		}
		return args
	}
	for _, sc := range schemas {
		v, err := NewValidator(json.RawMessage(sc.schema), &ValidationOptions{Lenient: sc.lenient})
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		for _, tc := range []struct {
			args string
			bad  bool
		}{
			{`{"AMOUNT":1e6}`, true},
			{`{"Amount":1e6}`, true},
			{`{"amount":5}`, false},
			{`{"amount":5,"OTHER":1}`, false},
		} {
			args := wrap(sc.name, tc.args)
			_, refErr := v.Validate(json.RawMessage(args))
			_, pipeErr := v.check(json.RawMessage(args))
			for path, err := range map[string]error{"reference": refErr, "pipeline": pipeErr} {
				if sc.name == "strict_additional_schema" && tc.args == `{"amount":5,"OTHER":1}` {
					continue // OTHER is a number: passes either way
				}
				if got := err != nil; got != tc.bad {
					t.Errorf("%s, %s path, %s: error %v, want refused %v", sc.name, path, args, err, tc.bad)
				}
				if err != nil && !errors.Is(err, ErrInvalidArguments) {
					t.Errorf("%s, %s path, %s: %v does not unwrap to ErrInvalidArguments", sc.name, path, args, err)
				}
			}
			if refErr != nil && pipeErr != nil && refErr.Error() != pipeErr.Error() {
				t.Errorf("%s, %s: the paths differ: %q and %q", sc.name, args, refErr, pipeErr)
			}
		}
	}
	// Strict mode without an explicit opening refuses the name as unknown,
	// as before: no case check is built.
	v, err := NewValidator(json.RawMessage(`{"type":"object","properties":{`+amount+`}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.cases != nil {
		t.Errorf("a closed strict schema got a case check")
	}
	if _, err := v.check(json.RawMessage(`{"AMOUNT":1e6}`)); err == nil {
		t.Errorf("strict: AMOUNT passed")
	}
}

package mcpguard_test

import (
	"encoding/json"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
	"testing"

	"github.com/mcpguard/mcpguard"
)

func strictValidate(t *testing.T, schema, args string) error {
	t.Helper()
	v, err := mcpguard.NewValidator(json.RawMessage(schema), nil)
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	_, err = v.Validate(json.RawMessage(args))
	return err
}

// TestDraft07RefObjectClosed: in draft-07 the siblings of $ref are ignored,
// so strict mode closes the definition a $ref names: an unknown field
// reached through it is refused.
func TestDraft07RefObjectClosed(t *testing.T) {
	schema := `{"$schema":"http://json-schema.org/draft-07/schema#",
	 "type":"object",
	 "properties":{"refund":{"$ref":"#/definitions/Refund"}},
	 "definitions":{"Refund":{"type":"object","properties":{"amount":{"type":"number"}}}}}`
	if err := strictValidate(t, schema, `{"refund":{"amount":1,"sneaky":true}}`); err == nil {
		t.Fatal("strict mode let an unknown field through a draft-07 $ref")
	}
}

// TestDraft07RootRefClosed: the same with the $ref at the root (a common
// shape of generated draft-07 schemas).
func TestDraft07RootRefClosed(t *testing.T) {
	schema := `{"$schema":"http://json-schema.org/draft-07/schema#",
	 "$ref":"#/definitions/Args",
	 "definitions":{"Args":{"type":"object","properties":{"amount":{"type":"number"}}}}}`
	if err := strictValidate(t, schema, `{"amount":1,"sneaky":true}`); err == nil {
		t.Fatal("strict mode let an unknown field through a draft-07 root $ref")
	}
}

// TestFreeFormObjectThroughAnyOf: a free-form object ({"type":"object"},
// no declared fields) stays open in strict mode, written directly or
// reached through anyOf (an optional map).
func TestFreeFormObjectThroughAnyOf(t *testing.T) {
	direct := `{"type":"object","properties":{"meta":{"type":"object"}}}`
	if err := strictValidate(t, direct, `{"meta":{"k":"v"}}`); err != nil {
		t.Fatalf("direct free-form object refused: %v", err)
	}
	viaAnyOf := `{"type":"object","properties":{"meta":{"anyOf":[{"type":"object"},{"type":"null"}]}}}`
	if err := strictValidate(t, viaAnyOf, `{"meta":{"k":"v"}}`); err != nil {
		t.Fatalf("free-form object through anyOf refused: %v", err)
	}
}

// TestFreeFormObjectThroughRef: the same, reached through a $ref.
func TestFreeFormObjectThroughRef(t *testing.T) {
	schema := `{"type":"object","properties":{"meta":{"$ref":"#/$defs/Meta"}},"$defs":{"Meta":{"type":"object"}}}`
	if err := strictValidate(t, schema, `{"meta":{"k":"v"}}`); err != nil {
		t.Fatalf("free-form object through $ref refused: %v", err)
	}
}

// TestIfThenWithoutPropertiesOpen: an object constrained only by if/then
// declares no field, so strict mode leaves it open.
func TestIfThenWithoutPropertiesOpen(t *testing.T) {
	schema := `{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`
	if err := strictValidate(t, schema, `{"a":1,"b":2}`); err != nil {
		t.Fatalf("object constrained only by if/then refused: %v", err)
	}
}

// TestContainsNotClosed: contains is a filter like if: closing it would
// change which elements match and refuse a valid array.
func TestContainsNotClosed(t *testing.T) {
	schema := `{"type":"object","properties":{"lines":{"type":"array",
	  "items":{"type":"object","properties":{"kind":{"type":"string"},"amount":{"type":"number"}}},
	  "contains":{"type":"object","properties":{"kind":{"const":"refund"}},"required":["kind"]}}}}`
	if err := strictValidate(t, schema, `{"lines":[{"kind":"refund","amount":3}]}`); err != nil {
		t.Fatalf("valid array refused because contains was closed: %v", err)
	}
}

// TestCredentialEqual: a Credential is no longer comparable with == (its
// secret is held by a function, which fmt never prints), so Equal says
// whether two hold the same secret, and go-cmp uses it.
func TestCredentialEqual(t *testing.T) {
	a, b, c := mcpguard.NewCredential("s"), mcpguard.NewCredential("s"), mcpguard.NewCredential("t")
	if !a.Equal(b) || a.Equal(c) || !(mcpguard.Credential{}).Equal(mcpguard.NewCredential("")) {
		t.Errorf("Equal: same secret %v, other secret %v, zero %v; want true, false, true", a.Equal(b), a.Equal(c), (mcpguard.Credential{}).Equal(mcpguard.NewCredential("")))
	}
	x := mcpguard.Identity{Principal: &policy.Principal{Subject: "ann"}, Credential: a}
	y := mcpguard.Identity{Principal: x.Principal, Credential: b}
	if !cmp.Equal(x, y) {
		t.Errorf("cmp.Equal of identities with the same secret = false")
	}
}

package mcpguard_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard"
)

// TestReview40StrictClosesSchemasUnderExtensions: strict mode closes the
// object schemas a $ref reaches, but inside a resource embedded with its
// own id (draft 2020-12's "$id", draft 4's "id"), where a "#/..." reference
// resolves against that resource, it cannot follow the reference; a
// target under a keyword the validator does not apply ("components") was
// then never closed, and an unknown field in it passed strict mode:
// {"r":{"q":{"inner":{"amount":1,"sneaky":true}}}}. Such keywords' schemas
// are now closed as definitions are. Instances (const, default) are left
// as written, and declared fields still pass.
func TestReview40StrictClosesSchemasUnderExtensions(t *testing.T) {
	const inner = `{"type":"object","properties":{"inner":{"type":"object","properties":{"amount":{"type":"number"}}}}}`
	for _, tc := range []struct {
		name, schema string
		refused      []string
		accepted     []string
	}{
		{
			name: "embedded_id_components",
			schema: `{"type":"object","properties":{"r":{"$ref":"urn:example:b"}},
				"$defs":{"b":{"$id":"urn:example:b","type":"object","properties":{"q":{"$ref":"#/components/R"}},
				"components":{"R":` + inner + `}}}}`,
			refused:  []string{`{"r":{"q":{"inner":{"amount":1,"sneaky":true}}}}`, `{"r":{"q":{"sneaky":true}}}`},
			accepted: []string{`{"r":{"q":{"inner":{"amount":1}}}}`},
		},
		{
			name: "embedded_id_components_list",
			schema: `{"type":"object","properties":{"r":{"$ref":"urn:example:b"}},
				"$defs":{"b":{"$id":"urn:example:b","type":"object","properties":{"q":{"$ref":"#/x-list/0"}},
				"x-list":[` + inner + `]}}}`,
			refused:  []string{`{"r":{"q":{"inner":{"amount":1,"sneaky":true}}}}`},
			accepted: []string{`{"r":{"q":{"inner":{"amount":1}}}}`},
		},
		{
			name: "draft4_embedded_id_components",
			schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"r":{"$ref":"#/definitions/b"}},
				"definitions":{"b":{"id":"urn:example:b","type":"object","properties":{"q":{"$ref":"#/components/R"}},
				"components":{"R":` + inner + `}}}}`,
			refused: []string{`{"r":{"q":{"inner":{"amount":1,"sneaky":true}}}}`, `{"r":{"q":{"amount":1}}}`,
				`{"r":{"q":{"sneaky":true}}}`},
			accepted: []string{`{"r":{"q":{"inner":{"amount":1}}}}`},
		},
		{
			name: "instances_untouched",
			schema: `{"type":"object","properties":{"c":{"const":{"properties":{"a":{"properties":{"b":1}}}}},
				"d":{"type":"object","default":{"properties":{}},"properties":{"e":{"type":"number"}}}},
				"x-note":{"properties":{"a":{}}}}`,
			refused:  []string{`{"c":{"properties":{"a":1}}}`, `{"d":{"f":1}}`},
			accepted: []string{`{"c":{"properties":{"a":{"properties":{"b":1}}}}}`, `{"d":{"e":1}}`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := mcpguard.NewValidator(json.RawMessage(tc.schema), nil)
			if err != nil {
				t.Fatalf("NewValidator: %v", err)
			}
			for _, args := range tc.refused {
				if _, err := v.Validate(json.RawMessage(args)); err == nil {
					t.Errorf("Validate(%s) = nil, want a refusal (strict mode)", args)
				}
			}
			for _, args := range tc.accepted {
				if _, err := v.Validate(json.RawMessage(args)); err != nil {
					t.Errorf("Validate(%s) = %v, want nil", args, err)
				}
			}
		})
	}
}

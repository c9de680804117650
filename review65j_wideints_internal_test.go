package mcpguard

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestReview65jRoundedThroughRefs: roundedInteger follows a local $ref
// (cycles included) and allOf, anyOf and oneOf to the "integer" that
// types a value, and refuses nothing a "number" or unresolvable $ref
// types.
func TestReview65jRoundedThroughRefs(t *testing.T) {
	const schema = `{"type":"object","$defs":{
		"acct":{"type":"integer"},
		"alias":{"$ref":"#/$defs/acct"},
		"loop":{"$ref":"#/$defs/loop2"},"loop2":{"$ref":"#/$defs/loop"},
		"node":{"type":"object","properties":{"id":{"$ref":"#/$defs/acct"},
			"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}},
		"amount":{"type":"number"}},
	"properties":{
		"to":{"$ref":"#/$defs/alias"},
		"maybe":{"anyOf":[{"type":"null"},{"type":"integer"}]},
		"both":{"allOf":[{"minimum":1},{"type":"integer"}]},
		"one":{"oneOf":[{"type":"string"},{"$ref":"#/$defs/acct"}]},
		"tree":{"$ref":"#/$defs/node"},
		"loop":{"$ref":"#/$defs/loop"},
		"far":{"$ref":"https://example.com/acct.json"},
		"amount":{"$ref":"#/$defs/amount"},
		"self":{"$ref":"#"}}}`
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	s := intSchema(m)
	for raw, want := range map[string][]string{
		`{"to":12345678901234567}`:                                {"to"},
		`{"maybe":12345678901234567}`:                             {"maybe"},
		`{"both":12345678901234567}`:                              {"both"},
		`{"one":12345678901234567}`:                               {"one"},
		`{"tree":{"kids":[{"kids":[{"id":12345678901234567}]}]}}`: {"tree", "kids", "0", "kids", "0", "id"},
		`{"self":{"self":{"to":12345678901234567}}}`:              {"self", "self", "to"},
		`{"loop":12345678901234567}`:                              nil,
		`{"far":12345678901234567}`:                               nil,
		`{"amount":12345678901234567}`:                            nil,
		`{"to":9007199254740994,"tree":{"id":9007199254740994}}`:  nil,
	} {
		got, ok := roundedInteger(json.RawMessage(raw), s)
		if ok != (want != nil) || !slices.Equal(got, want) {
			t.Errorf("roundedInteger(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

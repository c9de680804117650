package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review38Strict compiles schema in strict mode (nil options), failing the
// test on an error or a panic: a schema the JSON Schema compiler accepts
// must give a validator, since a tool is registered with it.
func review38Strict(t *testing.T, schema string) (v *Validator) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("NewValidator(%s, nil) panicked: %v", schema, p)
		}
	}()
	v, err := NewValidator(json.RawMessage(schema), nil)
	if err != nil {
		t.Fatalf("NewValidator(%s, nil) = %v; want a validator", schema, err)
	}
	return v
}

// review38Case is one set of arguments and whether strict mode accepts it.
type review38Case struct {
	raw    string
	accept bool
}

// review38Verdicts checks each case against v on both of the pipeline's
// paths (check, which may take the fast path, and Validate).
func review38Verdicts(t *testing.T, v *Validator, cases []review38Case) {
	t.Helper()
	verdict := func(err error) string {
		if err == nil {
			return "accepted"
		}
		return fmt.Sprintf("refused (%v)", err)
	}
	for _, tc := range cases {
		want := "accepted"
		if !tc.accept {
			want = "refused"
		}
		for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
			_, err := f(json.RawMessage(tc.raw))
			if got := verdict(err); (err == nil) != tc.accept {
				t.Errorf("%s(%s) %s; want %s", which, tc.raw, got, want)
			}
		}
	}
}

// A definition that declares no field stays open in strict mode however
// many properties name it, and one that declares fields is closed
// wherever it is named. Strict mode remembers per schema whether its
// in-place applicators declare fields; pins that the remembered answer is
// the computed one, both "no" and "yes", when a second property looks it up:
// otherwise the second free-form property would refuse every field, or the
// second reference to a declaring definition would let unknown fields in.
func TestReview38DefinitionsNamedTwice(t *testing.T) {
	v := review38Strict(t, `{"type":"object",
		"properties":{
			"x":{"$ref":"#/$defs/Any"},"y":{"$ref":"#/$defs/Any"},
			"w1":{"$ref":"#/$defs/Refund"},"w2":{"$ref":"#/$defs/Refund"}},
		"$defs":{
			"Any":{"type":"object"},
			"Refund":{"type":"object","properties":{"amount":{"type":"number"}}}}}`)
	review38Verdicts(t, v, []review38Case{
		{`{"x":{"k":1},"y":{"k":1}}`, true},
		{`{"w1":{"amount":1},"w2":{"amount":2}}`, true},
		{`{"w1":{"amount":1,"sneaky":true}}`, false},
		{`{"w2":{"amount":1,"sneaky":true}}`, false},
		{`{"z":1}`, false},
	})
}

// A field declared by dependentSchemas counts as declared: strict mode
// accepts it where the schema applies (the field it depends on is there)
// and still refuses fields nobody declares. Without this, a schema like
// "cvv is allowed when card is given" would refuse cvv in strict mode, as
// additionalProperties does not see into dependentSchemas.
func TestReview38DependentSchemasDeclareFields(t *testing.T) {
	v := review38Strict(t, `{"type":"object",
		"properties":{"card":{"type":"string"}},
		"dependentSchemas":{"card":{"properties":{"cvv":{"type":"string"}}}}}`)
	review38Verdicts(t, v, []review38Case{
		{`{"card":"4111"}`, true},
		{`{"card":"4111","cvv":"123"}`, true},
		{`{"card":"4111","cvv":"123","sneaky":true}`, false},
		// Without card, the dependent schema does not apply: cvv is a
		// field nothing declares here.
		{`{"cvv":"123"}`, false},
	})
}

// A $ref whose JSON pointer steps through an array ("#/$defs/opts/anyOf/0")
// is followed like any other: the object schemas inside its target are
// closed. Pins the array step of the pointer, index 0 and a later index
// included; a reference it could not follow would leave the nested object
// open to unknown fields.
func TestReview38RefThroughArrayIsFollowed(t *testing.T) {
	for _, tc := range []struct{ name, ref string }{
		{"index_0", "#/$defs/opts/anyOf/0"},
		{"index_1", "#/$defs/opts/anyOf/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := `{"type":"object","properties":{"inner":{"type":"object","properties":{"amount":{"type":"number"}}}}}`
			v := review38Strict(t, `{"type":"object",
				"properties":{"r":{"$ref":"`+tc.ref+`"}},
				"$defs":{"opts":{"anyOf":[`+inner+`,`+inner+`]}}}`)
			review38Verdicts(t, v, []review38Case{
				{`{"r":{"inner":{"amount":1}}}`, true},
				{`{"r":{"inner":{"amount":1,"sneaky":true}}}`, false},
				{`{"r":{"inner":{"amount":1}},"sneaky":true}`, false},
			})
		})
	}
}

// A definition nobody uses may hold a $ref whose pointer steps through an
// array with an index that is not there (past the end, negative, not a
// number): the JSON Schema compiler never looks at it, so the schema is
// valid. Strict mode must build the validator (no panic at tool
// registration) and must not follow such a reference elsewhere: following
// "#/anyOf/a" to the first branch would close the objects inside that
// branch and refuse a field the schema allows.
func TestReview38UnusedDefinitionWithBadArrayIndex(t *testing.T) {
	for _, tc := range []struct{ name, ref string }{
		{"past_end", "#/anyOf/1"},
		{"negative", "#/anyOf/-1"},
		{"not_a_number", "#/anyOf/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := review38Strict(t, `{"type":"object",
				"properties":{"p":{"type":"object"}},
				"anyOf":[{"properties":{"p":{"properties":{"a":{"type":"integer"}}}}}],
				"$defs":{"unused":{"$ref":"`+tc.ref+`"}}}`)
			review38Verdicts(t, v, []review38Case{
				// b is allowed: the object inside the anyOf branch is
				// not closed.
				{`{"p":{"a":1,"b":2}}`, true},
				{`{"p":{"a":"x"}}`, false},
				{`{"q":1}`, false},
			})
		})
	}
}

// A recursive schema (a tree whose children are the definition itself)
// builds in strict mode, and the definition is closed at every depth: an
// unknown field three levels down is refused as at the top. Strict mode
// walks each $ref target once; walking it again at every reference would
// never end on a schema that names itself.
func TestReview38RecursiveDefinition(t *testing.T) {
	v := review38Strict(t, `{"type":"object",
		"properties":{"tree":{"$ref":"#/$defs/node"}},
		"$defs":{"node":{"type":"object","properties":{
			"name":{"type":"string"},
			"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`)
	review38Verdicts(t, v, []review38Case{
		{`{"tree":{"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]}}`, true},
		{`{"tree":{"name":"a","sneaky":true}}`, false},
		{`{"tree":{"name":"a","children":[{"name":"b","children":[{"name":"c","sneaky":true}]}]}}`, false},
	})
}

// A "$id" decides how strict mode reads local references. One on the root
// only names the document: "#/$defs/..." still points into it, so a
// property naming a free-form definition stays open and one naming a
// declaring definition is closed. One on a schema inside the document (here
// an array's prefixItems entry) starts a resource of its own, against which
// its "#/..." references resolve: strict mode cannot follow them and treats
// them as declaring, so the object refuses unknown fields even though the
// root's definition of the same name is free-form.
func TestReview38IDsAndLocalRefs(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		cases        []review38Case
	}{
		{
			name: "root_id",
			schema: `{"$id":"https://example.com/tool.json","type":"object",
				"properties":{"x":{"$ref":"#/$defs/Any"},"w":{"$ref":"#/$defs/Refund"}},
				"$defs":{"Any":{"type":"object"},
					"Refund":{"type":"object","properties":{"amount":{"type":"number"}}}}}`,
			cases: []review38Case{
				{`{"x":{"k":1}}`, true},
				{`{"w":{"amount":1}}`, true},
				{`{"w":{"amount":1,"sneaky":true}}`, false},
			},
		},
		{
			name: "id_in_array",
			schema: `{"type":"object",
				"properties":{"r":{"type":"array","prefixItems":[
					{"$id":"urn:example:b","type":"object",
					 "properties":{"q":{"$ref":"#/$defs/Inner"}},
					 "$defs":{"Inner":{"type":"object","properties":{"amount":{"type":"number"}}}}}]}},
				"$defs":{"Inner":{}}}`,
			cases: []review38Case{
				{`{"r":[{"q":{"amount":1}}]}`, true},
				{`{"r":[{"q":{"amount":1,"sneaky":true}}]}`, false},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			review38Verdicts(t, review38Strict(t, tc.schema), tc.cases)
		})
	}
}

// review38ConfirmGuard returns a Guard whose tool "wipe" needs confirmation,
// with a Signer that remembers nonces in nonces (nil: in memory), and that
// Signer.
func review38ConfirmGuard(t *testing.T, nonces confirm.NonceStore, protocolErrors bool) (*Guard, *confirm.Signer) {
	t.Helper()
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}},
		&confirm.Options{Nonces: nonces})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"wipe"}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(pol, AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return nil, nil }),
		&Options{Confirmer: s, ProtocolErrors: protocolErrors,
			Audit: audit.SinkFunc(func(context.Context, *audit.Event) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	return g, s
}

// review38Declined returns bob's call of "wipe" that comes back with a
// state s issued for it and the human's answer "decline".
func review38Declined(t *testing.T, s *confirm.Signer) (*call, *mcp.CallToolRequest) {
	t.Helper()
	raw := json.RawMessage(`{"target":"db"}`)
	hash, err := confirm.ArgsSHA256(raw)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st, err := s.Issue(now, confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash})
	if err != nil {
		t.Fatal(err)
	}
	c := &call{name: "wipe", raw: raw, id: &Identity{Principal: &policy.Principal{Subject: "bob"}}, start: now, corr: "corr-1"}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "wipe", Arguments: raw, RequestState: st,
		InputResponses: mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "decline"}}}}
	return c, req
}

// review38StepOutcome is what confirmStep decided: whether the call ends
// there with a result, whether that result is an error, and the denial it
// left for the caller (its code and message).
type review38StepOutcome struct {
	Done, ResultIsError bool
	Code, Message       string
}

func review38Outcome(res *mcp.CallToolResult, done bool, c *call) review38StepOutcome {
	o := review38StepOutcome{Done: done}
	if res != nil {
		o.ResultIsError = res.IsError
	}
	if c.denial != nil {
		o.Code, o.Message = string(c.denial.Code), c.denial.Message
	}
	return o
}

// A decline ends the call with "the user did not confirm" as a tool error
// result; a server that wants protocol errors gets no result from the
// step but the denial, which the pipeline then sends as a JSON-RPC error
// (the result would reach such a client as a successful response).
func TestReview38DeclineResultOrProtocolError(t *testing.T) {
	declined := "the user did not confirm; the tool was not run"
	for _, tc := range []struct {
		name           string
		protocolErrors bool
		want           review38StepOutcome
	}{
		{"tool_result", false, review38StepOutcome{Done: true, ResultIsError: true, Code: string(CodeConfirmationRequired), Message: declined}},
		{"protocol_errors", true, review38StepOutcome{Code: string(CodeConfirmationRequired), Message: declined}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, s := review38ConfirmGuard(t, nil, tc.protocolErrors)
			c, req := review38Declined(t, s)
			res, done := g.confirmStep(context.Background(), req, c, ToolOptions{}, nil)
			if diff := cmp.Diff(tc.want, review38Outcome(res, done, c)); diff != "" {
				t.Errorf("confirmStep(declined, ProtocolErrors=%v) (-want +got):\n%s", tc.protocolErrors, diff)
			}
		})
	}
}

// A decline uses its state up; when that fails (here another round used
// the state first: the nonce store says it is not the first use), the
// step does not end the call with a decline but leaves the refusal of the
// state to the caller, which sends it. Ending the call there would send
// no result at all (the step has none to give) and, in the stand-alone
// Confirm step, dereference it.
func TestReview38DeclineOfUsedState(t *testing.T) {
	usedAlready := confirm.NonceStoreFunc(func(context.Context, string, time.Time, time.Time) (bool, error) {
		return false, nil
	})
	g, s := review38ConfirmGuard(t, usedAlready, false)
	c, req := review38Declined(t, s)
	res, done := g.confirmStep(context.Background(), req, c, ToolOptions{}, nil)
	want := review38StepOutcome{Code: string(CodeConfirmationRequired),
		Message: "the confirmation is missing, expired, already used or for another call; call the tool again to be asked"}
	if diff := cmp.Diff(want, review38Outcome(res, done, c)); diff != "" {
		t.Errorf("confirmStep(declined, state used meanwhile) (-want +got):\n%s", diff)
	}
}

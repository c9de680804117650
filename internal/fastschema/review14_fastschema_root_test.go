package fastschema_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestReview14AgainstRootValidator compares the fast path with the
// reference path of mcpguard's own Validator (Validate never takes the fast
// path), so that the oracle of these tests cannot drift from the pipeline
// it stands for. In strict mode the fast path gets the schema closed as
// the root closes a schema of the subset (closeSubset).
func TestReview14AgainstRootValidator(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	opts := []fastschema.Options{{MaxStringBytes: 64}, {MaxStringBytes: 3, AllowControlChars: true}, {MaxStringBytes: 1}}
	compared := 0
	for i := range 900 {
		src, args := fastschema.GenerateCase(r)
		o := opts[i%len(opts)]
		strict := i%2 == 0
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		if strict {
			closeSubset(doc)
		}
		fast, ok := fastschema.Compile(doc, o)
		if !ok {
			continue
		}
		v, err := mcpguard.NewValidator(json.RawMessage(src), &mcpguard.ValidationOptions{
			Lenient: !strict, MaxStringBytes: o.MaxStringBytes, AllowControlChars: o.AllowControlChars})
		if err != nil {
			if src == "false" {
				continue // mcpguard refuses a false schema outright
			}
			t.Fatalf("NewValidator(%s): %v, but fastschema compiled it", src, err)
		}
		for range 15 {
			in := args()
			got := fast.Validate(in)
			_, want := v.Validate(in)
			if got != nil && got.Message == "arguments are nested too deeply" {
				continue // the documented deviation
			}
			if want != nil && strings.Contains(want.Error(), "with an exponent beyond") {
				continue // the root's bound where v6 runs (TestReview14NumberBoundOnlyWhereV6Runs)
			}
			if (got == nil) != (want == nil) {
				t.Fatalf("schema %s (strict %v, %+v):\nfast Validate(%q) = %v; mcpguard Validator.Validate = %v", src, strict, o, in, got, want)
			}
			compared++
		}
	}
	if compared < 5000 {
		t.Errorf("only %d documents compared", compared)
	}
}

// closeSubset does to a schema of the fast subset what mcpguard's strict
// mode does: an object schema with properties and no additionalProperties
// gets "additionalProperties": false.
func closeSubset(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if p, ok := m["properties"].(map[string]any); ok {
		for _, sub := range p {
			closeSubset(sub)
		}
		if _, ok := m["additionalProperties"]; !ok {
			m["additionalProperties"] = false
		}
	}
	closeSubset(m["items"])
}

// TestReview14NumberBoundOnlyWhereV6Runs pins a difference mcpguard
// documents (root doc.go): number literals beyond 128 characters or an
// exponent of ±400 are refused only where v6 checks the arguments; the
// fast path compares them exactly, in linear time, and takes them.
func TestReview14NumberBoundOnlyWhereV6Runs(t *testing.T) {
	const src = `{"type":"object","properties":{"n":{"type":"number","maximum":1e500}}}`
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	fast, ok := fastschema.Compile(doc, fastschema.Options{MaxStringBytes: 64})
	if !ok {
		t.Fatal("Compile refused")
	}
	v, err := mcpguard.NewValidator(json.RawMessage(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"1e401", "1" + strings.Repeat("0", 200)} {
		in := []byte(`{"n":` + n + `}`)
		if e := fast.Validate(in); e != nil {
			t.Errorf("fast Validate(%.20s...) = %v, want nil", in, e)
		}
		if _, err := v.Validate(in); err == nil {
			t.Errorf("Validator.Validate(%.20s...) = nil, want the number bound", in)
		}
	}
}

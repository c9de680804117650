package fastschema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// review20Scalars replace one value of a valid document.
var review20Scalars = []string{
	`0`, `-0`, `1`, `1.0`, `1e0`, `10e-1`, `0.1`, `0.3`, `-1`, `-1.5`, `2.5`, `100`, `1e2`, `1E+2`, `1e-20`, `1e400`, `-1e400`, `1e-400`,
	`123456789012345678901234567890`, `9007199254740993`, `3`, `5`, `1e401`, `true`, `false`, `null`,
	`""`, `"a"`, `"ab"`, `"abc"`, `"é"`, `"😀"`, `"\u0000"`, `"\u007f"`, `"\t"`, `"K"`, `"\u212a"`, `"1"`, `"2024-02-29"`, `"2023-02-29"`,
	`"2024-01-01T23:59:60Z"`, `"23:59:60+00:00"`, `"a@b.com"`, `"1.2.3.4"`, `"::1"`, `"example.com."`, `"http://x.com/"`, `"http://x/ y"`,
	`"123e4567-e89b-12d3-a456-426614174000"`, `"CUST-00001"`, `"` + strings.Repeat("a", 65) + `"`,
}

// oneBadValue compares the fast path's message and pointer with the
// reference's (mcpguard's lenient Validator) on documents made from a
// valid one by replacing one scalar value: every problem, if any, is then
// at that one value, where both must name the same one.
func oneBadValue(t *testing.T, r *rand.Rand) (compared int) {
	src, args := fastschema.GenerateCase(r)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	fast, ok := fastschema.Compile(doc, fastschema.Options{MaxStringBytes: 64})
	if !ok {
		return 0
	}
	v, err := mcpguard.NewValidator(json.RawMessage(src), &mcpguard.ValidationOptions{Lenient: true, MaxStringBytes: 64})
	if err != nil {
		return 0
	}
	for range 40 {
		in := args()
		if _, err := v.Validate(in); err != nil {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var tree any
		if dec.Decode(&tree) != nil {
			continue
		}
		// The paths of the scalar values.
		var leaves [][]string
		var walk func(x any, path []string)
		walk = func(x any, path []string) {
			switch x := x.(type) {
			case map[string]any:
				for k, sub := range x {
					walk(sub, append(path[:len(path):len(path)], k))
				}
			case []any:
				for i, sub := range x {
					walk(sub, append(path[:len(path):len(path)], strings.Repeat("#", i+1)))
				}
			default:
				leaves = append(leaves, path)
			}
		}
		walk(tree, nil)
		if len(leaves) == 0 {
			continue
		}
		path := leaves[r.IntN(len(leaves))]
		if strings.ContainsAny(strings.Join(path, ""), "~/") {
			continue // the reference does not escape its pointer
		}
		// Replace the value at path.
		cur := tree
		for i, tok := range path {
			last := i == len(path)-1
			switch x := cur.(type) {
			case map[string]any:
				if last {
					x[tok] = json.RawMessage(review20Scalars[r.IntN(len(review20Scalars))])
				}
				cur = x[tok]
			case []any:
				j := len(tok) - 1
				if last {
					x[j] = json.RawMessage(review20Scalars[r.IntN(len(review20Scalars))])
				}
				cur = x[j]
			}
		}
		bad, err := json.Marshal(tree)
		if err != nil {
			t.Fatal(err)
		}
		e := fast.Validate(bad)
		_, ref := v.Validate(bad)
		if (e == nil) != (ref == nil) {
			t.Fatalf("schema %s:\nfast Validate(%s) = %v; reference %v", src, bad, e, ref)
		}
		if ref == nil {
			continue
		}
		var de *mcpguard.DenialError
		if !errors.As(ref, &de) {
			t.Fatalf("reference Validate(%s) = %v", bad, ref)
		}
		if strings.Contains(e.Message, "…") {
			continue // a name cut at 64 bytes
		}
		wantPtr, _ := de.Details["field"].(string)
		if e.Message != de.Message || e.Pointer != wantPtr {
			t.Fatalf("schema %s:\nfast Validate(%s) = %q at %q\nreference             %q at %q", src, bad, e.Message, e.Pointer, de.Message, wantPtr)
		}
		compared++
	}
	return compared
}

// TestReview20OneBadValue runs oneBadValue on random schemas.
func TestReview20OneBadValue(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1))
	compared := 0
	for range 500 {
		compared += oneBadValue(t, r)
	}
	if compared < 150 {
		t.Errorf("only %d refused documents compared", compared)
	}
}

// FuzzReview20OneBadValue is TestReview20OneBadValue from any seed.
func FuzzReview20OneBadValue(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		oneBadValue(t, rand.New(rand.NewPCG(seed, 20)))
	})
}

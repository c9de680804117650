package mcpguard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/foldkey"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview26bOneDuplicateSameMessage: a document whose one problem is a
// pair of names that fold alike (foldkey.AppendName) gets the same message
// on the fast path and the reference path, which names the later key of
// the pair. The fast path named the undeclared key of a pair with a
// declared one even when the declared key came second ({"a_mount":1,
// "amount":2} where the schema admits "a_mount"), and, in an object of
// over 16 undeclared keys, either key of the pair (its sort by hash was
// not stable).
func TestReview26bOneDuplicateSameMessage(t *testing.T) {
	schemas := []struct {
		src     string
		lenient bool
	}{
		{`{"type":"object","properties":{"amount":{"type":"integer","maximum":100}}}`, true},
		{`{"type":"object","properties":{"amount":{"type":"integer","maximum":100}},"additionalProperties":true}`, false},
		{`{"type":"object","properties":{"amount":{"type":"integer"},"user_id":{"type":"string"},"userid":{"type":"string"}}}`, true},
	}
	var many []string
	for i := range 20 {
		many = append(many, `"k`+strings.Repeat("x", i)+`":1`)
	}
	m := strings.Join(many, ",")
	inputs := []string{
		`{"a_mount":1,"amount":2}`,
		`{"amount":1,"a_mount":2}`,
		`{"a\u005fmount":1,"amount":2}`,
		`{"\u0041MOUNT":1,"amount":2}`,
		`{"-AMOUNT-":1,"amount":2,"x":3}`,
		`{"_":1,"-":2}`,
		`{"":1,"_":2}`,
		`{"u_s_e_r_i_d":1,"userid":"a"}`,
		`{"user_id":"a","u_s_e_r_i_d":1}`,
		`{` + m + `,"a":1,"_a":2}`,
		`{` + m + `,"_a":1,"a":2}`,
		`{"_a":1,` + m + `,"a":2}`,
		`{"a":1,` + m + `,"-A":2}`,
		`{` + m + `,"a_mount":1,"amount":2}`,
		`{` + m + `,"amount":1,"a_mount":2}`,
		`{"a_mount":1,` + m + `,"amount":2}`,
		// Two pairs: the reference names the first key to repeat one.
		`{` + m + `,"b":1,"a":1,"_b":2,"A":2}`,
		`{"a":1,"b":1,` + m + `,"_b":2,"A":2}`,
		`{` + m + `,"b":1,"a_mount":1,"_b":2,"amount":2}`,
	}
	for _, s := range schemas {
		v, err := NewValidator(json.RawMessage(s.src), &ValidationOptions{Lenient: s.lenient})
		if err != nil {
			t.Fatal(err)
		}
		if v.fast == nil {
			t.Fatalf("test premise: %s should run the fast path", s.src)
		}
		ref := *v
		ref.fast = nil
		for _, in := range inputs {
			_, errFast := v.check(json.RawMessage(in))
			_, errRef := ref.check(json.RawMessage(in))
			var fast, want *DenialError
			if !errors.As(errFast, &fast) || !errors.As(errRef, &want) {
				t.Fatalf("%s: %.60q: fast %v, reference %v; want both refused", s.src, in, errFast, errRef)
			}
			if !strings.HasSuffix(want.Message, " appears twice") {
				t.Fatalf("test premise: %.60q: reference %q, want a duplicate", in, want.Message)
			}
			if fast.Message != want.Message {
				t.Errorf("%s: %.60q:\nfast      %q\nreference %q", s.src, in, fast.Message, want.Message)
			}
		}
	}
}

// FuzzReview26bArgNamesAlike: policy.MapArgs reads a field as unreadable
// exactly when another key is one name with it to foldkey.EqualName, the
// rule the validator's duplicate check applies.
func FuzzReview26bArgNamesAlike(f *testing.F) {
	for _, p := range [][2]string{
		{"amount", "A_MOUNT"}, {"_", ""}, {"-", "_"}, {"\u212a-", "_k"}, {"\xff_", "\xc3"},
		{"\xc3_\xa9", "é"}, {"\u017feats", "S-EATS"}, {"ß", "ẞ"}, {"a\x00", "A\x00_"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			return
		}
		_, ok := policy.MapArgs{a: 1.0, b: 2.0}.Number(b)
		if alike := foldkey.EqualName([]byte(a), []byte(b)); ok == alike {
			t.Fatalf("MapArgs{%+q, %+q}.Number(%+q) ok = %v; foldkey.EqualName = %v", a, b, b, ok, alike)
		}
	})
}

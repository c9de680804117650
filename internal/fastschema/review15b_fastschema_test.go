package fastschema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
)

// TestReview15bNumberBoundPrecedence: the reference pipeline refuses a
// duplicate key, then malformed JSON or trailing data, then a document
// that is not an object, and only then an out-of-range number literal or
// an overlong string, wherever each is. The fast path reads the document
// once, in order, and met the literal (or string) first: it must still
// answer with the reference's message and pointer (for a duplicate, its
// own wording of the same refusal). Each document has one
// content problem, so the reference's answer does not depend on its map
// order.
func TestReview15bNumberBoundPrecedence(t *testing.T) {
	fast, v := review15Root(t, `{"type":"object","properties":{"n":{"type":"number"},"s":{"type":"string"},"a":{},"x":{}},"additionalProperties":false}`)
	if fast == nil {
		t.Fatal("Compile refused")
	}
	long := `"` + strings.Repeat("x", 65537) + `"`
	for _, in := range []string{
		// not an object
		`1e401`, `-0e401`, `[1e401]`, `[[0.` + strings.Repeat("0", 130) + `1]]`, long, `[` + long + `]`,
		`1e401 x`, `[1e401,]`,
		// malformed after the literal
		`{"n":1e401,"s":}`, `{"a":[1e401,1,}`, `{"n":1E+401`, `{"s":` + long + `,"n":}`,
		// trailing data
		`{"n":1e401} x`, `{"n":1e401}{}`, `{"s":` + long + `} 1`,
		// a duplicate key after the literal, or holding it
		`{"n":1e401,"n":1}`, `{"n":1e401,"x":{"y":1,"y":2}}`, `{"x":{"y":1e999,"y":2}}`,
		`{"a":[1e401],"a":[]}`, `{"s":` + long + `,"s":""}`,
		// one problem only: the same on both paths already
		`{"n":1e401}`, `{"n":-0e401}`, `{"a":{"b":[1,2,{"c":1e-401}]}}`, `{"n":"1e401"}`,
		`{"n":0.` + strings.Repeat("0", 400) + `1}`,
	} {
		got := fast.Validate([]byte(in))
		_, want := v.Validate([]byte(in))
		var de *mcpguard.DenialError
		if !errors.As(want, &de) {
			t.Fatalf("reference Validate(%.60s) = %v, want a refusal", in, want)
		}
		wantPtr, _ := de.Details["field"].(string)
		if dup := " appears twice"; strings.HasSuffix(de.Message, dup) {
			// The fast path names a duplicate by its path (and points at
			// it), the reference by its key alone: the same refusal.
			if got == nil || !strings.HasSuffix(got.Message, dup) {
				t.Errorf("Validate(%.60s):\nfast      %v\nreference %q", in, got, de.Message)
			}
			continue
		}
		if got == nil || got.Message != de.Message || got.Pointer != wantPtr {
			t.Errorf("Validate(%.60s):\nfast      %v\nreference %q at %q", in, got, de.Message, wantPtr)
		}
	}
}

// TestReview15bNumberBoundSpellings pins the bound on the spellings of a
// zero and of tiny numbers: -0e400 and 1E+400 are in, -0e401 and a literal
// of 400 zeros after the point are out (it is too long), and a literal in
// a string or a key is no number.
func TestReview15bNumberBoundSpellings(t *testing.T) {
	fast, v := review15Root(t, `{"type":"object"}`)
	for _, tc := range []struct {
		in    string
		valid bool
	}{
		{`{"n":-0e400}`, true}, {`{"n":-0E-400}`, true}, {`{"n":1E+400}`, true}, {`{"n":-0e401}`, false},
		{`{"n":0e-401}`, false}, {`{"n":0.` + strings.Repeat("0", 400) + `1}`, false},
		{`{"n":0.` + strings.Repeat("0", 125) + `1}`, true},
		{`{"n":"1e401"}`, true}, {`{"1e401":1}`, true}, {`{"1` + strings.Repeat("0", 200) + `":"1e99999"}`, true},
		{`{"n":[1e400,-1e-400,{"m":1E+0400}]}`, true}, {`{"n":[1e400,-1e-400,{"m":1E+0401}]}`, false},
	} {
		_, err := v.Validate([]byte(tc.in))
		if (err == nil) != tc.valid {
			t.Errorf("reference Validate(%.60s) = %v, want valid=%v", tc.in, err, tc.valid)
		}
		if e := fast.Validate([]byte(tc.in)); (e == nil) != tc.valid {
			t.Errorf("fast Validate(%.60s) = %v, want valid=%v", tc.in, e, tc.valid)
		}
	}
}

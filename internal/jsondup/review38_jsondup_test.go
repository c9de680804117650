package jsondup

import "testing"

// TestReview38ScalarTexts pins that a JSON text that is one scalar, or an
// array of scalars, has no member named twice and is no panic: Member
// runs on whatever a client sent as arguments before the decoding that
// refuses a non-object, so its bookkeeping of "the next token is a key"
// must not assume an enclosing object.
func TestReview38ScalarTexts(t *testing.T) {
	for _, text := range []string{`1`, `"a"`, `true`, `null`, `[1,"a",null]`, `[[1],[2]]`} {
		if name, depth, found := Member([]byte(text), nil); found || name != "" || depth != 0 {
			t.Errorf("Member(%s, nil) = %q, %d, %v; want \"\", 0, false", text, name, depth, found)
		}
	}
}

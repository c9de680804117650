// Package jsondup finds an object member that a JSON text names twice.
// Parsers disagree on which of two same-named members wins, so a duplicate
// lets a document say one thing to a checker and another to its reader.
package jsondup

import (
	"bytes"
	"encoding/json"

	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// maxDepth is the deepest nesting encoding/json reads (its scanner's
// maxNestingDepth): a value nested deeper is an error to it.
const maxDepth = 10000

// Member reports the first member name that an object of the JSON
// text data names twice, and the depth of that object (1 for the
// outermost value; arrays count). Names are compared exactly, or under Unicode case
// folding (strings.EqualFold, as encoding/json matches struct fields) in
// the objects at a depth for which fold, when not nil, returns true.
// Malformed JSON is left to the decoding after: nothing past the error is
// looked at, nor past a value nested deeper than the 10000 levels
// encoding/json reads (a reader that reads deeper must bound the depth
// first). Numbers are read as written, so one that float64 cannot hold
// (1e400), valid JSON that a decoder with UseNumber reads, is no error.
func Member(data []byte, fold func(depth int) bool) (name string, depth int, found bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool // nil for an array; folded keys where fold
		fold   bool            // keys are compared under case folding
		expect bool            // an object's next token is a key
	}
	var stack []frame
	for {
		t, err := dec.Token()
		if err != nil {
			return "", 0, false
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].keys != nil {
				stack[len(stack)-1].expect = true
			}
			continue
		}
		if top != nil && top.keys != nil && top.expect {
			k, _ := t.(string)
			key := k
			if top.fold {
				// The folded form: one map look-up, not a comparison
				// with every key before (quadratic in the keys).
				key = string(foldkey.Append(nil, []byte(k)))
			}
			if top.keys[key] {
				return k, len(stack), true
			}
			top.keys[key], top.expect = true, false
			continue
		}
		if (t == json.Delim('{') || t == json.Delim('[')) && len(stack) == maxDepth {
			// Following deeper nesting, which encoding/json refuses
			// anyway, would cost a frame, a map and the decoder's own
			// stack per level: about 120 bytes per byte of "[[[[".
			return "", 0, false
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]bool{}, expect: true})
			stack[len(stack)-1].fold = fold != nil && fold(len(stack))
		case json.Delim('['):
			stack = append(stack, frame{})
		default: // a scalar value
			if top != nil && top.keys != nil {
				top.expect = true
			}
		}
	}
}

package jsondepth

import "testing"

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{``, 0},
		{`1`, 0},
		{`{}`, 1},
		{`[[],[[]]]`, 3},
		{`{"a":{"b":[1]}}`, 3},
		{`["[[[{{{"]`, 1},      // brackets in a string
		{`["\"[[[",[1]]`, 2},   // an escaped quote does not end the string
		{`["\\",[1]]`, 2},      // an escaped backslash does
		{`]]][[[`, 3},          // a close at the top level is not counted below it
		{`[][[]]`, 2},          // two texts: the first one's close returns to the top level
		{`[[[`, 3},             // not JSON: counted all the same
		{`"[[[`, 0},            // a string never closed
		{`{"k":"v\u005b"}`, 1}, // an escape sequence, not a bracket
		{`[{"a":[{"b":[]}]},[]]`, 5},
	} {
		if got := Of([]byte(tc.in)); got != tc.want {
			t.Errorf("Of(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

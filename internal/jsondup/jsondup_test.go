package jsondup

import "testing"

func TestMember(t *testing.T) {
	deep := func(depth int) bool { return depth > 1 }
	for _, tc := range []struct {
		data  string
		fold  func(int) bool
		name  string
		depth int
		found bool
	}{
		{`{"a":1,"b":2}`, nil, "", 0, false},
		{`{"a":1,"a":2}`, nil, "a", 1, true},
		{`{"a":1,"\u0061":2}`, nil, "a", 1, true},
		{`{"a":{"x":1},"b":{"x":2}}`, nil, "", 0, false},             // one name in two objects
		{`{"a":[{"x":1,"y":[1,{"x":2}],"x":3}]}`, nil, "x", 3, true}, // arrays count
		{`{"A":1,"a":2}`, nil, "", 0, false},
		{`{"A":1,"a":2}`, deep, "", 0, false},
		{`{"o":{"A":1,"a":2}}`, deep, "a", 2, true},
		{`[{"k":1},{"k":2}]`, nil, "", 0, false},
		{`{"a":1,"a"`, nil, "a", 1, true},     // found before the text breaks off
		{`{"a":1,,"a":2}`, nil, "", 0, false}, // nothing past the error
	} {
		name, depth, found := Member([]byte(tc.data), tc.fold)
		if name != tc.name || depth != tc.depth || found != tc.found {
			t.Errorf("Member(%s) = %q, %d, %v; want %q, %d, %v", tc.data, name, depth, found, tc.name, tc.depth, tc.found)
		}
	}
}

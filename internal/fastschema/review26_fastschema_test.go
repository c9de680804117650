package fastschema

import (
	"strings"
	"testing"
)

// TestReview26LooseDuplicates: the fast path takes two keys of one object
// for one name when they differ only in letter case, '_' or '-' (as
// encoding/json/v2's case-insensitive matching does), whether both are
// declared (twins), one is (a declared name's variant among unknown ones)
// or neither is (compared pairwise, or by hash past 16 keys), escaped or
// not; and gives the oracle's verdict on each.
func TestReview26LooseDuplicates(t *testing.T) {
	const schema = `{"type":"object","properties":{"user_id":{"type":"integer"},"userid":{"type":"integer"},"amount":{"type":"number"}}}`
	fast, ok := Compile(decodeSchema(t, schema), testOpts)
	if !ok {
		t.Fatal("Compile refused")
	}
	o := newOracle(t, decodeSchema(t, schema), testOpts)
	many := `"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17`
	for _, tc := range []struct {
		args string
		dup  bool
	}{
		{`{"user_id":1}`, false},
		{`{"userid":1}`, false},
		{`{"user_id":1,"amount":2,"x_y":3,"xz":4}`, false},
		{`{"user_id":1,"userid":2}`, true},
		{`{"userid":1,"user_id":2}`, true},
		{`{"user_id":1,"USER-ID":2}`, true},
		{`{"amount":1,"a_mount":2}`, true},
		{`{"a_mount":2,"amount":1}`, true},
		{`{"amount":1,"a\u005fmount":2}`, true},
		{`{"x_y":1,"X-Y":2}`, true},
		{`{"x_y":1,"\u0058y":2}`, true},
		{`{` + many + `,"x_y":1,"xy":2}`, true},
		{`{` + many + `,"x_y":1,"xz":2}`, false},
		{`{` + many + `,"amount":1,"-amount":2}`, true},
		{`{"o":{"x_y":1,"xy":2}}`, true},
		{`{"-":1,"_":2}`, true},
	} {
		e := fast.Validate([]byte(tc.args))
		if tc.dup != (e != nil && strings.Contains(e.Message, "appears twice")) {
			t.Errorf("Validate(%.60s) = %v, want a duplicate %v", tc.args, e, tc.dup)
		}
		agree(t, fast, o, []byte(tc.args))
	}
}

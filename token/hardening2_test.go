package token

import "testing"

// TestDuplicateMemberCaseFolded: encoding/json matches struct fields
// case-insensitively (and under Unicode folding: U+017F folds to s), so an
// entry naming "sub" twice in different spellings is refused, not decoded
// with the last spelling silently winning.
func TestDuplicateMemberCaseFolded(t *testing.T) {
	for _, table := range []string{
		`{"tok1":{"sub":"alice","SUB":"root"}}`,
		`{"tok1":{"sub":"alice","ſub":"root"}}`,
		`{"tok1":{"sub":"alice","role":"reader","Role":"admin"}}`,
	} {
		if tab, err := Parse([]byte(table)); err == nil {
			pr := tab.Lookup("tok1")
			t.Errorf("Parse(%s) accepted; principal %+v (a member named twice under case folding)", table, *pr)
		}
	}
}

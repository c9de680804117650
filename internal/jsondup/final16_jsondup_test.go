package jsondup

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// manyKeys returns an object of n distinct keys k0..k(n-1), then extra
// members.
func manyKeys(n int, extra string) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	b.WriteString(extra)
	b.WriteByte('}')
	return []byte(b.String())
}

// With folding, Member compared each key with every key before it: an
// object of 20000 keys (170 kB) took 3 s, and the 4 MiB an examples/shop
// session check reads from the gateway (duplicateKeyFolded) half an hour
// of CPU, whatever the call's deadline. Without folding it takes tens of
// milliseconds.
func TestMemberFoldNotQuadratic(t *testing.T) {
	data := manyKeys(60000, "")
	start := time.Now()
	if name, _, found := Member(data, func(int) bool { return true }); found {
		t.Fatalf("Member(60000 distinct keys, fold) found %q twice", name)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Member(%d bytes, 60000 distinct keys, fold) took %v; without folding it takes well under 100ms", len(data), d)
	}
}

// The folded comparison still finds what strings.EqualFold finds, in an
// object of many keys too, and only at the depths fold names.
func TestMemberFoldManyKeys(t *testing.T) {
	all := func(int) bool { return true }
	deep := func(depth int) bool { return depth > 1 }
	for _, tc := range []struct {
		name  string
		data  []byte
		fold  func(int) bool
		want  string
		depth int
		found bool
	}{
		{"case", manyKeys(100, `,"K50":1`), all, "K50", 1, true},
		{"exact", manyKeys(100, `,"k50":1`), all, "k50", 1, true},
		{"kelvin_sign", manyKeys(100, `,"\u212a7":1`), all, "\u212a7", 1, true},
		{"long_s", []byte(`{"s":1,"\u017f":2}`), all, "\u017f", 1, true},
		{"not_folded_at_depth_1", manyKeys(100, `,"K50":1`), deep, "", 0, false},
		{"exact_at_depth_1", manyKeys(100, `,"k50":1`), deep, "k50", 1, true},
		{"nested", []byte(`{"o":` + string(manyKeys(100, `,"K99":1`)) + `}`), deep, "K99", 2, true},
		{"distinct", manyKeys(100, `,"x":1`), all, "", 0, false},
		{"two_objects", []byte(`{"a":{"K":1},"b":{"k":2}}`), all, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, depth, found := Member(tc.data, tc.fold)
			if name != tc.want || depth != tc.depth || found != tc.found {
				t.Errorf("Member(...) = %q, %d, %v; want %q, %d, %v", name, depth, found, tc.want, tc.depth, tc.found)
			}
		})
	}
}

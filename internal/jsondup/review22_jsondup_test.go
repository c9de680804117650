package jsondup

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// jsonMaxDepth is the deepest nesting encoding/json reads (its scanner's
// maxNestingDepth).
const jsonMaxDepth = 10000

// TestReview22DeepNestingBounded: a text nested deeper than encoding/json
// reads (10000 levels) is refused by the decoding after Member, so Member
// need not follow it; following it cost about 120 bytes of memory per
// byte of input (a frame and a map per level, and the decoder's own
// stack): 4 MB of "[" took 500 MB. A duplicate at the deepest level
// encoding/json reads is still found.
func TestReview22DeepNestingBounded(t *testing.T) {
	deep := []byte(strings.Repeat("[", 150_000) + strings.Repeat(`{"a":`, 20_000))
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for _, fold := range []func(int) bool{nil, func(int) bool { return true }} {
		if name, _, found := Member(deep, fold); found {
			t.Errorf("Member(deep) found %q", name)
		}
	}
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 8<<20 {
		t.Errorf("Member on %d bytes of nesting allocated %d MB, want at most 8", len(deep), got>>20)
	}

	// Exactly jsonMaxDepth levels: encoding/json reads it, Member finds the
	// duplicate in the innermost object.
	n := jsonMaxDepth - 1
	at := []byte(strings.Repeat("[", n) + `{"a":1,"a":2}` + strings.Repeat("]", n))
	var v any
	if err := json.Unmarshal(at, &v); err != nil {
		t.Fatalf("json.Unmarshal of %d levels: %v", jsonMaxDepth, err)
	}
	if name, depth, found := Member(at, nil); !found || name != "a" || depth != jsonMaxDepth {
		t.Errorf("Member(%d levels) = %q, %d, %v; want \"a\", %d, true", jsonMaxDepth, name, depth, found, jsonMaxDepth)
	}
	// One more level: encoding/json refuses it, which Member leaves to it.
	over := []byte("[" + string(at) + "]")
	if err := json.Unmarshal(over, &v); err == nil {
		t.Fatalf("json.Unmarshal of %d levels: no error", jsonMaxDepth+1)
	}
	if err := json.NewDecoder(strings.NewReader(string(over))).Decode(&v); err == nil {
		t.Fatalf("json.Decoder of %d levels: no error", jsonMaxDepth+1)
	}
}

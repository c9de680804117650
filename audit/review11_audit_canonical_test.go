package audit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestArgsSHA256NestedObjectsLinear checks that hashing deeply nested
// objects takes time linear in their size: the canonical form re-read every
// member's value after validating it, so each level of nesting doubled the
// work, and 121 bytes of arguments 20 levels deep took 50 ms (40 levels:
// hours). The gateway hashes the arguments of every request it audits,
// refused ones included.
func TestArgsSHA256NestedObjectsLinear(t *testing.T) {
	const depth = 40
	raw := json.RawMessage(strings.Repeat(`{"b":0,"a":`, depth) + "1" + strings.Repeat("}", depth))
	done := make(chan string, 1)
	go func() { done <- audit.ArgsSHA256(raw) }()
	select {
	case got := <-done:
		// Same as the canonical form built by hand: keys sorted at every level.
		want := audit.ArgsSHA256(json.RawMessage(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat(`,"b":0}`, depth)))
		if got != want {
			t.Errorf("hash of unsorted nesting %s, of sorted %s", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("ArgsSHA256 of %d bytes nested %d deep still running after 5s", len(raw), depth)
	}
}

// TestArgsSHA256DeepAndLargeLinear checks that hashing stays linear in
// the size of the arguments at the deepest nesting allowed, not depth
// times size (4 MiB 999 levels deep would take over a second, where a
// linear pass takes tens of milliseconds).
func TestArgsSHA256DeepAndLargeLinear(t *testing.T) {
	const depth = 999
	raw := json.RawMessage(strings.Repeat(`{"b":0,"a":`, depth) + `"` + strings.Repeat("x", 4<<20) + `"` + strings.Repeat("}", depth))
	start := time.Now()
	audit.ArgsSHA256(raw)
	// Linear: about as long as a few passes over the bytes. The bound is
	// loose (a busy machine, the race detector).
	var once time.Duration
	{
		flat := json.RawMessage(`{"a":"` + strings.Repeat("x", 4<<20) + `"}`)
		s := time.Now()
		audit.ArgsSHA256(flat)
		once = time.Since(s)
	}
	if d := time.Since(start) - once; d > 8*once+200*time.Millisecond {
		t.Errorf("ArgsSHA256 of %d bytes %d deep took %v more than flat arguments of the same size (%v)", len(raw), depth, d, once)
	}
}

// TestArgsSHA256CanonicalForms pins the canonical form on inputs the
// nesting fix touches: order of members at several levels, duplicate keys
// (kept, in their order), escaped keys, arrays of objects, whitespace.
func TestArgsSHA256CanonicalForms(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{`{"b":{"d":1,"c":[{"f":1,"e":2}]},"a":"x"}`, `{"a":"x","b":{"c":[{"e":2,"f":1}],"d":1}}`},
		{` { "b" : 1 , "a" : { } , "c" : [ ] } `, `{"a":{},"b":1,"c":[]}`},
		{`{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"k":2,"a":0,"k":1}`, `{"a":0,"k":2,"k":1}`},
		{`[{"z":1,"y":{"x":1,"w":2}},{"b":1,"a":2}]`, `[{"y":{"w":2,"x":1},"z":1},{"a":2,"b":1}]`},
	} {
		if got, want := audit.ArgsSHA256(json.RawMessage(tc.a)), audit.ArgsSHA256(json.RawMessage(tc.b)); got != want {
			t.Errorf("ArgsSHA256(%s) != ArgsSHA256(%s)", tc.a, tc.b)
		}
	}
	// Different documents still differ.
	if audit.ArgsSHA256(json.RawMessage(`{"a":{"b":1}}`)) == audit.ArgsSHA256(json.RawMessage(`{"a":{"b":2}}`)) {
		t.Error("different nested values hash alike")
	}
	// Invalid JSON inside a nested object: the bytes as given are hashed.
	bad := json.RawMessage(`{"b":1,"a":{"x":}}`)
	if got := audit.ArgsSHA256(bad); got == "" || got == audit.ArgsSHA256(json.RawMessage(`{"a":{"x":null},"b":1}`)) {
		t.Errorf("invalid nested JSON hashed as %q", got)
	}
}

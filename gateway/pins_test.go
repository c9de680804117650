package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolDigestCanonical(t *testing.T) {
	a := ToolDigest(json.RawMessage(`{"name":"x","description":"d","inputSchema":{"type":"object","properties":{}}}`))
	b := ToolDigest(json.RawMessage(` { "inputSchema" : {"properties":{},"type":"object"}, "description":"d", "name":"x" } `))
	if a != b || !isDigest(a) {
		t.Errorf("key order or white space changed the digest: %s, %s", a, b)
	}
	if c := ToolDigest(json.RawMessage(`{"name":"x","description":"d ","inputSchema":{"type":"object","properties":{}}}`)); c == a {
		t.Error("a changed description kept the digest")
	}
}

func TestPinsTrustOnFirstUse(t *testing.T) {
	p := TrustOnFirstUse()
	d1, d2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	if v := p.callable("a"); v != pinOK {
		t.Errorf("a tool never listed: %v, want callable", v)
	}
	if v, first, pinned := p.listed("a", d1); v != pinOK || first || pinned != d1 {
		t.Errorf("first listing: %v %v %q", v, first, pinned)
	}
	if v, first, _ := p.listed("a", d1); v != pinOK || first {
		t.Errorf("same definition again: %v %v", v, first)
	}
	if v, first, pinned := p.listed("a", d2); v != pinChanged || !first || pinned != d1 {
		t.Errorf("changed definition: %v %v %q", v, first, pinned)
	}
	if v, first, _ := p.listed("a", d2); v != pinChanged || first {
		t.Errorf("changed definition listed again: %v, first %v (want recorded once)", v, first)
	}
	if v := p.callable("a"); v != pinChanged {
		t.Errorf("call of a changed tool: %v, want refused", v)
	}
	if v, _, _ := p.listed("a", d1); v != pinOK {
		t.Errorf("back to the pinned definition: %v", v)
	}
	if v := p.callable("a"); v != pinOK {
		t.Errorf("call after the pinned definition came back: %v", v)
	}
	if v, first, _ := p.listed("a", d2); v != pinChanged || !first {
		t.Errorf("changed again after matching: %v, first %v (want news again)", v, first)
	}
	out, err := json.Marshal(p)
	if err != nil || string(out) != `{"a":"`+d1+`"}` {
		t.Errorf("MarshalJSON: %s, %v", out, err)
	}
	if got := p.names(); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("names %v", got)
	}
}

func TestPinsTrustOnFirstUseFull(t *testing.T) {
	p := TrustOnFirstUse()
	d := strings.Repeat("a", 64)
	for i := range maxPins {
		if v, _, _ := p.listed(string(rune('A'+i%26))+strings.Repeat("x", i/26)+"_"+itoa(i), d); v != pinOK {
			t.Fatalf("pin %d: %v", i, v)
		}
	}
	if v, first, _ := p.listed("one_more", d); v != pinNotPinned || !first {
		t.Errorf("a tool past the bound: %v %v, want withheld", v, first)
	}
	if v := p.callable("never_listed"); v != pinNotPinned {
		t.Errorf("a call with the set full: %v, want refused (no pin can be made)", v)
	}
}

func TestParsePins(t *testing.T) {
	d1 := strings.Repeat("0123456789abcdef", 4)
	p, err := ParsePins([]byte(`{"a":"` + d1 + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if v := p.callable("a"); v != pinOK {
		t.Errorf("a pinned tool: %v", v)
	}
	if v := p.callable("b"); v != pinNotPinned {
		t.Errorf("a tool not in the set: %v, want refused", v)
	}
	if v, first, _ := p.listed("b", d1); v != pinNotPinned || !first {
		t.Errorf("listing a tool not in the set: %v %v", v, first)
	}
	if v, _, _ := p.listed("a", strings.Repeat("f", 64)); v != pinChanged {
		t.Errorf("a pinned tool changed: %v", v)
	}
	if got := p.names(); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("a fixed set grew: %v", got)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{"a":1}`, `{"a":"` + strings.ToUpper(d1) + `"}`, `{"a":"` + d1[:63] + `"}`,
		`{"":"` + d1 + `"}`, `{"a":"` + d1 + `","a":"` + d1 + `"}`, `{"a":"` + d1 + `"} x`,
	} {
		if _, err := ParsePins([]byte(bad)); err == nil {
			t.Errorf("ParsePins(%q): no error", bad)
		}
	}
}

// TestPinsOtherSpellings: a tool withheld for its definition is refused
// under every spelling the policy takes for its name, so a downstream that
// is lenient with case cannot be reached through another one.
func TestPinsOtherSpellings(t *testing.T) {
	p := TrustOnFirstUse()
	d1, d2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	p.listed("refund", d1)
	p.listed("refund", d2)
	for _, name := range []string{"refund", "REFUND", "Refund", "re\u00adfund", "reFund"} {
		if v := p.callable(name); v == pinOK {
			t.Errorf("call of %q: allowed; the tool was withheld", name)
		}
	}
}

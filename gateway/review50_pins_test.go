package gateway

import (
	"strconv"
	"strings"
	"testing"
)

// TestReview50PinsDigestFirstChar: a pin's digest is held to lowercase hex
// from its first character on.
func TestReview50PinsDigestFirstChar(t *testing.T) {
	good := strings.Repeat("a", 64)
	for _, d := range []string{"g" + good[1:], "A" + good[1:], "/" + good[1:], ":" + good[1:], "`" + good[1:]} {
		if _, err := ParsePins([]byte(`{"t":"` + d + `"}`)); err == nil || !strings.Contains(err.Error(), "64 lowercase hex digits") {
			t.Errorf("ParsePins with digest %q: %v, want refused", d, err)
		}
	}
	if _, err := ParsePins([]byte(`{"t":"0` + good[1:63] + `9"}`)); err != nil {
		t.Errorf("digest of 0…9: %v", err)
	}
}

// TestReview50PinsChangedAgain: a tool withheld for one changed definition
// and then listed with another is news again (recorded), and so is the
// first definition when it comes back; the same definition listed twice in
// a row is recorded once. With trust on first use and with a fixed set.
func TestReview50PinsChangedAgain(t *testing.T) {
	d0, d1, d2 := strings.Repeat("0", 64), strings.Repeat("1", 64), strings.Repeat("2", 64)
	fixed, err := ParsePins([]byte(`{"t":"` + d0 + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	tofu := TrustOnFirstUse()
	tofu.listed("t", d0)
	for name, p := range map[string]*Pins{"tofu": tofu, "fixed": fixed} {
		for i, step := range []struct {
			d     string
			first bool
		}{{d1, true}, {d1, false}, {d2, true}, {d1, true}, {d1, false}, {d2, true}} {
			if v, first, pinned := p.listed("t", step.d); v != pinChanged || first != step.first || pinned != d0 {
				t.Errorf("%s: listing %d (%.1s…): %v, first %v, pinned %.1s…; want changed, first %v, pinned 0…", name, i, step.d, v, first, pinned, step.first)
			}
		}
		// A fixed set's pinned tool, withheld for another definition, is
		// refused as changed, not as unpinned.
		if v := p.callable("t"); v != pinChanged {
			t.Errorf("%s: call of the changed tool: %v, want pinChanged", name, v)
		}
	}
}

// TestReview50PinsNameBound: with trust on first use a name of exactly
// maxPinName bytes is pinned, one byte longer is not (withheld and refused,
// recorded at every listing); with a fixed set a withheld name of
// maxPinName bytes is recorded once, a longer one at every listing.
func TestReview50PinsNameBound(t *testing.T) {
	d := strings.Repeat("d", 64)
	atBound, over := strings.Repeat("n", maxPinName), strings.Repeat("n", maxPinName+1)
	p := TrustOnFirstUse()
	// Before any listing: a call of a name within the bound is let through
	// (nothing is known of it), one past it refused (it can never be pinned).
	if v := p.callable(atBound); v != pinOK {
		t.Errorf("tofu, a call of a %d-byte name never listed: %v, want callable", maxPinName, v)
	}
	if v := p.callable(over); v != pinNotPinned {
		t.Errorf("tofu, a call of a %d-byte name never listed: %v, want refused", maxPinName+1, v)
	}
	if v, first, pinned := p.listed(atBound, d); v != pinOK || first || pinned != d {
		t.Errorf("tofu, a name of %d bytes: %v, %v, %q; want pinned", maxPinName, v, first, pinned)
	}
	if v := p.callable(atBound); v != pinOK {
		t.Errorf("tofu, a call of the %d-byte name: %v", maxPinName, v)
	}
	for i := range 2 {
		if v, first, _ := p.listed(over, d); v != pinNotPinned || !first {
			t.Errorf("tofu, listing %d of a name of %d bytes: %v, first %v; want not pinned, news", i, maxPinName+1, v, first)
		}
	}
	if v := p.callable(over); v != pinNotPinned {
		t.Errorf("tofu, a call of the %d-byte name: %v, want refused", maxPinName+1, v)
	}

	f, err := ParsePins([]byte(`{"t":"` + d + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		if v, first, _ := f.listed(atBound, d); v != pinNotPinned || first != want {
			t.Errorf("fixed, listing %d of an unpinned name of %d bytes: %v, first %v; want not pinned, first %v", i, maxPinName, v, first, want)
		}
	}
	for i := range 2 {
		if v, first, _ := f.listed(over, d); v != pinNotPinned || !first {
			t.Errorf("fixed, listing %d of an unpinned name of %d bytes: %v, first %v; want news every time", i, maxPinName+1, v, first)
		}
	}
}

// TestReview50PinsOffBound: a fixed set records each of the first maxPins
// withheld names once; past them, a further name is recorded at every
// listing (the set remembers no more), and is refused all the same.
func TestReview50PinsOffBound(t *testing.T) {
	d := strings.Repeat("d", 64)
	p, err := ParsePins([]byte(`{"t":"` + d + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxPins {
		if v, first, _ := p.listed("x"+strconv.Itoa(i), d); v != pinNotPinned || !first {
			t.Fatalf("withheld name %d: %v, first %v", i, v, first)
		}
	}
	if v, first, _ := p.listed("x0", d); v != pinNotPinned || first {
		t.Errorf("the first withheld name again: %v, first %v; want recorded once", v, first)
	}
	for i := range 2 {
		if v, first, _ := p.listed("one_more", d); v != pinNotPinned || !first {
			t.Errorf("listing %d of a name past %d withheld: %v, first %v; want news every time", i, maxPins, v, first)
		}
	}
	if v := p.callable("one_more"); v != pinNotPinned {
		t.Errorf("a call of it: %v, want refused", v)
	}
}

// TestReview50PinsOtherSpellingCalls: a spelling of a pinned name that is
// not pinned itself ("REFUND" for "refund"), once listed, is refused under
// both spellings: as changed with trust on first use (it is judged against
// the pin), and with a fixed set as not pinned for the listed spelling and
// changed for the pinned one.
func TestReview50PinsOtherSpellingCalls(t *testing.T) {
	d, d2 := strings.Repeat("d", 64), strings.Repeat("2", 64)
	fixed, err := ParsePins([]byte(`{"refund":"` + d + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	tofu := TrustOnFirstUse()
	for _, tc := range []struct {
		name             string
		p                *Pins
		listed, asListed pinVerdict
	}{
		{"tofu", tofu, pinChanged, pinChanged},
		{"fixed", fixed, pinNotPinned, pinNotPinned},
	} {
		if v, _, _ := tc.p.listed("refund", d); v != pinOK {
			t.Fatalf("%s: refund listed with its pin: %v", tc.name, v)
		}
		// Its definition names it, so its digest is never the pin's.
		if v, _, _ := tc.p.listed("REFUND", d2); v != tc.listed {
			t.Errorf("%s: REFUND listed: %v, want %v", tc.name, v, tc.listed)
		}
		if v := tc.p.callable("REFUND"); v != tc.asListed {
			t.Errorf("%s: a call of REFUND: %v, want %v", tc.name, v, tc.asListed)
		}
		if v := tc.p.callable("refund"); v != pinChanged {
			t.Errorf("%s: a call of refund: %v, want pinChanged", tc.name, v)
		}
	}
}

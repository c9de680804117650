package gateway

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// review22bDigest returns a made-up digest, 64 hex digits, for n.
func review22bDigest(n int) string {
	s := strconv.FormatInt(int64(n), 16)
	return strings.Repeat("0", 64-len(s)) + s
}

// TestReview22bPinsFullTableSpellingForgotten: with trust on first use
// and the table of withheld names full, another spelling of an approved
// tool listed with its own definition is withheld; the approved spelling
// listed with its pin again (after a change of its own) must not make the
// other spelling callable: its listing can never match the pin, so the
// key stays refused.
func TestReview22bPinsFullTableSpellingForgotten(t *testing.T) {
	p := TrustOnFirstUse()
	approved, changed, upper := review22bDigest(1), review22bDigest(2), review22bDigest(3)
	p.listed("refund", approved)
	// 9,000 tools approved, then listed changed: 9,000 withheld names.
	for i := range 9000 {
		p.listed("junk_"+strconv.Itoa(i), review22bDigest(10+i))
	}
	for i := range 9000 {
		p.listed("junk_"+strconv.Itoa(i), review22bDigest(100000+i))
	}
	// 1,000 more, other spellings of the approved junk: the table is full,
	// yet room is left for new pins.
	for i := range 1000 {
		p.listed("JUNK_"+strconv.Itoa(i), review22bDigest(200000+i))
	}
	if n := len(p.names()); n >= maxPins {
		t.Fatalf("%d pins: the test wants room for more", n)
	}
	p.listed("refund", changed)
	if v, _, _ := p.listed("REFUND", upper); v != pinChanged {
		t.Fatalf("REFUND %q, want TOOL_CHANGED", v.contract())
	}
	p.listed("refund", approved)
	if v := p.callable("REFUND"); v == pinOK {
		t.Error("call of REFUND allowed while its definition (never approvable) is withheld")
	}
	if v := p.callable("refund"); v == pinOK {
		t.Error("call of refund allowed while REFUND's definition is withheld")
	}
}

// TestReview22bPinsLongNamesBounded: a downstream chooses its tools'
// names, as long as a listing (64 MiB) holds: trust on first use must not
// keep 10,000 names of a megabyte each, nor a fixed set 10,000 withheld
// ones. A name that long is withheld (TOOL_NOT_PINNED) and its calls
// refused, and the pins keep neither it nor its mark.
func TestReview22bPinsLongNamesBounded(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	fixed, err := ParsePins([]byte(`{"refund":"` + review22bDigest(1) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	for what, p := range map[string]*Pins{"trust on first use": TrustOnFirstUse(), "fixed": fixed} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range 20 {
			name := long + strconv.Itoa(i)
			if v, _, _ := p.listed(name, review22bDigest(i)); v != pinNotPinned {
				t.Errorf("%s: a name of %d bytes %q, want TOOL_NOT_PINNED", what, len(name), v.contract())
			}
			if v := p.callable(name); v == pinOK {
				t.Errorf("%s: call of a tool whose %d-byte name cannot be pinned allowed", what, len(name))
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
			t.Errorf("%s: 20 listed names of 1 MiB kept %d bytes", what, grew)
		}
		runtime.KeepAlive(p)
		// A long spelling of a pinned name: not kept, but its key is
		// refused still.
		spelling := "re" + strings.Repeat("\u00ad", 2000) + "fund"
		if what == "trust on first use" {
			p.listed("refund", review22bDigest(1))
		}
		if v, _, _ := p.listed(spelling, review22bDigest(7)); v == pinOK {
			t.Errorf("%s: a long spelling of refund with another definition approved", what)
		}
		if v := p.callable("refund"); v == pinOK {
			t.Errorf("%s: call of refund allowed after a long spelling of it was withheld", what)
		}
	}
}

// TestReview22bPinsConcurrent: listings, calls and MarshalJSON of one
// Pins at once (run with -race).
func TestReview22bPinsConcurrent(t *testing.T) {
	p := TrustOnFirstUse()
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 500 {
				name := []string{"refund", "REFUND", "re\u00adfund", "t" + strconv.Itoa(i)}[(g+i)%4]
				p.listed(name, review22bDigest(g))
				p.callable(name)
				if _, err := p.MarshalJSON(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if v := p.callable("Refund"); v == pinOK {
		t.Error("call of Refund allowed after other spellings of refund were withheld")
	}
}

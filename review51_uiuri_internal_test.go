package mcpguard

import "testing"

// TestReview51URIKeyEdges: uriKey at the edges of its cuts and its
// decoding. A URI that is all query or fragment, as a decoded "%3F" makes
// it, has no path; userinfo or a port is cut from a host even when it
// starts the authority (an empty user, an empty host); and every
// hexadecimal digit decodes, the first and last of each range, in either
// case.
func TestReview51URIKeyEdges(t *testing.T) {
	for a, b := range map[string]string{
		"?q":                  "",
		"#f":                  "",
		"%3Fq":                "",
		"%23f":                "",
		"ui://@tpl/settings":  "ui://tpl/settings",
		"ui://:8080/settings": "ui://:1/settings",
		"ui://tpl/%30%39":     "ui://tpl/09",
		"ui://tpl/%6a%6f":     "ui://tpl/jo",
		"ui://tpl/%6A%6F":     "ui://tpl/jo",
		"ui://tpl/%4a%4A%4f":  "ui://tpl/jjo",
		"ui://tpl/%2f%2F":     "ui://tpl/",
	} {
		if uriKey(a) != uriKey(b) {
			t.Errorf("uriKey(%q) = %q, uriKey(%q) = %q: want equal", a, uriKey(a), b, uriKey(b))
		}
	}
	// Not escapes: a percent sign before a byte next to the digits' ranges
	// stays as it is, and so does that byte.
	for u, want := range map[string]string{
		"ui://tpl/%g0": "ui://tpl/%g0",
		"ui://tpl/%0g": "ui://tpl/%0g",
		"ui://tpl/%/0": "ui://tpl/%/0",
		"ui://tpl/%:0": "ui://tpl/%:0",
		"ui://tpl/%@0": "ui://tpl/%@0",
		"ui://tpl/%`0": "ui://tpl/%`0",
		"ui://tpl/%G0": "ui://tpl/%g0",
	} {
		if got := uriKey(u); got != want {
			t.Errorf("uriKey(%q) = %q, want %q", u, got, want)
		}
	}
}

// TestReview51URIKeyLeadingEscape: an escape that begins the URI decodes
// as one anywhere else does.
func TestReview51URIKeyLeadingEscape(t *testing.T) {
	if a, b := uriKey("%75i://tpl/settings"), uriKey("ui://tpl/settings"); a != b {
		t.Errorf("uriKey(%%75i://tpl/settings) = %q, want %q", a, b)
	}
}

// TestReview51SightSignature: a sight's signature lists its hidden and its
// seen resources, each sorted, whatever order its maps give them in: two
// callers shown the same resources share it.
func TestReview51SightSignature(t *testing.T) {
	set := func(us ...string) map[string]bool {
		m := make(map[string]bool)
		for _, u := range us {
			m[u] = true
		}
		return m
	}
	const want = `[["ui://a","ui://b","ui://c","ui://d","ui://e"],["ui://v","ui://w","ui://x","ui://y","ui://z"]]`
	// Fresh maps each round: the iteration order of each is random, so an
	// unsorted signature would differ from want in nearly every round.
	for range 50 {
		s := &uiSight{
			hidden: set("ui://e", "ui://c", "ui://a", "ui://d", "ui://b"),
			seen:   set("ui://z", "ui://x", "ui://v", "ui://y", "ui://w"),
		}
		if got := s.signature(); got != want {
			t.Fatalf("signature() = %s, want %s", got, want)
		}
	}
	if got, want := (&uiSight{}).signature(), `[[],[]]`; got != want {
		t.Errorf("an empty sight's signature = %s, want %s", got, want)
	}
}

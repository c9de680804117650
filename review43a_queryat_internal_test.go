package mcpguard

import "testing"

// TestReview43aQueryAt: queryAt finds a URI's query or fragment as uriKey
// reads them, once every percent-escape is decoded (escapes that decoding
// forms too), at the first byte of what decodes to the "?" or "#"; and
// withSuffix adds absentSuffix there. (Unexported: a handler sees the
// suffixed URI, but the suffix is random, so its place is pinned here.)
func TestReview43aQueryAt(t *testing.T) {
	for _, c := range []struct {
		uri  string
		want int
	}{
		{"", 0},
		{"ui://a/b", 8},
		{"ui://a/b?x=1", 8},
		{"ui://a/b#f", 8},
		{"ui://a/b#f?x", 8},
		{"ui://a/b?x#f", 8},
		{"?", 0},
		{"%3F", 0},
		{"ui://a/b%3Fx", 8},
		{"ui://a/b%3fx", 8},
		{"ui://a/b%23f", 8},
		{"ui://a/b%253Fx", 8},
		{"ui://a/b%25%33%46x", 8},
		{"ui://a/b%2523x", 8},
		{"a%%3F", 2},         // "%%3" is no escape; "%3F" is
		{"ui://a/%zz?x", 10}, // not an escape: kept
		{"ui://a/%3", 9},     // cut short: kept
		{"ui://a/%3G?x", 10},
		{"ui://a/%G3?x", 10},
		{"ui://a/b%25?x", 11}, // "%25" decodes to a "%" that starts no escape
		{"ui://a/%41%42", 13}, // escapes of no "?" or "#"
	} {
		if got := queryAt(c.uri); got != c.want {
			t.Errorf("queryAt(%q) = %d, want %d", c.uri, got, c.want)
		}
		if got, want := withSuffix(c.uri), c.uri[:c.want]+absentSuffix+c.uri[c.want:]; got != want {
			t.Errorf("withSuffix(%q) = %q, want %q", c.uri, got, want)
		}
	}
}

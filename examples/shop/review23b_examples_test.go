package main

import (
	"strings"
	"testing"
)

// The twenty-third review's second round on the day's fixes: the default
// Origin and the confirmation key's spelling.

// TestReview23bDefaultOriginOfAnInternationalizedHost: the default Origin
// is the gateway's "as a browser sends it", and a browser sends a host
// name in its ASCII form (xn--…); Go's HTTP client too sends the gateway
// that form as Host. --gateway https://Bücher.Example made the Origin
// "https://bücher.example", which no CSRF check comparing origins
// accepts, so every write was refused. The shop cannot spell the name in
// ASCII itself (that needs IDNA tables): such a host, as written or
// percent-encoded, is a usage error naming the xn-- form, as --redis's is,
// and so is such an --origin.
func TestReview23bDefaultOriginOfAnInternationalizedHost(t *testing.T) {
	for _, gw := range []string{"https://Bücher.Example", "https://b%C3%BCcher.example/gw", "http://shop.example\u00a0:8080"} {
		c, err := newGatewayClient(gw, "")
		if err == nil {
			t.Errorf("--gateway %s: accepted, default Origin %q; want a usage error", gw, c.origin)
		} else if !strings.Contains(err.Error(), "xn--") {
			t.Errorf("--gateway %s: %v; want it to name the xn-- form", gw, err)
		}
	}
	if _, err := newGatewayClient("https://shop.example", "https://Bücher.example"); err == nil {
		t.Errorf("--origin https://Bücher.example: accepted; want a usage error")
	}
	c, err := newGatewayClient("https://XN--BCHER-KVA.Example:443", "")
	if err != nil || c.origin != "https://xn--bcher-kva.example" {
		t.Errorf("--gateway https://XN--BCHER-KVA.Example:443: origin %v, %v; want https://xn--bcher-kva.example", c, err)
	}
}

// TestReview23bHexKeyWithLineBreaks: "a value of hex digits only is hex",
// so that 48 hex digits (24 bytes) are refused, not read as 36 bytes of
// base64. A hex key wrapped on two lines (xxd -p wraps at 60 digits, and
// "$(cat key)" keeps the inner line break) was still read as base64, which
// skips line breaks: 48 hex digits with a break in them passed as 36
// bytes, 62 (31 bytes) as 46. A line break in a key of hex digits is
// skipped as base64 skips it, and the digits are read as hex.
func TestReview23bHexKeyWithLineBreaks(t *testing.T) {
	wrap := func(s string) string { return s[:min(60, len(s)-2)] + "\n" + s[min(60, len(s)-2):] }
	for _, tc := range []struct {
		name, key string
		bytes     int // 0: refused
	}{
		{"hex_24_bytes_wrapped", wrap(strings.Repeat("a1", 24)), 0},
		{"hex_31_bytes_wrapped", wrap(strings.Repeat("a1", 31)), 0},
		{"hex_24_bytes_crlf", strings.Repeat("a1", 12) + "\r\n" + strings.Repeat("a1", 12), 0},
		{"hex_32_bytes_wrapped", wrap(strings.Repeat("a1", 32)), 32},
		{"hex_40_bytes_wrapped", wrap(strings.Repeat("b2", 40)), 40},
	} {
		k, err := parseKey(tc.key)
		switch {
		case tc.bytes == 0 && err == nil:
			t.Errorf("%s: a key of %d hex digits was accepted as %d bytes, want it refused", tc.name, len(lineBreaks.Replace(tc.key)), len(k))
		case tc.bytes != 0 && (err != nil || len(k) != tc.bytes):
			t.Errorf("%s: %d bytes, %v; want %d bytes", tc.name, len(k), err, tc.bytes)
		}
	}
}

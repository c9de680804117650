package main

import "testing"

// TestReview25cJWKSURLAnyCase: a --jwt-jwks URL is one whatever the case of
// its scheme (URL schemes are case-insensitive, RFC 3986): "HTTPS://..."
// was read as a file path and failed with a file error.
func TestReview25cJWKSURLAnyCase(t *testing.T) {
	for s, want := range map[string]bool{
		"https://idp.example.com/jwks": true,
		"HTTPS://idp.example.com/jwks": true,
		"Http://127.0.0.1:8080/jwks":   true,
		"jwks.json":                    false,
		"./https://x":                  false,
		"file:///etc/jwks.json":        false,
		"httpsx://idp.example.com":     false,
	} {
		if got := isURL(s); got != want {
			t.Errorf("isURL(%q) = %v, want %v", s, got, want)
		}
	}
}

package cliarg

import "testing"

// TestShownURL: a URL (or a list of them) with user information, a query
// or a fragment is shown as Shown shows it, whatever its other parts; one
// without is quoted whole, however it looks.
func TestShownURL(t *testing.T) {
	for _, tc := range []struct {
		v, want string
		secret  bool
	}{
		{"https://shop.example", `"https://shop.example"`, false},
		{"https://a.example,https://b.example:8443", `"https://a.example,https://b.example:8443"`, false},
		{"http://localhost:*", `"http://localhost:*"`, false},
		{"https://user:pw@shop.example", hidden, true},
		{"https://shop.example?k=v", hidden, true},
		{"https://shop.example#frag", hidden, true},
		{"a@b", hidden, true},
		{"x?", `"x?"`, true}, // nothing Shown hides: quoted
		{"https://shop.example/\n", `"https://shop.example/\n"`, false},
	} {
		if got := URLMayHoldSecret(tc.v); got != tc.secret {
			t.Errorf("URLMayHoldSecret(%q) = %v, want %v", tc.v, got, tc.secret)
		}
		if got := ShownURL(tc.v); got != tc.want {
			t.Errorf("ShownURL(%q) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

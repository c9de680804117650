package gateway

import (
	"strings"
	"testing"
)

// TestReview19gNewErrorHidesSecretsOfOddURLs: New's error for an upstream
// it cannot use never shows a user information or a query, whatever the
// shape of the string: no scheme, one slash, an empty authority, a
// password holding an unescaped "/", "?" or "#", several "@", an IPv6
// zone, invalid UTF-8, an "@" in the query. It never panics.
func TestReview19gNewErrorHidesSecretsOfOddURLs(t *testing.T) {
	for _, tc := range []struct {
		up      string
		secrets []string
	}{
		{"usr1:pw1@host//mcp", []string{"usr1", "pw1"}},                  // no scheme, "//" in the path
		{"http:/usr1:pw1@host/mcp", []string{"usr1", "pw1"}},             // one slash
		{"http:///usr1:pw1@host/mcp", []string{"usr1", "pw1"}},           // three slashes
		{"http:usr1:pw1@host/mcp", []string{"usr1", "pw1"}},              // no slash
		{"http://usr1:pw1/pw2@host/mcp", []string{"usr1", "pw1", "pw2"}}, // "/" in the password
		{"http://usr1:pw1?pw2@host/mcp", []string{"usr1", "pw1", "pw2"}}, // "?" in the password
		{"http://usr1:pw1#pw2@host/mcp", []string{"usr1", "pw1", "pw2"}}, // "#" in the password
		{"http://usr1@pw1@host/mcp", []string{"usr1", "pw1"}},
		{"ftp://host/mcp?key=pw1@pw2", []string{"pw1", "pw2"}},
		{"http://usr1:pw1@[fe80::1%25en0]:8080/mcp?key=pw2", []string{"usr1", "pw1", "pw2"}},
		{"http://usr1\xff:pw1@host/mcp", []string{"usr1", "pw1"}},
		{"usr1:pw1@host:8081/mcp", []string{"usr1", "pw1"}},
		{"//usr1:pw1@host/mcp", []string{"usr1", "pw1"}},
		{"u\xff:pw1@host//x", []string{"pw1"}},
		{"", nil},
		{"@", nil},
		{"http://@", nil},
		{"?@#", nil},
	} {
		_, err := New(tc.up, DemoTokens(), nil)
		if err == nil {
			t.Errorf("New(%q) = nil error, want a refusal", tc.up)
			continue
		}
		for _, s := range tc.secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("New(%q): error %q shows %q", tc.up, err, s)
			}
		}
	}
}

// TestReview19gShownRawURLKeepsWhatHelps: what holds no secret is still
// shown, so that the operator sees the mistake.
func TestReview19gShownRawURLKeepsWhatHelps(t *testing.T) {
	for raw, want := range map[string]string{
		"ftp://host/mcp":                         `"ftp://host/mcp"`,
		"http://usr1:pw1@host/mcp?key=k":         `"http://…@host/mcp"`,
		"http://usr1:pw1@[fe80::1%25en0]:80/mcp": `"http://…@[fe80::1%25en0]:80/mcp"`,
		"http://host:bad/mcp#frag":               `"http://host:bad/mcp"`,
		"":                                       `""`,
	} {
		if got := shownRawURL(raw); got != want {
			t.Errorf("shownRawURL(%q) = %s, want %s", raw, got, want)
		}
	}
}

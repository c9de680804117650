package mcpguard

import (
	"strings"
	"testing"
)

// TestReview15eURIKey: spellings that a handler decoding escapes until
// none are left, reading the host as net/url does, or folding case as
// strings.EqualFold or strings.ToUpper does takes for the same resource
// share a key; other resources do not.
func TestReview15eURIKey(t *testing.T) {
	same := []string{
		"ui://tpl/settings",
		"ui://tpl/%" + strings.Repeat("25", 8) + "73ettings",
		"ui://tpl/%" + strings.Repeat("25", 40) + "73ettings",
		"ui://tpl/%%37%33ettings",
		"ui://tpl/\u017Fettings", // long s: strings.EqualFold and ToUpper take it for s
		"ui://tpl/SETTING%C5%BF",
		"ui://x@tpl/settings", "ui://u:p@tpl/settings",
		"ui://tpl:8080/settings", "ui://tpl:/settings", "ui://tpl./settings", "ui://TPL..:1/settings",
	}
	want := uriKey(same[0])
	for _, u := range same {
		if got := uriKey(u); got != want {
			t.Errorf("uriKey(%q) = %q, want %q (as uriKey(%q))", u, got, want, same[0])
		}
	}
	// ToUpper takes a dotless i for I; the Kelvin sign folds to k.
	for a, b := range map[string]string{"ui://tpl/admın": "ui://tpl/admin", "ui://tpl/\u212Aey": "ui://tpl/key"} {
		if uriKey(a) != uriKey(b) {
			t.Errorf("uriKey(%q) = %q, uriKey(%q) = %q: want equal", a, uriKey(a), b, uriKey(b))
		}
	}
	for _, u := range []string{
		"ui://tpl/setting", "ui://tpl/settings2", "ui://tp/settings", "ui://settings/tpl",
		"ui://tpl@x/settings", "ui://[::1]/settings", "ui://tpl:x/settings", "ui://tpl/%zzsettings",
	} {
		if got := uriKey(u); got == want {
			t.Errorf("uriKey(%q) = %q, the key of %q", u, got, same[0])
		}
	}
}

// TestReview15eURIKeyLong: a URI escaped over and over costs time in
// proportion to its length, not its square.
func TestReview15eURIKeyLong(t *testing.T) {
	u := "ui://tpl/%" + strings.Repeat("25", 1<<20) + "73"
	if got, want := uriKey(u), uriKey("ui://tpl/s"); got != want {
		t.Errorf("uriKey of a URI escaped 2^20 times = %.40q, want %q", got, want)
	}
}

// TestReview15eURIKeyNoAuthority: a URI without an authority ("urn:a:1")
// keeps its colons: only a host loses a port.
func TestReview15eURIKeyNoAuthority(t *testing.T) {
	if a, b := uriKey("urn:app:1"), uriKey("urn:app:2"); a == b {
		t.Errorf("uriKey(urn:app:1) = uriKey(urn:app:2) = %q", a)
	}
	if a, b := uriKey("ui:tpl/admin"), uriKey("ui://tpl/admin"); a != b {
		t.Errorf("uriKey(ui:tpl/admin) = %q, uriKey(ui://tpl/admin) = %q: want equal", a, b)
	}
}

package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestEmptyBearerTokenMessage: a client whose token is empty (an unset
// variable in "Authorization: Bearer $TOKEN") sends the Bearer scheme with
// no token, and was told "Authorization scheme must be Bearer", which it
// used; nor is a tab after the scheme (RFC 7235 separates the token with a
// space) another scheme. The refusal says the token is missing or
// malformed instead.
func TestEmptyBearerTokenMessage(t *testing.T) {
	rg := newRig(t, nil)
	body := call(`7`, "get_customer_record", "")
	for auth, want := range map[string]string{
		"Bearer":               "empty bearer token",
		"bearer ":              "empty bearer token",
		"Bearer\tviewer-token": "malformed bearer token",
		"Basic dmlld2VyOng=":   "Authorization scheme must be Bearer",
		"Bearerviewer-token":   "Authorization scheme must be Bearer",
	} {
		got := rg.post(t, auth, body)
		if got.status != http.StatusUnauthorized || !strings.Contains(got.body, "Unauthenticated: "+want) {
			t.Errorf("Authorization %q: status %d, body %s; want 401 saying %q", auth, got.status, got.body, want)
		}
		// Another authentication method gets the challenge without an
		// error code (RFC 6750, section 3.1); a bad Bearer token,
		// invalid_token.
		other := strings.HasSuffix(want, "must be Bearer")
		if strings.Contains(got.header.Get("WWW-Authenticate"), `error="invalid_token"`) == other {
			t.Errorf("Authorization %q: WWW-Authenticate %q, want invalid_token: %v", auth, got.header.Get("WWW-Authenticate"), !other)
		}
	}
}

// TestReview56PatternOriginRefused: AllowedOrigins took
// "https://*.example.com", which no browser sends (an origin comes whole),
// so every page of the site was refused 403 while the operator believed
// them allowed. New refuses the pattern, saying so.
func TestReview56PatternOriginRefused(t *testing.T) {
	for _, o := range []string{"https://*.example.com", "https://app.example.com:*", "*.example.com"} {
		_, err := newOrigins([]string{o})
		if err == nil || !strings.Contains(err.Error(), "a pattern matches no origin") {
			t.Errorf("newOrigins(%q): %v, want the pattern refused", o, err)
		}
	}
	if _, err := newOrigins([]string{"*", "https://app.example.com"}); err != nil {
		t.Errorf("newOrigins of \"*\" and an origin: %v", err)
	}
}

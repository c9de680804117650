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
		if !strings.Contains(got.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("Authorization %q: WWW-Authenticate %q, want invalid_token", auth, got.header.Get("WWW-Authenticate"))
		}
	}
}

package token_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// maxReport is the longest error a JWK Set may make this package report.
const maxReport = 4 << 10

// TestReview18JWKSErrorsBounded: the errors about a JWK Set stay short
// whatever the set holds. A key is named by its kid only when the kid is
// short (a 100 KB kid would otherwise be quoted whole, in every report),
// and a set with thousands of unusable keys lists a few of them and counts
// the rest, instead of a report of megabytes once a minute. The count of
// keys left out stays exact.
func TestReview18JWKSErrorsBounded(t *testing.T) {
	a := edKey(t)
	longKid := strings.Repeat("K", 100<<10)
	var bad []map[string]any
	bad = append(bad, map[string]any{"kty": "oct-x", "kid": longKid})
	for n := range 3000 {
		bad = append(bad, map[string]any{"kty": "oct-x", "kid": fmt.Sprint("k", n)})
	}

	t.Run("parse_jwks_long_kid", func(t *testing.T) {
		_, err := token.ParseJWKS(jwks(t, jwk(t, "a", a.Public()), bad[0]))
		if err == nil {
			t.Fatal("ParseJWKS accepted an unknown kty")
		}
		if len(err.Error()) > maxReport || strings.Contains(err.Error(), strings.Repeat("K", 100)) {
			t.Errorf("ParseJWKS error of %d bytes quotes the long kid, want it named by position", len(err.Error()))
		}
		if !strings.Contains(err.Error(), "JWK 2") {
			t.Errorf("ParseJWKS error %.200q: want the key named by its position, JWK 2", err)
		}
	})

	t.Run("remote_set_keys_left_out", func(t *testing.T) {
		f := newRemote(t, jwks(t, append([]map[string]any{jwk(t, "a", a.Public())}, bad...)...), token.RemoteKeySetOptions{})
		f.ok(t, "key a", edToken(t, a, "a"))
		errs := f.errs.all()
		if len(errs) != 1 {
			t.Fatalf("%d reports, want 1", len(errs))
		}
		msg := errs[0].Error()
		if len(msg) > maxReport {
			t.Errorf("report of %d bytes, want at most %d", len(msg), maxReport)
		}
		for _, want := range []string{"3001 keys left out, 1 kept", `JWK 2 (a kid of 102400 bytes)`, `JWK "k0": kty must be`, "and 2991 more"} {
			if !strings.Contains(msg, want) {
				t.Errorf("report %.300q...: lacks %q", msg, want)
			}
		}

		// A set with nothing usable fails the fetch: its error is as short.
		f.srv.serve(jwks(t, bad...), "")
		f.clock.advance(2 * time.Hour)
		f.ok(t, "key a, the provider's set now unusable", edToken(t, a, "a"))
		errs = f.errs.all()
		if len(errs) != 2 {
			t.Fatalf("%d reports, want 2", len(errs))
		}
		msg = errs[1].Error()
		if len(msg) > maxReport || !strings.Contains(msg, "no signature verification keys") || !strings.Contains(msg, "and 2991 more") {
			t.Errorf("failed fetch reported in %d bytes: %.300q...; want at most %d, naming the failure and counting the rest", len(msg), msg, maxReport)
		}
	})
}

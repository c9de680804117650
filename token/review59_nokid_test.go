package token_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview59NoKidRotation: a provider that signs without kids and
// rotates its one key. A token of the new key was refused "signature does
// not verify" until the set was an hour old (MaxAge); it makes the set be
// fetched again now, at most once per MinRefreshInterval, as a kid the set
// lacks does. While the provider publishes both keys (an overlap), tokens
// of either verify; the removed key is refused from the first fetch
// without it.
func TestReview59NoKidRotation(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{MinRefreshInterval: time.Minute})
	f.ok(t, "no kid, key a", edToken(t, a, ""))
	f.fetches(t, "key a", 1)

	// The overlap: b published beside a, no token names either.
	f.srv.serve(jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public())), "")
	f.clock.advance(2 * time.Minute)
	f.ok(t, "no kid, key b after it was published", edToken(t, b, ""))
	f.fetches(t, "key b", 2)
	f.ok(t, "no kid, key a during the overlap", edToken(t, a, ""))
	f.fetches(t, "key a during the overlap", 2)

	// a removed: refused once the set is fetched without it.
	f.srv.serve(jwks(t, jwk(t, "b", b.Public())), "")
	f.clock.advance(time.Hour)
	f.refused(t, "no kid, key a removed", edToken(t, a, ""), "signature does not verify")
	f.ok(t, "no kid, key b", edToken(t, b, ""))

	// A flood of tokens no key verifies: one fetch per interval.
	f.clock.advance(time.Minute)
	n := f.srv.count()
	for range 50 {
		f.refused(t, "no kid, a made-up key", edToken(t, edKey(t), ""), "signature does not verify")
	}
	f.fetches(t, "50 tokens of made-up keys", n+1)
	f.clock.advance(30 * time.Second)
	f.refused(t, "no kid, a made-up key 30 s later", edToken(t, edKey(t), ""), "signature does not verify")
	f.fetches(t, "30 s later", n+1)
	f.clock.advance(30 * time.Second)
	f.refused(t, "no kid, a made-up key an interval later", edToken(t, edKey(t), ""), "signature does not verify")
	f.fetches(t, "an interval later", n+2)
}

// TestReview59NoKidWhileSetDown: a token without a kid that no key of the
// set verifies while the set cannot be fetched is not judged (the provider
// may have rotated its key in), as a kid the set lacks is not; a token the
// current key verifies is accepted meanwhile.
func TestReview59NoKidWhileSetDown(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{MinRefreshInterval: time.Minute})
	f.srv.set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	f.clock.advance(2 * time.Minute)
	_, _, err := f.v.Verify(edToken(t, b, ""))
	if !errors.Is(err, token.ErrKeySetUnavailable) || errors.Is(err, token.ErrInvalidJWT) || !strings.Contains(err.Error(), "no kid") {
		t.Errorf("no kid, new key, set down: err %v, want not judged (ErrKeySetUnavailable, saying the token has no kid)", err)
	}
	f.ok(t, "no kid, key a, set down", edToken(t, a, ""))
}

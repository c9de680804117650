package token_test

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview12RemoteKeySetClockGoesBack: the set's spacing and age are
// measured on RemoteKeySetOptions.Now, which need not be monotonic (a Now
// that strips time.Now's monotonic reading, as t.UTC() does, follows the
// wall clock, which NTP or an operator may step back). After a step back
// past the last fetch, the set cannot tell how long ago that fetch was: a
// lookup that would fetch (a new kid, or the set's age) must fetch once,
// not wait until the clock has caught up again (a day, for a day's step),
// keeping a key the provider removed and refusing the one it added for
// that long. Spacing then resumes from the new reading.
func TestReview12RemoteKeySetClockGoesBack(t *testing.T) {
	a, b := edKey(t), edKey(t)
	for _, tc := range []struct {
		name string
		kid  string // the first token after the step back
		want string // its refusal, or "" for accepted
	}{
		{"added_key", "b", ""},
		{"removed_key", "a", "unknown kid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
			f.srv.serve(jwks(t, jwk(t, "b", b.Public())), "") // the provider rotates a out, b in
			f.clock.advance(-24 * time.Hour)
			tok := edToken(t, map[string]ed25519.PrivateKey{"a": a, "b": b}[tc.kid], tc.kid)
			if tc.want == "" {
				f.ok(t, "the first token after the step back", tok)
			} else {
				f.refused(t, "the first token after the step back", tok, tc.want)
			}
			f.fetches(t, "after the step back", 2)
			f.ok(t, "key b", edToken(t, b, "b"))
			f.refused(t, "key a, removed", edToken(t, a, "a"), "unknown kid")
			f.refused(t, "a made-up kid right after", edToken(t, b, "x"), "unknown kid")
			f.fetches(t, "right after the refetch", 2)
			f.clock.advance(time.Minute)
			f.refused(t, "a made-up kid an interval later", edToken(t, b, "y"), "unknown kid")
			f.fetches(t, "an interval after the refetch", 3)
		})
	}
}

// TestReview12DiscoveredSetClockGoesBack: so with the reads of the
// discovery document: after a step back, a refresh that finds the old
// jwks_uri gone reads the document once, and follows the move.
func TestReview12DiscoveredSetClockGoesBack(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newDiscovered(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
	f.srv.route(oidcPath, serveJSON(t, metadata(f.issuer, f.srv.URL+"/keys2")))
	f.srv.route("/keys2", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "b", b.Public())))))
	f.srv.route("/keys1", answer(http.StatusGone))
	f.clock.advance(-24 * time.Hour)
	f.verify(t, "key b after the step back", f.token(t, b, "b"), "")
	f.paths(t, "after the step back", oidcPath, "/keys1", "/keys1", oidcPath, "/keys2")
	if got, want := f.set.String(), f.srv.URL+"/keys2"; got != want {
		t.Errorf("set.String() = %q, want %q", got, want)
	}
}

// TestReview12DiscoveredSetSameURLStillFailing: a re-read that names the
// jwks_uri the set already uses, which still fails, changes nothing and
// reports nothing more than the failed fetch: the last good keys stay, and
// each interval brings one fetch and one read, however many tokens.
func TestReview12DiscoveredSetSameURLStillFailing(t *testing.T) {
	a := edKey(t)
	f := newDiscovered(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
	f.srv.route("/keys1", answer(http.StatusServiceUnavailable))
	for round := 1; round <= 2; round++ {
		f.clock.advance(time.Minute)
		for range 10 {
			f.verify(t, "a made-up kid", f.token(t, a, "x"), notJudged)
			f.verify(t, "key a, the last good set", f.token(t, a, "a"), "")
		}
		if got := f.count(oidcPath); got != 1+round {
			t.Errorf("round %d: %d document reads, want %d", round, got, 1+round)
		}
		if got := f.count("/keys1"); got != 1+round {
			t.Errorf("round %d: %d JWK Set fetches, want %d", round, got, 1+round)
		}
		errs := f.errs.all()
		if len(errs) != round || !strings.Contains(errs[round-1].Error(), "status 503") {
			t.Errorf("round %d: errors reported %v, want %d, the last the fetch's 503", round, errs, round)
		}
	}
	if got, want := f.set.String(), f.srv.URL+"/keys1"; got != want {
		t.Errorf("set.String() = %q, want %q", got, want)
	}
}

// TestReview12DiscoveredSetHidesNewURLCredentials: a jwks_uri read again
// may carry a credential (user info, an API key in the query). Whether its
// set fails or is used, the errors reported and String show the URL
// without it.
func TestReview12DiscoveredSetHidesNewURLCredentials(t *testing.T) {
	a, b := edKey(t), edKey(t)
	for _, tc := range []struct {
		name  string
		keys2 http.HandlerFunc
		moved bool
	}{
		{"new_set_fails", answer(http.StatusNotFound), false},
		{"new_set_used", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "b", b.Public())))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDiscovered(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
			secret := strings.Replace(f.srv.URL, "http://", "http://user:s3cret@", 1) + "/keys2?api_key=s3cret#s3cret"
			f.srv.route(oidcPath, serveJSON(t, metadata(f.issuer, secret)))
			f.srv.route("/keys2", tc.keys2)
			f.srv.route("/keys1", answer(http.StatusGone))
			f.clock.advance(time.Minute)
			want := notJudged // the old URL is gone, the new one fails
			if tc.moved {
				want = ""
			}
			f.verify(t, "key b", f.token(t, b, "b"), want)
			f.paths(t, "after the re-read", oidcPath, "/keys1", "/keys1", oidcPath, "/keys2")
			shown := f.set.String()
			if strings.Contains(shown, "s3cret") {
				t.Errorf("set.String() = %q, shows the credential", shown)
			}
			if tc.moved && shown != f.srv.URL+"/keys2?…" {
				t.Errorf("set.String() = %q, want the new URL without its credentials", shown)
			}
			for _, err := range f.errs.all() {
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("reported %q: shows the credential", err)
				}
			}
		})
	}
}

package token_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpguard/mcpguard/token"
)

// discoveredFixture is a verifier over a set found by DiscoverKeySet on a
// real idpServer whose document names srv.URL+"/keys1" at first.
type discoveredFixture struct {
	srv    *idpServer
	clock  *clock
	errs   *errorLog
	set    *token.RemoteKeySet
	v      *token.JWT
	issuer string
}

func newDiscovered(t *testing.T, keys1 []byte, opts token.RemoteKeySetOptions) *discoveredFixture {
	t.Helper()
	f := &discoveredFixture{srv: newIDPServer(t), clock: &clock{now: testNow}, errs: &errorLog{}}
	f.issuer = f.srv.URL
	f.srv.route(oidcPath, serveJSON(t, metadata(f.issuer, f.srv.URL+"/keys1")))
	f.srv.route("/keys1", serveJSON(t, json.RawMessage(keys1)))
	opts.Now, opts.ErrorHandler = f.clock.Now, f.errs.add
	var err error
	if f.set, err = token.DiscoverKeySet(context.Background(), f.issuer, &opts); err != nil {
		t.Fatalf("DiscoverKeySet: %v", err)
	}
	f.v = newJWT(t, token.JWTConfig{KeySet: f.set, Issuer: f.issuer})
	return f
}

// token is a token of the fixture's issuer signed by key under kid.
func (f *discoveredFixture) token(t *testing.T, key any, kid string) string {
	t.Helper()
	return sign(t, jwt.SigningMethodEdDSA, key, kid, claims(func(c jwt.MapClaims) { c["iss"] = f.issuer }))
}

func (f *discoveredFixture) verify(t *testing.T, what, tok, refusal string) {
	t.Helper()
	_, _, err := f.v.Verify(tok)
	switch {
	case refusal == "" && err != nil:
		t.Errorf("%s: %v, want accepted", what, err)
	case refusal != "":
		checkRefusal(t, err, tok, refusal)
	}
}

// paths checks the paths the server saw, in order.
func (f *discoveredFixture) paths(t *testing.T, what string, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, f.srv.requested()); diff != "" {
		t.Errorf("%s: paths requested (-want +got):\n%s", what, diff)
	}
}

func answer(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Error(w, bodyMarker, code) }
}

// TestReview12DiscoveredSetFollowsMovedJWKS: a provider that moves its
// jwks_uri (and rotates its keys there) is followed without a new set: when
// the old URL cannot be fetched any more (404, 410), on a token's new kid
// or once the set is due, or when it still answers but lacks the token's
// kid, the set reads the discovery document again, at the URL it was found
// at, fetches the set at the new jwks_uri and uses it from then on.
func TestReview12DiscoveredSetFollowsMovedJWKS(t *testing.T) {
	a, b, c := edKey(t), edKey(t), edKey(t)
	old := jwks(t, jwk(t, "a", a.Public()))
	moved := jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public()))
	for _, tc := range []struct {
		name     string
		oldURL   http.HandlerFunc // /keys1 after the move
		advance  time.Duration
		tokenKid string
		reported string // the error reported for /keys1, or ""
	}{
		{"old_url_gone_new_kid", answer(http.StatusGone), time.Minute, "b", "status 410"},
		{"old_url_404_set_due", answer(http.StatusNotFound), time.Hour, "a", "status 404"},
		{"old_url_stale_new_kid", serveJSON(t, json.RawMessage(old)), time.Minute, "b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDiscovered(t, old, token.RemoteKeySetOptions{})
			f.srv.route(oidcPath, serveJSON(t, metadata(f.issuer, f.srv.URL+"/keys2")))
			f.srv.route("/keys2", serveJSON(t, json.RawMessage(moved)))
			f.srv.route("/keys1", tc.oldURL)
			f.clock.advance(tc.advance)
			key := map[string]any{"a": a, "b": b}[tc.tokenKid]
			f.verify(t, "the first token after the move", f.token(t, key, tc.tokenKid), "")
			f.paths(t, "after the move", oidcPath, "/keys1", "/keys1", oidcPath, "/keys2")
			if got, want := f.set.String(), f.srv.URL+"/keys2"; got != want {
				t.Errorf("set.String() = %q, want %q", got, want)
			}
			f.verify(t, "key a", f.token(t, a, "a"), "")
			f.verify(t, "key b", f.token(t, b, "b"), "")
			errs := f.errs.all()
			switch {
			case tc.reported == "" && len(errs) != 0:
				t.Errorf("errors reported: %v, want none", errs)
			case tc.reported != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.reported)):
				t.Errorf("errors reported: %v, want one with %q", errs, tc.reported)
			}
			// The provider rotates at the new URL: the set refetches there.
			f.srv.route("/keys2", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "b", b.Public()), jwk(t, "c", c.Public())))))
			f.clock.advance(time.Minute)
			f.verify(t, "key c, added at the new URL", f.token(t, c, "c"), "")
			f.verify(t, "key a, removed at the new URL", f.token(t, a, "a"), "unknown kid")
			f.paths(t, "after the rotation", oidcPath, "/keys1", "/keys1", oidcPath, "/keys2", "/keys2")
		})
	}
}

// TestReview12DiscoveredSetRefusesBadReread: a document read again is
// checked as at first discovery; one that fails (another issuer, a jwks_uri
// NewRemoteKeySet would refuse, a failed fetch, a jwks_uri whose set cannot
// be fetched) is reported, without quoting the document, and changes
// nothing: the old URL and the old keys stay in use, whether the old URL
// still answers or not. A later good document is still followed.
func TestReview12DiscoveredSetRefusesBadReread(t *testing.T) {
	a, b := edKey(t), edKey(t)
	old := jwks(t, jwk(t, "a", a.Public()))
	moved := jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public()))
	for _, tc := range []struct {
		name  string
		doc   func(f *discoveredFixture) http.HandlerFunc
		keys2 http.HandlerFunc // nil: the moved set
		want  string           // in the reported error
		paths []string         // after the old URL's, when the re-read fails
	}{
		{"other_issuer", func(f *discoveredFixture) http.HandlerFunc {
			return serveJSON(t, metadata("https://other.example", f.srv.URL+"/keys2"))
		}, nil, `"issuer" is "https://other.example"`, []string{oidcPath}},
		{"issuer_with_slash", func(f *discoveredFixture) http.HandlerFunc {
			return serveJSON(t, metadata(f.issuer+"/", f.srv.URL+"/keys2"))
		}, nil, `"issuer" is`, []string{oidcPath}},
		{"plain_http_jwks_uri", func(f *discoveredFixture) http.HandlerFunc {
			return serveJSON(t, metadata(f.issuer, "http://idp.example/keys2"))
		}, nil, "loopback", []string{oidcPath}},
		{"ftp_jwks_uri", func(f *discoveredFixture) http.HandlerFunc {
			return serveJSON(t, metadata(f.issuer, "ftp://127.0.0.1/keys2"))
		}, nil, "scheme must be https", []string{oidcPath}},
		{"no_jwks_uri", func(f *discoveredFixture) http.HandlerFunc {
			return serveJSON(t, map[string]any{"issuer": f.issuer, "x": bodyMarker})
		}, nil, `no "jwks_uri"`, []string{oidcPath}},
		{"document_500", func(f *discoveredFixture) http.HandlerFunc {
			return answer(http.StatusInternalServerError)
		}, nil, "status 500", []string{oidcPath}},
		{"document_not_json", func(f *discoveredFixture) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>" + bodyMarker)) }
		}, nil, "not a JSON object", []string{oidcPath}},
		{"new_jwks_uri_404", func(f *discoveredFixture) http.HandlerFunc {
			return serveJSON(t, metadata(f.issuer, f.srv.URL+"/keys2"))
		}, answer(http.StatusNotFound), "status 404", []string{oidcPath, "/keys2"}},
		{"new_jwks_uri_no_keys", func(f *discoveredFixture) http.HandlerFunc {
			return serveJSON(t, metadata(f.issuer, f.srv.URL+"/keys2"))
		}, serveJSON(t, map[string]any{"keys": []any{}, "x": bodyMarker}), "no signature verification keys", []string{oidcPath, "/keys2"}},
	} {
		for _, oldURL := range []string{"gone", "stale"} {
			t.Run(tc.name+"_old_url_"+oldURL, func(t *testing.T) {
				f := newDiscovered(t, old, token.RemoteKeySetOptions{})
				f.srv.route(oidcPath, tc.doc(f))
				keys2 := tc.keys2
				if keys2 == nil {
					keys2 = serveJSON(t, json.RawMessage(moved))
				}
				f.srv.route("/keys2", keys2)
				reports, unknown := 1, "unknown kid"
				if oldURL == "gone" {
					// The set cannot be fetched: a kid it lacks is not
					// judged.
					f.srv.route("/keys1", answer(http.StatusNotFound))
					reports, unknown = 2, notJudged
				}
				f.clock.advance(time.Minute)
				f.verify(t, "key b, re-read refused", f.token(t, b, "b"), unknown)
				f.verify(t, "key a, the old set", f.token(t, a, "a"), "")
				f.paths(t, "after the refused re-read", append([]string{oidcPath, "/keys1", "/keys1"}, tc.paths...)...)
				if got, want := f.set.String(), f.srv.URL+"/keys1"; got != want {
					t.Errorf("set.String() = %q, want the old %q", got, want)
				}
				errs := f.errs.all()
				if len(errs) != reports {
					t.Fatalf("errors reported: %v, want %d", errs, reports)
				}
				last := errs[reports-1].Error()
				if !strings.Contains(last, tc.want) || strings.Contains(last, bodyMarker) {
					t.Errorf("reported %q, want it to contain %q and not to quote the answer", last, tc.want)
				}
				if !strings.Contains(last, f.srv.URL+"/keys1") {
					t.Errorf("reported %q, want it to name the set's URL, kept", last)
				}

				// The provider fixes its document: the next re-read, an
				// interval later, is followed.
				f.srv.route(oidcPath, serveJSON(t, metadata(f.issuer, f.srv.URL+"/keys2")))
				f.srv.route("/keys2", serveJSON(t, json.RawMessage(moved)))
				f.verify(t, "key b inside the interval", f.token(t, b, "b"), unknown)
				f.clock.advance(time.Minute)
				f.verify(t, "key b once the document is good", f.token(t, b, "b"), "")
				if got, want := f.set.String(), f.srv.URL+"/keys2"; got != want {
					t.Errorf("set.String() = %q, want %q", got, want)
				}
			})
		}
	}
}

// count returns how many times the server saw path.
func (f *discoveredFixture) count(path string) int {
	n := 0
	for _, p := range f.srv.requested() {
		if p == path {
			n++
		}
	}
	return n
}

// TestReview12DiscoveryRereadFlood: tokens with made-up kids, sequential
// or concurrent, make the set read the discovery document at most once per
// MinRefreshInterval, as they make it fetch the set; a known key keeps
// working meanwhile.
func TestReview12DiscoveryRereadFlood(t *testing.T) {
	a := edKey(t)
	f := newDiscovered(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{MinRefreshInterval: time.Minute})
	n := 0
	flood := func(count int) {
		t.Helper()
		for range count {
			n++
			f.verify(t, "a made-up kid", f.token(t, a, fmt.Sprintf("made-up-%d", n)), "unknown kid")
		}
	}
	check := func(what string, docs, sets int) {
		t.Helper()
		if got := f.count(oidcPath); got != docs {
			t.Errorf("%s: %d discovery document reads, want %d", what, got, docs)
		}
		if got := f.count("/keys1"); got != sets {
			t.Errorf("%s: %d JWK Set fetches, want %d", what, got, sets)
		}
	}
	flood(50)
	check("50 made-up kids right after discovery", 1, 1)
	f.clock.advance(time.Minute)
	flood(50)
	check("50 made-up kids one interval later", 2, 2)
	f.clock.advance(59 * time.Second)
	flood(50)
	f.verify(t, "the known key during the flood", f.token(t, a, "a"), "")
	check("59 s later", 2, 2)
	f.clock.advance(time.Second)
	var wg sync.WaitGroup
	for i := range 30 {
		tok := f.token(t, a, fmt.Sprintf("concurrent-%d", i))
		wg.Go(func() {
			if _, _, err := f.v.Verify(tok); err == nil {
				t.Errorf("a made-up kid was accepted")
			}
		})
	}
	wg.Wait()
	check("30 concurrent made-up kids another interval later", 3, 3)
}

// TestReview12DiscoveryRereadsSpacedFromLastRead: the interval is kept
// between two reads of the document, not only between the starts of two
// refreshes: a refresh whose fetch took most of the interval, and then read
// the document, is not followed by another read before the interval has
// passed since that read.
func TestReview12DiscoveryRereadsSpacedFromLastRead(t *testing.T) {
	a := edKey(t)
	f := newDiscovered(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{MinRefreshInterval: time.Minute})
	var once sync.Once
	f.srv.route("/keys1", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { f.clock.advance(50 * time.Second) }) // a slow answer
		http.NotFound(w, r)
	})
	f.clock.advance(time.Minute)
	f.verify(t, "made-up kid, slow failing fetch", f.token(t, a, "x1"), notJudged)
	if got := f.count(oidcPath); got != 2 {
		t.Fatalf("after the first failed refresh: %d document reads, want 2", got)
	}
	f.clock.advance(10 * time.Second) // an interval after the refresh's start
	f.verify(t, "made-up kid, fast failing fetch", f.token(t, a, "x2"), notJudged)
	if got, want := f.count("/keys1"), 3; got != want {
		t.Errorf("%d JWK Set fetches, want %d", got, want)
	}
	if got := f.count(oidcPath); got != 2 {
		t.Errorf("10 s after the last read: %d document reads, want 2", got)
	}
	f.clock.advance(time.Minute)
	f.verify(t, "made-up kid, an interval after the read", f.token(t, a, "x3"), notJudged)
	if got := f.count(oidcPath); got != 3 {
		t.Errorf("an interval after the last read: %d document reads, want 3", got)
	}
	f.verify(t, "key a throughout", f.token(t, a, "a"), "")
}

// TestReview12DiscoveryRFC8414Reread: a set found through RFC 8414's
// metadata reads that document again, not the OpenID Connect one first.
func TestReview12DiscoveryRFC8414Reread(t *testing.T) {
	a, b := edKey(t), edKey(t)
	srv := newIDPServer(t)
	issuer := srv.URL + "/tenant"
	doc := oauthPath + "/tenant"
	srv.route(doc, serveJSON(t, metadata(issuer, srv.URL+"/keys1")))
	srv.route("/keys1", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "a", a.Public())))))
	clk := &clock{now: testNow}
	set, err := token.DiscoverKeySet(context.Background(), issuer, &token.RemoteKeySetOptions{Now: clk.Now, ErrorHandler: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	v := newJWT(t, token.JWTConfig{KeySet: set, Issuer: issuer})
	srv.route(doc, serveJSON(t, metadata(issuer, srv.URL+"/keys2")))
	srv.route("/keys2", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "b", b.Public())))))
	srv.route("/keys1", answer(http.StatusGone))
	clk.advance(time.Minute)
	tok := sign(t, jwt.SigningMethodEdDSA, b, "b", claims(func(c jwt.MapClaims) { c["iss"] = issuer }))
	if _, _, err := v.Verify(tok); err != nil {
		t.Errorf("key b at the moved URL: %v", err)
	}
	want := []string{"/tenant" + oidcPath, doc, "/keys1", "/keys1", doc, "/keys2"}
	if diff := cmp.Diff(want, srv.requested()); diff != "" {
		t.Errorf("paths requested (-want +got):\n%s", diff)
	}
}

// TestReview12NewRemoteKeySetNeverRereads: a set made by NewRemoteKeySet
// has no discovery document: a failed fetch or a missing kid fetches
// nothing else.
func TestReview12NewRemoteKeySetNeverRereads(t *testing.T) {
	a, b := edKey(t), edKey(t)
	srv := newIDPServer(t)
	srv.route(oidcPath, serveJSON(t, metadata(srv.URL, srv.URL+"/keys2")))
	srv.route("/keys2", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "b", b.Public())))))
	srv.route("/keys1", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "a", a.Public())))))
	clk := &clock{now: testNow}
	set, err := token.NewRemoteKeySet(context.Background(), srv.URL+"/keys1", &token.RemoteKeySetOptions{Now: clk.Now, ErrorHandler: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	v := newJWT(t, token.JWTConfig{KeySet: set, Issuer: srv.URL})
	withIss := claims(func(c jwt.MapClaims) { c["iss"] = srv.URL })
	clk.advance(time.Minute)
	_, _, err = v.Verify(sign(t, jwt.SigningMethodEdDSA, b, "b", withIss))
	checkRefusal(t, err, "", "unknown kid")
	srv.route("/keys1", answer(http.StatusGone))
	clk.advance(time.Minute)
	_, _, err = v.Verify(sign(t, jwt.SigningMethodEdDSA, b, "b", withIss))
	checkRefusal(t, err, "", notJudged)
	if diff := cmp.Diff([]string{"/keys1", "/keys1", "/keys1"}, srv.requested()); diff != "" {
		t.Errorf("paths requested (-want +got):\n%s", diff)
	}
}

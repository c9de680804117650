package token_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// jwksServer is a real HTTP server on 127.0.0.1 that publishes a JWK Set
// and counts the requests for it. Its answer can be changed at any time.
type jwksServer struct {
	*httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	answer   http.HandlerFunc
}

func newJWKSServer(t *testing.T, set []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.serve(set, "")
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		answer := s.answer
		s.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// serve makes the server answer set, with a Cache-Control header unless
// cacheControl is empty.
func (s *jwksServer) serve(set []byte, cacheControl string) {
	s.set(func(w http.ResponseWriter, r *http.Request) {
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(set)
	})
}

func (s *jwksServer) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.answer = h
	s.mu.Unlock()
}

func (s *jwksServer) count() int { return int(s.requests.Load()) }

// clock is the settable clock of a RemoteKeySet. When calls is set, every
// reading is signalled on it.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	calls chan struct{}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls != nil {
		c.calls <- struct{}{}
	}
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// errorLog collects the errors a RemoteKeySet reports.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

func edKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// remoteFixture is a verifier over a RemoteKeySet fetched from a jwksServer.
type remoteFixture struct {
	srv   *jwksServer
	clock *clock
	errs  *errorLog
	set   *token.RemoteKeySet
	v     *token.JWT
}

func newRemote(t *testing.T, set []byte, opts token.RemoteKeySetOptions) *remoteFixture {
	t.Helper()
	f := &remoteFixture{srv: newJWKSServer(t, set), clock: &clock{now: testNow}, errs: &errorLog{}}
	opts.Now, opts.ErrorHandler = f.clock.Now, f.errs.add
	var err error
	if f.set, err = token.NewRemoteKeySet(context.Background(), f.srv.URL+"/jwks.json", &opts); err != nil {
		t.Fatalf("NewRemoteKeySet: %v", err)
	}
	f.v = newJWT(t, token.JWTConfig{KeySet: f.set})
	return f
}

// ok checks that tok verifies.
func (f *remoteFixture) ok(t *testing.T, what, tok string) {
	t.Helper()
	if _, _, err := f.v.Verify(tok); err != nil {
		t.Errorf("%s: %v, want accepted", what, err)
	}
}

// refused checks that tok is refused with a reason containing want.
func (f *remoteFixture) refused(t *testing.T, what, tok, want string) {
	t.Helper()
	_, _, err := f.v.Verify(tok)
	if err == nil {
		t.Errorf("%s: accepted, want refused (%s)", what, want)
		return
	}
	checkRefusal(t, err, tok, want)
}

// fetches checks the number of requests the server has seen.
func (f *remoteFixture) fetches(t *testing.T, what string, want int) {
	t.Helper()
	if got := f.srv.count(); got != want {
		t.Errorf("%s: the server saw %d requests, want %d", what, got, want)
	}
}

func edToken(t *testing.T, key ed25519.PrivateKey, kid string) string {
	return sign(t, jwt.SigningMethodEdDSA, key, kid, claims(nil))
}

// TestRemoteKeySetRotation: a token signed by a key the provider added
// after the set was fetched is accepted after one refetch, without a new
// RemoteKeySet; the key the provider removed is refused from then on; and
// a set past its MaxAge is fetched again even when every kid is known.
func TestRemoteKeySetRotation(t *testing.T) {
	a, b, c := edKey(t), edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
	f.fetches(t, "after NewRemoteKeySet", 1)
	f.ok(t, "key a", edToken(t, a, "a"))
	f.fetches(t, "a known kid", 1)

	f.srv.serve(jwks(t, jwk(t, "b", b.Public())), "") // the provider rotates a out, b in
	f.clock.advance(2 * time.Minute)
	f.ok(t, "key b after the rotation", edToken(t, b, "b"))
	f.fetches(t, "after b", 2)
	f.refused(t, "key a after the rotation", edToken(t, a, "a"), "unknown kid")
	f.fetches(t, "after a", 2)

	f.srv.serve(jwks(t, jwk(t, "c", c.Public())), "") // b out, c in; no token names c yet
	f.clock.advance(time.Hour)
	f.refused(t, "key b past the set's max age", edToken(t, b, "b"), "unknown kid")
	f.fetches(t, "past the max age", 3)
	f.ok(t, "key c", edToken(t, c, "c"))
	f.fetches(t, "c, fetched already", 3)
	if errs := f.errs.all(); len(errs) != 0 {
		t.Errorf("errors reported: %v", errs)
	}
}

// TestRemoteKeySetUnknownKidFlood: tokens naming kids the provider never
// published cause at most one fetch per MinRefreshInterval, however many
// arrive, and the known key keeps working meanwhile.
func TestRemoteKeySetUnknownKidFlood(t *testing.T) {
	a := edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{MinRefreshInterval: time.Minute})
	flood := func(n int) {
		t.Helper()
		for i := range n {
			tok := edToken(t, a, fmt.Sprintf("random-%d-%d", f.srv.count(), i))
			if _, _, err := f.v.Verify(tok); err == nil || !strings.Contains(err.Error(), "unknown kid") {
				t.Fatalf("made-up kid: err %v, want unknown kid", err)
			}
		}
	}
	flood(50)
	f.fetches(t, "50 made-up kids right after the first fetch", 1)
	f.clock.advance(time.Minute)
	flood(50)
	f.fetches(t, "50 made-up kids one interval later", 2)
	f.clock.advance(59 * time.Second)
	flood(50)
	f.ok(t, "the known key during the flood", edToken(t, a, "a"))
	f.fetches(t, "59 s later", 2)
	f.clock.advance(time.Second)
	flood(50)
	f.fetches(t, "another interval later", 3)
}

// TestRemoteKeySetConcurrentMissesShareOneFetch: lookups of a new kid that
// arrive while a fetch is under way wait for that fetch (they are neither
// refused at once nor fetch again), and all of them get the new key.
func TestRemoteKeySetConcurrentMissesShareOneFetch(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
	entered, release := make(chan struct{}, 10), make(chan struct{})
	rotated := jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public()))
	f.srv.set(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.Write(rotated)
	})
	f.clock.advance(2 * time.Minute)
	calls := make(chan struct{}, 1000)
	f.clock.mu.Lock()
	f.clock.calls = calls
	f.clock.mu.Unlock()

	const n = 20
	tok := edToken(t, b, "b")
	errs := make(chan error, n+1)
	verify := func() {
		_, _, err := f.v.Verify(tok)
		errs <- err
	}
	go verify()
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	wait(entered, "the first fetch")
	for range n {
		go verify()
	}
	// Each lookup reads the clock once, under the set's lock, when it
	// decides to wait for the fetch, fail, or fetch: after the first
	// lookup's reading and n more, all n have decided.
	for i := range n + 1 {
		wait(calls, fmt.Sprintf("clock reading %d", i+1))
	}
	close(release)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Errorf("a lookup during the fetch: %v, want accepted", err)
		}
	}
	f.fetches(t, "after the concurrent misses", 2)
}

// TestRemoteKeySetFailuresKeepLastGoodSet: a refresh that fails, whatever
// the server answers, is reported and leaves the last good set in use,
// both on an unknown kid and past the set's max age; the next successful
// fetch after the interval brings the new keys.
func TestRemoteKeySetFailuresKeepLastGoodSet(t *testing.T) {
	a, b := edKey(t), edKey(t)
	good := jwks(t, jwk(t, "a", a.Public()))
	rotated := jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public()))
	release := make(chan struct{})
	defer close(release)
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
		want   string
	}{
		{"status_500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"keys":[]}`, http.StatusInternalServerError)
		}, "status 500"},
		{"status_304", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotModified)
		}, "status 304"},
		{"huge_body", func(w http.ResponseWriter, r *http.Request) {
			w.Write(rotated[:len(rotated)-2])
			w.Write([]byte(strings.Repeat(" ", 1<<20)))
			w.Write([]byte("]}"))
		}, "larger than"},
		{"invalid_json", func(w http.ResponseWriter, r *http.Request) {
			w.Write(rotated[:len(rotated)-1])
		}, "not a JSON object"},
		{"private_key_in_set", func(w http.ResponseWriter, r *http.Request) {
			k := jwk(t, "b", b.Public())
			k["d"] = "c2VjcmV0"
			w.Write(jwks(t, jwk(t, "a", a.Public()), k))
		}, "private member"},
		{"slow_server", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, "deadline exceeded"},
		{"redirect_to_plain_http", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://jwks.example/keys.json", http.StatusFound)
		}, "redirect refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Short, for slow_server; a megabyte under -race on a busy
			// machine may take longer than that to arrive.
			timeout := 300 * time.Millisecond
			if tc.name == "huge_body" {
				timeout = 10 * time.Second
			}
			f := newRemote(t, good, token.RemoteKeySetOptions{Timeout: timeout})
			f.srv.set(tc.answer)
			reported := func(what string, n int) {
				t.Helper()
				errs := f.errs.all()
				if len(errs) != n {
					t.Fatalf("%s: %d errors reported, want %d: %v", what, len(errs), n, errs)
				}
				if err := errs[n-1]; !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), f.srv.URL) {
					t.Errorf("%s: reported %q, want it to name the URL and contain %q", what, err, tc.want)
				}
			}
			// A kid the set lacks while its fetch fails is not judged
			// (the provider may have rotated it in); a set that was
			// fetched without a usable key b judged it unknown.
			unknown := notJudged
			if tc.name == "private_key_in_set" {
				unknown = "unknown kid"
			}
			f.clock.advance(2 * time.Minute)
			f.refused(t, "key b, refresh failing", edToken(t, b, "b"), unknown)
			f.fetches(t, "unknown kid", 2)
			reported("unknown kid", 1)
			f.ok(t, "key a after a failed refresh", edToken(t, a, "a"))

			f.clock.advance(time.Hour)
			f.ok(t, "key a past the max age, refresh failing", edToken(t, a, "a"))
			f.fetches(t, "past the max age", 3)
			reported("past the max age", 2)
			f.ok(t, "key a right after", edToken(t, a, "a"))
			f.fetches(t, "right after a failed refresh", 3)

			f.srv.serve(rotated, "")
			f.refused(t, "key b inside the interval", edToken(t, b, "b"), unknown)
			f.clock.advance(time.Minute)
			f.ok(t, "key b once the server recovered", edToken(t, b, "b"))
			f.fetches(t, "after the recovery", 4)
			if n := len(f.errs.all()); n != 2 {
				t.Errorf("%d errors reported after the recovery, want 2", n)
			}
		})
	}
}

// TestRemoteKeySetCacheControl: a response's Cache-Control max-age
// shortens MaxAge, but not below MinRefreshInterval; a longer one does not
// lengthen it.
func TestRemoteKeySetCacheControl(t *testing.T) {
	a := edKey(t)
	set := jwks(t, jwk(t, "a", a.Public()))
	for _, tc := range []struct {
		name         string
		cacheControl string
		maxAge       time.Duration
		fresh        time.Duration // the set's lifetime
	}{
		{"no_header", "", 10 * time.Minute, 10 * time.Minute},
		{"default_max_age", "", 0, time.Hour},
		{"shorter", "public, max-age=120", 0, 2 * time.Minute},
		{"below_min_interval", "max-age=0", 0, time.Minute},
		{"other_directives", "no-transform, max-age=10", 0, time.Minute},
		{"longer", "max-age=86400", 10 * time.Minute, 10 * time.Minute},
		{"malformed", "max-age=soon", 10 * time.Minute, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t, set, token.RemoteKeySetOptions{MaxAge: tc.maxAge})
			f.srv.serve(set, tc.cacheControl)
			// The first fetch had no header; this one has.
			f.clock.advance(time.Minute)
			f.refused(t, "unknown kid", edToken(t, a, "x"), "unknown kid")
			f.fetches(t, "the refetch", 2)
			f.clock.advance(tc.fresh - time.Second)
			f.ok(t, "key a, fresh", edToken(t, a, "a"))
			f.fetches(t, "just before the set's expiry", 2)
			f.clock.advance(time.Second)
			f.ok(t, "key a, due", edToken(t, a, "a"))
			f.fetches(t, "at the set's expiry", 3)
		})
	}
}

// TestNewRemoteKeySetErrors: NewRemoteKeySet refuses any URL but https or
// http to a loopback host, before any request, negative durations, and a
// first fetch that fails.
func TestNewRemoteKeySetErrors(t *testing.T) {
	a := edKey(t)
	srv := newJWKSServer(t, jwks(t, jwk(t, "a", a.Public())))
	for _, u := range []string{
		"http://jwks.example/keys.json",
		"http://10.0.0.1/keys.json",
		"http://127.0.0.1.example/keys.json",
		"http://[::2]/keys.json",
		"ftp://127.0.0.1/keys.json",
		"file:///etc/keys.json",
		"https:///keys.json",
		"127.0.0.1/keys.json",
		"",
	} {
		_, err := token.NewRemoteKeySet(context.Background(), u, nil)
		if err == nil || !strings.Contains(err.Error(), "JWK Set URL") {
			t.Errorf("NewRemoteKeySet(%q): err %v, want the URL refused", u, err)
		}
	}
	if srv.count() != 0 {
		t.Errorf("refused URLs: the server saw %d requests", srv.count())
	}
	for _, o := range []token.RemoteKeySetOptions{{Timeout: -1}, {MinRefreshInterval: -1}, {MaxAge: -1}} {
		if _, err := token.NewRemoteKeySet(context.Background(), srv.URL, &o); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
	srv.set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	if _, err := token.NewRemoteKeySet(context.Background(), srv.URL, nil); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("first fetch 404: err %v, want status 404", err)
	}
	srv.serve(jwks(t, jwk(t, "a", a.Public())), "")
	if _, err := token.NewRemoteKeySet(context.Background(), srv.URL, nil); err != nil {
		t.Errorf("http to 127.0.0.1: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := token.NewRemoteKeySet(ctx, srv.URL, nil); err == nil {
		t.Errorf("cancelled context: no error")
	}
}

// TestJWTWithKeySet: with a remote set, a JWT keeps every guarantee of
// fixed keys: the algorithm must match the type of the key the kid
// selects, "none" and HMAC are refused, a token without kid is tried with
// the set's keys of its algorithm; Keys and KeySet together are an error;
// and a lookup that has to wait ends with Authenticate's context.
func TestJWTWithKeySet(t *testing.T) {
	k := newTestKeys(t)
	f := newRemote(t, jwks(t, jwk(t, "ed", k.ed.Public()), jwk(t, "ec", &k.ec.PublicKey)), token.RemoteKeySetOptions{})
	f.ok(t, "EdDSA with the Ed25519 key", edToken(t, k.ed, "ed"))
	f.ok(t, "ES256 with the P-256 key", sign(t, jwt.SigningMethodES256, k.ec, "ec", claims(nil)))
	f.refused(t, "ES256 naming the Ed25519 key", sign(t, jwt.SigningMethodES256, k.ec, "ed", claims(nil)), "does not match")
	f.refused(t, "RS256 naming the P-256 key", sign(t, jwt.SigningMethodRS256, k.rsa, "ec", claims(nil)), "does not match")
	f.refused(t, "HS256", sign(t, jwt.SigningMethodHS256, []byte("0123456789abcdef0123456789abcdef"), "ed", claims(nil)), "HS256 not accepted")
	f.refused(t, "none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "ed", claims(nil)), "not accepted")
	f.ok(t, "no kid, two keys, the Ed25519 one verifies", edToken(t, k.ed, ""))
	f.ok(t, "no kid, two keys, the P-256 one verifies", sign(t, jwt.SigningMethodES256, k.ec, "", claims(nil)))
	f.refused(t, "no kid, RS256, no RSA key", sign(t, jwt.SigningMethodRS256, k.rsa, "", claims(nil)), "no key of the set for algorithm RS256")
	f.refused(t, "no kid, signed by another key", edToken(t, edKey(t), ""), "signature does not verify")
	f.refused(t, "kid not a string", func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims(nil))
		tok.Header["kid"] = 7
		s, _ := tok.SignedString(k.ed)
		return s
	}(), "kid is not a string")

	one := newRemote(t, jwks(t, jwk(t, "ed", k.ed.Public())), token.RemoteKeySetOptions{})
	one.ok(t, "no kid, one key", edToken(t, k.ed, ""))
	one.fetches(t, "no kid", 1)

	if _, err := token.NewJWT(token.JWTConfig{Keys: k.public(), KeySet: f.set, Issuer: testIssuer, Audience: testAudience}); err == nil {
		t.Errorf("NewJWT with Keys and KeySet: no error")
	}

	// A lookup waiting for a fetch ends with its context.
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{}, 1)
	f.srv.set(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	f.clock.advance(2 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.v.Authenticate(ctx, edToken(t, k.ed, "new"))
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, token.ErrKeySetUnavailable) || !errors.Is(err, context.Canceled) || errors.Is(err, token.ErrInvalidJWT) {
		t.Errorf("lookup with a cancelled context: err %v, want not judged (ErrKeySetUnavailable, context.Canceled)", err)
	}
}

// TestJWTTypes: a token whose header "typ" is present is accepted only
// when it is one of the accepted types (JWT and at+jwt by default, case and
// "application/" aside); the refusal does not quote the token's typ.
func TestJWTTypes(t *testing.T) {
	k := newTestKeys(t)
	def := newJWT(t, token.JWTConfig{Keys: k.public()})
	atOnly := newJWT(t, token.JWTConfig{Keys: k.public(), Types: []string{"application/at+jwt"}})
	withTyp := func(typ any) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims(nil))
		tok.Header["kid"] = "ec"
		if typ == nil {
			delete(tok.Header, "typ")
		} else {
			tok.Header["typ"] = typ
		}
		s, err := tok.SignedString(k.ec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		v        *token.JWT
		typ      any
		accepted bool
	}{
		{"absent", def, nil, true},
		{"JWT", def, "JWT", true},
		{"jwt", def, "jwt", true},
		{"application_jwt", def, "application/jwt", true},
		{"at+jwt", def, "at+jwt", true},
		{"AT+JWT", def, "AT+JWT", true},
		{"application_at+jwt", def, "application/at+jwt", true},
		{"dpop+jwt", def, "dpop+jwt", false},
		{"logout+jwt", def, "logout+jwt", false},
		{"secevent+jwt", def, "secevent+jwt", false},
		{"empty", def, "", false},
		{"number", def, 1, false},
		{"array", def, []string{"JWT"}, false},
		{"at_only_absent", atOnly, nil, true},
		{"at_only_at+jwt", atOnly, "at+jwt", true},
		{"at_only_JWT", atOnly, "JWT", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := withTyp(tc.typ)
			_, _, err := tc.v.Verify(tok)
			if tc.accepted {
				if err != nil {
					t.Errorf("typ %v: %v, want accepted", tc.typ, err)
				}
				return
			}
			checkRefusal(t, err, tok, "typ")
			if s, ok := tc.typ.(string); ok && strings.Contains(s, "+") && tc.v == def && strings.Contains(err.Error(), s) {
				t.Errorf("err %q quotes the token's typ", err)
			}
		})
	}
	if _, err := token.NewJWT(token.JWTConfig{Keys: k.public(), Issuer: testIssuer, Audience: testAudience, Types: []string{""}}); err == nil {
		t.Errorf("Types with an empty entry: no error")
	}
}

// TestRemoteKeySetErrorsHidePassword: a JWK Set URL with a password in its
// user info (some providers put a credential there) never shows the
// password in the errors NewRemoteKeySet returns or a refresh reports:
// they end up in logs.
func TestRemoteKeySetErrorsHidePassword(t *testing.T) {
	srv := newJWKSServer(t, nil)
	srv.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	u := strings.Replace(srv.URL, "http://", "http://reader:s3cret-pass@", 1) + "/jwks.json"
	_, err := token.NewRemoteKeySet(context.Background(), u, nil)
	if err == nil {
		t.Fatal("NewRemoteKeySet with a failing server: no error")
	}
	if strings.Contains(err.Error(), "s3cret-pass") || !strings.Contains(err.Error(), "status 500") {
		t.Errorf("error %q: want the status and no password", err)
	}
}

// TestNewJWTRefusesUnusableConfig: a RemoteKeySet not made by
// NewRemoteKeySet (its zero value) and a Types entry that is empty once
// normalised ("application/") are refused by NewJWT, not found out on the
// first token (a panic under the set's lock; a typ "" accepted).
func TestNewJWTRefusesUnusableConfig(t *testing.T) {
	for name, cfg := range map[string]token.JWTConfig{
		"zero KeySet":          {KeySet: &token.RemoteKeySet{}},
		`Types "application/"`: {Keys: map[string]crypto.PublicKey{"a": edKey(t).Public()}, Types: []string{"application/"}},
	} {
		cfg.Issuer, cfg.Audience = testIssuer, testAudience
		if _, err := token.NewJWT(cfg); err == nil {
			t.Errorf("NewJWT with %s: no error", name)
		}
	}
}

// TestRemoteKeySetLeavesOutUnusableKeys: a provider's set may hold keys
// the package cannot use beside those it can (a newer algorithm, a key
// without a kid, one published by mistake with its private part, a kid
// listed twice). A RemoteKeySet keeps the usable keys, leaves the others
// out (both keys of a duplicated kid: either may be meant) and reports
// them, rather than failing every fetch and stopping rotation; ParseJWKS
// still refuses such a set.
func TestRemoteKeySetLeavesOutUnusableKeys(t *testing.T) {
	a, b, d1, d2, p := edKey(t), edKey(t), edKey(t), edKey(t), edKey(t)
	x448 := map[string]any{"kty": "OKP", "crv": "Ed448", "kid": "x448", "use": "sig", "x": strings.Repeat("A", 76)}
	noKid := jwk(t, "", edKey(t).Public())
	delete(noKid, "kid")
	private := jwk(t, "p", p.Public())
	private["d"] = "AAAA"
	unusable := []map[string]any{x448, noKid, private, jwk(t, "d", d1.Public()), jwk(t, "d", d2.Public())}
	set := jwks(t, append([]map[string]any{jwk(t, "a", a.Public())}, unusable...)...)
	if _, err := token.ParseJWKS(set); err == nil {
		t.Fatal("ParseJWKS accepted a set with unusable keys")
	}

	f := newRemote(t, set, token.RemoteKeySetOptions{})
	f.ok(t, "key a", edToken(t, a, "a"))
	f.refused(t, "a key published with its private part", edToken(t, p, "p"), "unknown kid")
	f.refused(t, "a kid listed twice, first key", edToken(t, d1, "d"), "unknown kid")
	errs := f.errs.all()
	// Five keys: both copies of "d" count (review18b; the first copy,
	// usable, went uncounted).
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "5 keys left out, 1 kept") {
		t.Fatalf("reported %v, want one report of 5 keys left out", errs)
	}
	for _, want := range []string{`JWK "x448"`, "JWK 3: no kid", `JWK "p": has private member "d"`, `JWK "d": kid listed twice`} {
		if !strings.Contains(errs[0].Error(), want) {
			t.Errorf("report %q lacks %q", errs[0], want)
		}
	}

	// The provider adds b and keeps publishing the others: rotation goes on.
	f.srv.serve(jwks(t, append([]map[string]any{jwk(t, "a", a.Public()), jwk(t, "b", b.Public())}, unusable...)...), "")
	f.clock.advance(2 * time.Minute)
	f.ok(t, "key b after the rotation", edToken(t, b, "b"))
	f.fetches(t, "after b", 2)

	// A set with no usable key at all is a failed fetch: the last good set
	// stays.
	f.srv.serve(jwks(t, unusable...), "")
	f.clock.advance(2 * time.Hour)
	f.ok(t, "key b, the provider's set now unusable", edToken(t, b, "b"))
	if errs := f.errs.all(); len(errs) != 3 || !strings.Contains(errs[2].Error(), "no signature verification keys") {
		t.Errorf("reported %v, want a third report: no signature verification keys", errs)
	}
}

package token_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview40JWKSErrorQuotesKidUpTo64Bytes pins where ParseJWKS stops quoting a kid in its
// errors: a kid of exactly 64 bytes is quoted, so an operator can find the key that broke the
// set; one byte more and the key is named by its position (and its kid's length), so that an
// error stays short.
func TestReview40JWKSErrorQuotesKidUpTo64Bytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		kid  string
		want string
	}{
		{"kid_of_63_bytes", strings.Repeat("k", 63), `JWK "` + strings.Repeat("k", 63) + `"`},
		{"kid_of_64_bytes", strings.Repeat("k", 64), `JWK "` + strings.Repeat("k", 64) + `"`},
		{"kid_of_65_bytes", strings.Repeat("k", 65), "JWK 1 (a kid of 65 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(map[string]any{"keys": []any{
				map[string]any{"kid": tc.kid, "kty": "oct-unknown"},
			}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = token.ParseJWKS(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseJWKS(a set with one key of an unknown kty) = %v, want an error naming %s",
					err, tc.want)
			}
		})
	}
}

// TestReview40JWKSNoExactMemberNamesReadsNoMember pins that a JWK none of whose member names
// is exact ("KTY", "KID", ...: each one folds to a name ParseJWKS reads) is read as a JWK
// without any member, not through encoding/json's case folding: such a key has no kid, which
// fails the set. Were it read under folding, a key that RFC 7517 says has no kty, no kid and no
// use would be kept as a signature key under the kid "upper".
func TestReview40JWKSNoExactMemberNamesReadsNoMember(t *testing.T) {
	k := newTestKeys(t)
	upper := map[string]any{
		"KTY": "OKP", "CRV": "Ed25519", "KID": "upper", "USE": "sig",
		"X": base64.RawURLEncoding.EncodeToString(k.ed.Public().(ed25519.PublicKey)),
	}
	data := jwks(t, jwk(t, "rsa", &k.rsa.PublicKey), upper)
	keys, err := token.ParseJWKS(data)
	if err == nil || !strings.Contains(err.Error(), "JWK 2: no kid") {
		t.Errorf("ParseJWKS(a set whose second key has upper-case member names only) = kids %v, %v; "+
			"want the error JWK 2: no kid", keysOf(keys), err)
	}
}

// TestReview40JWKSRSAExponentAndECX pins two member checks of ParseJWKS. An RSA "e" of four
// bytes is read (a leading zero byte included, as some issuers pad it), and its value then
// checked: 2^31-1 is kept, 2^31+1 refused; five bytes are refused as too large. An EC key's
// malformed or missing "x" is refused naming "x", so that the operator is told which member
// to fix rather than a confusing "nil key".
func TestReview40JWKSRSAExponentAndECX(t *testing.T) {
	k := newTestKeys(t)
	b64 := base64.RawURLEncoding.EncodeToString
	rsaWith := func(e []byte) []byte {
		m := jwk(t, "rsa", &k.rsa.PublicKey)
		m["e"] = b64(e)
		return jwks(t, m)
	}
	ecWith := func(edit func(m map[string]any)) []byte {
		m := jwk(t, "ec", &k.ec.PublicKey)
		edit(m)
		return jwks(t, m)
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		wantErr string // "" for a set kept
	}{
		{"rsa_e_65537_in_four_bytes", rsaWith([]byte{0, 1, 0, 1}), ""},
		{"rsa_e_2_to_31_minus_1", rsaWith([]byte{0x7f, 0xff, 0xff, 0xff}), ""},
		{"rsa_e_2_to_31_plus_1", rsaWith([]byte{0x80, 0, 0, 1}), "RSA key with an invalid exponent"},
		{"rsa_e_five_bytes", rsaWith([]byte{0, 0, 1, 0, 1}), "e is too large"},
		{"ec_missing_x", ecWith(func(m map[string]any) { delete(m, "x") }), `JWK "ec": missing x`},
		{"ec_x_padded", ecWith(func(m map[string]any) { m["x"] = m["x"].(string) + "=" }),
			`JWK "ec": x is not base64url without padding`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := token.ParseJWKS(tc.data)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("ParseJWKS(%s) = %v, want the key kept", tc.data, err)
			case tc.wantErr == "" && len(keys) != 1:
				t.Errorf("ParseJWKS(%s) = kids %v, want one key", tc.data, keysOf(keys))
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ParseJWKS(%s) = kids %v, %v; want an error containing %q",
					tc.data, keysOf(keys), err, tc.wantErr)
			}
		})
	}
}

// TestReview40RSAExponentMustBeOddAndAtLeast3 pins the RSA public exponent checkKey accepts in
// a JWK: odd and at least 3. An exponent of 1 makes "signing" the identity (anyone can forge
// a signature), and an even one is no RSA key at all; 3 and 9, small odd exponents some old
// keys use, are kept.
func TestReview40RSAExponentMustBeOddAndAtLeast3(t *testing.T) {
	k := newTestKeys(t)
	for _, tc := range []struct {
		name string
		e    []byte
		keep bool
	}{
		{"e_1", []byte{1}, false},
		{"e_2", []byte{2}, false},
		{"e_3", []byte{3}, true},
		{"e_4", []byte{4}, false},
		{"e_9", []byte{9}, true},
		{"e_65537", []byte{1, 0, 1}, true},
		{"e_65538", []byte{1, 0, 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := jwk(t, "rsa", &k.rsa.PublicKey)
			m["e"] = base64.RawURLEncoding.EncodeToString(tc.e)
			keys, err := token.ParseJWKS(jwks(t, m))
			switch {
			case tc.keep && err != nil:
				t.Errorf("ParseJWKS(an RSA key with e %x) = %v, want the key kept", tc.e, err)
			case !tc.keep && (err == nil || !strings.Contains(err.Error(), "RSA key with an invalid exponent")):
				t.Errorf("ParseJWKS(an RSA key with e %x) = kids %v, %v; want the invalid exponent refused",
					tc.e, keysOf(keys), err)
			}
		})
	}
}

// TestReview40NewJWTRefusesIncompleteECDSAKey pins that NewJWT refuses an ECDSA key value that
// is a nil pointer, or has a point but no curve, with an error saying what is missing, and
// without a panic: a configuration mistake must stop the server at start-up, legibly.
func TestReview40NewJWTRefusesIncompleteECDSAKey(t *testing.T) {
	p := mustEC(t, elliptic.P256())
	for _, tc := range []struct {
		name string
		key  *ecdsa.PublicKey
	}{
		{"nil_pointer", nil},
		{"no_curve", &ecdsa.PublicKey{X: new(big.Int).Set(p.X), Y: new(big.Int).Set(p.Y)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := token.JWTConfig{Keys: map[string]crypto.PublicKey{"ec": tc.key}, Issuer: testIssuer, Audience: testAudience}
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("NewJWT(Keys: {ec: %s}) panicked: %v", tc.name, r)
					}
				}()
				_, err = token.NewJWT(cfg)
			}()
			if err == nil || !strings.Contains(err.Error(), "nil ECDSA key, curve or point") {
				t.Errorf("NewJWT(Keys: {ec: %s}) = %v, want an error containing %q",
					tc.name, err, "nil ECDSA key, curve or point")
			}
		})
	}
}

// TestReview40IntrospectTokenOf8KiBIsAsked pins the length bound of Introspect: a token of
// exactly 8 KiB is sent to the endpoint and accepted on its answer (an issuer's long opaque
// or JWT-shaped access token must work up to the documented limit); one byte more is refused
// without a request.
func TestReview40IntrospectTokenOf8KiBIsAsked(t *testing.T) {
	e := newIntroEndpoint(t)
	at := "opq_" + strings.Repeat("a", 8<<10-4)
	over := at + "a"
	e.answer(at, introAnswer(t, nil))
	e.answer(over, introAnswer(t, nil))
	i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
	pr, _, err := i.Introspect(t.Context(), at)
	if err != nil || pr == nil || pr.Subject != "ann" {
		t.Errorf("Introspect(a token of %d bytes) = %v, %v; want ann accepted", len(at), pr, err)
	}
	_, _, err = i.Introspect(t.Context(), over)
	checkIntroRefusal(t, err, "longer than 8192 bytes")
	if got := e.count(over); got != 0 {
		t.Errorf("the endpoint was asked %d times about a token of %d bytes, want 0", got, len(over))
	}
}

// TestReview40IntrospectStaleAnswerNotServedLater pins that a cached answer found stale by a
// clock stepped back is dropped, even when asking again fails: once the clock is right again,
// the endpoint is asked, not the old answer served. A token revoked meanwhile must not come
// back to life from an answer the Introspector had already given up on.
func TestReview40IntrospectStaleAnswerNotServedLater(t *testing.T) {
	e := newIntroEndpoint(t)
	clk := &clock{now: testNow}
	i, log := newIntrospector(t, e, clk, nil)
	if _, _, err := i.Introspect(t.Context(), tokAnn); err != nil {
		t.Fatalf("Introspect(tokAnn) = %v, want accepted", err)
	}
	clk.advance(-time.Hour) // before the answer was cached: stale
	e.setStatus(http.StatusServiceUnavailable)
	_, _, err := i.Introspect(t.Context(), tokAnn)
	checkIntroFailure(t, err, "status 503")
	clk.advance(time.Hour + 10*time.Second) // within the answer's first CacheTTL again
	e.setStatus(0)
	e.answer(tokAnn, `{"active": false}`) // revoked meanwhile
	_, _, err = i.Introspect(t.Context(), tokAnn)
	checkIntroRefusal(t, err, "inactive")
	if got := e.count(tokAnn); got != 3 {
		t.Errorf("the endpoint was asked %d times about tokAnn, want 3 (the stale answer dropped)", got)
	}
	if got := len(log.all()); got != 1 {
		t.Errorf("ErrorHandler got %d errors, want 1 (the 503)", got)
	}
}

// TestReview40ServerURLChecks pins how NewRemoteKeySet and NewIntrospector read a server's URL
// before any request: a string that is not a URL is refused (not a panic), and so is a URL whose
// host is only a port, plain http to a remote host, or another scheme. A key set or endpoint URL
// that names no host must fail at start-up, where the operator sees it.
func TestReview40ServerURLChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  string
		want string
	}{
		{"not_a_url", "https://[::1/jwks", "not a URL"},
		{"port_only", "https://:443/jwks", "no host"},
		{"no_host", "https:///jwks", "no host"},
		{"http_remote_host", "http://keys.example/jwks", "http is accepted only to a loopback host"},
		{"ftp", "ftp://keys.example/jwks", "scheme must be https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var setErr, introErr error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("NewRemoteKeySet(%q) or NewIntrospector panicked: %v", tc.url, r)
					}
				}()
				_, setErr = token.NewRemoteKeySet(t.Context(), tc.url, nil)
				_, introErr = token.NewIntrospector(token.IntrospectionConfig{Endpoint: tc.url, Audience: testAudience})
			}()
			if setErr == nil || !strings.Contains(setErr.Error(), tc.want) {
				t.Errorf("NewRemoteKeySet(%q) = %v, want an error containing %q", tc.url, setErr, tc.want)
			}
			if introErr == nil || !strings.Contains(introErr.Error(), tc.want) {
				t.Errorf("NewIntrospector(Endpoint: %q) = %v, want an error containing %q", tc.url, introErr, tc.want)
			}
		})
	}
}

// TestReview40RemoteKeySetRequestAndLoneBadKey pins two things of a RemoteKeySet's fetch. Its
// request asks for a JWK Set by its media type (Accept "application/jwk-set+json,
// application/json"), as providers that negotiate content expect. And a set whose only key is
// unusable fails with the reason for that key as well as "no signature verification keys", so
// that an operator whose provider moved to a new kty learns why no key is left.
func TestReview40RemoteKeySetRequestAndLoneBadKey(t *testing.T) {
	srv := newJWKSServer(t, []byte(`{"keys":[{"kid":"new-1","kty":"AKP","use":"sig"}]}`))
	accepts := make(chan string, 1)
	srv.set(func(w http.ResponseWriter, r *http.Request) {
		select {
		case accepts <- r.Header.Get("Accept"):
		default:
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		io.WriteString(w, `{"keys":[{"kid":"new-1","kty":"AKP","use":"sig"}]}`)
	})
	_, err := token.NewRemoteKeySet(t.Context(), srv.URL+"/jwks.json", &token.RemoteKeySetOptions{ErrorHandler: func(error) {}})
	for _, want := range []string{"no signature verification keys", `JWK "new-1": kty must be`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewRemoteKeySet(a set whose only key has kty AKP) = %v, want an error containing %q", err, want)
		}
	}
	select {
	case got := <-accepts:
		if want := "application/jwk-set+json, application/json"; got != want {
			t.Errorf("the fetch sent Accept %q, want %q", got, want)
		}
	default:
		t.Errorf("the server saw no request")
	}
}

// TestReview40IntrospectStatusHints pins which failed statuses of the introspection endpoint
// get a hint: 401 and 403 say the endpoint refused the client's credentials, 300 to 399 that
// redirects are not followed, and every other status (400, 500) is named bare. A hint that
// points the operator at credentials or redirects when neither is the cause sends them
// looking in the wrong place.
func TestReview40IntrospectStatusHints(t *testing.T) {
	const creds, redirect = "refused the client's credentials", "redirects are not followed"
	for _, tc := range []struct {
		status int
		hint   string // "" for none
	}{
		{http.StatusMultipleChoices, redirect},
		{http.StatusFound, redirect},
		{399, redirect},
		{http.StatusBadRequest, ""},
		{http.StatusUnauthorized, creds},
		{http.StatusForbidden, creds},
		{http.StatusInternalServerError, ""},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			e := newIntroEndpoint(t)
			e.setStatus(tc.status)
			i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
			_, _, err := i.Introspect(t.Context(), tokAnn)
			checkIntroFailure(t, err, fmt.Sprintf("status %d, want 200", tc.status))
			for _, h := range []string{creds, redirect} {
				if got := err != nil && strings.Contains(err.Error(), h); got != (h == tc.hint) {
					t.Errorf("Introspect with the endpoint answering %d = %v; hint %q shown %v, want %v",
						tc.status, err, h, got, h == tc.hint)
				}
			}
		})
	}
}

// TestReview40TruncatedBodyIsAReadError pins the error of an answer cut short (a Content-Length
// longer than the body, the connection closed): for a RemoteKeySet and an Introspector alike it
// says the body could not be read, not that it is malformed JSON, so that the operator looks at
// the network rather than at the provider's documents.
func TestReview40TruncatedBodyIsAReadError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "4096")
		io.WriteString(w, `{"keys":[`)
	}))
	t.Cleanup(srv.Close)
	_, err := token.NewRemoteKeySet(t.Context(), srv.URL+"/jwks.json", nil)
	if err == nil || !strings.Contains(err.Error(), "reading the body") {
		t.Errorf("NewRemoteKeySet(a truncated body) = %v, want an error containing %q", err, "reading the body")
	}
	i, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint: srv.URL + "/introspect", Audience: introAudience, ErrorHandler: func(error) {},
	})
	if err != nil {
		t.Fatalf("NewIntrospector: %v", err)
	}
	_, _, err = i.Introspect(t.Context(), tokAnn)
	checkIntroFailure(t, err, "reading the answer")
}

// TestReview40RemoteKeySetCacheControlFirstMaxAgeOnly pins how a JWK Set response's
// Cache-Control sets when the set is due: only the first max-age directive counts (a later one
// is ignored, a malformed first one makes the header say nothing), and other directives with a
// number, such as stale-while-revalidate, are no max-age. A provider's header must not make the
// set refresh sooner, or be kept longer, than its first max-age says.
func TestReview40RemoteKeySetCacheControlFirstMaxAgeOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		header  string
		fetches int // after a lookup at 3 minutes (MaxAge one hour)
	}{
		{"first_max_age_short", "max-age=120, max-age=1800", 2},
		{"first_max_age_long", "max-age=1800, max-age=120", 1},
		{"first_max_age_malformed", "max-age=abc, max-age=120", 1},
		{"stale_while_revalidate", "stale-while-revalidate=120", 1},
		{"s_maxage", "s-maxage=60", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := edKey(t)
			set := jwks(t, jwk(t, "a", k.Public()))
			srv := newJWKSServer(t, set)
			srv.serve(set, tc.header)
			clk := &clock{now: testNow}
			rs, err := token.NewRemoteKeySet(t.Context(), srv.URL+"/jwks.json",
				&token.RemoteKeySetOptions{Now: clk.Now, MaxAge: time.Hour, MinRefreshInterval: time.Minute})
			if err != nil {
				t.Fatalf("NewRemoteKeySet: %v", err)
			}
			v := newJWT(t, token.JWTConfig{KeySet: rs})
			clk.advance(3 * time.Minute)
			if _, _, err := v.Verify(edToken(t, k, "a")); err != nil {
				t.Fatalf("Verify at 3 minutes: %v", err)
			}
			if got := srv.count(); got != tc.fetches {
				t.Errorf("Cache-Control %q: %d fetches after a lookup at 3 minutes, want %d",
					tc.header, got, tc.fetches)
			}
		})
	}
}

// TestReview40IntrospectFailedStatusKeepsConnection pins that an answer with a status other than
// 200 is read before it is closed, so that the next request to the endpoint reuses the
// connection: during an outage of the authorization server, every lookup would otherwise open
// a new connection (and TLS handshake) to it.
func TestReview40IntrospectFailedStatusKeepsConnection(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "temporarily unavailable, try again later", http.StatusServiceUnavailable)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	i, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint: srv.URL + "/introspect", Audience: introAudience, ErrorHandler: func(error) {},
	})
	if err != nil {
		t.Fatalf("NewIntrospector: %v", err)
	}
	for _, tok := range []string{tokAnn, tokBob, tokAnn} {
		_, _, err := i.Introspect(t.Context(), tok)
		checkIntroFailure(t, err, "status 503")
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("three failed introspections opened %d connections, want 1 (reused)", got)
	}
}

// TestReview40IntrospectAnswerOf64KiB pins the size bound of an introspection answer: a body
// of exactly 64 KiB is read and judged (an answer carrying many scopes or claims up to the
// documented bound must work); one byte more fails the introspection.
func TestReview40IntrospectAnswerOf64KiB(t *testing.T) {
	padded := func(size int) string {
		base := introAnswer(t, func(m map[string]any) { m["pad"] = "" })
		return introAnswer(t, func(m map[string]any) { m["pad"] = strings.Repeat("x", size-len(base)) })
	}
	e := newIntroEndpoint(t)
	e.answer(tokAnn, padded(64<<10))
	e.answer(tokBob, padded(64<<10+1))
	i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
	pr, _, err := i.Introspect(t.Context(), tokAnn)
	if err != nil || pr == nil || pr.Subject != "ann" {
		t.Errorf("Introspect(an answer of 65536 bytes) = %v, %v; want ann accepted", pr, err)
	}
	_, _, err = i.Introspect(t.Context(), tokBob)
	checkIntroFailure(t, err, "answer larger than 65536 bytes")
}

// TestReview40IntrospectTrailingDataFails pins that an answer with anything after its JSON
// object (a second object, say) is a failed introspection, not read: which of the two objects
// is the answer cannot be told, and the token must not be judged on a guess.
func TestReview40IntrospectTrailingDataFails(t *testing.T) {
	e := newIntroEndpoint(t)
	e.answer(tokAnn, introAnswer(t, nil)+` {"active": false}`)
	i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
	_, _, err := i.Introspect(t.Context(), tokAnn)
	checkIntroFailure(t, err, "the answer is not a JSON object")
}

// TestReview40DueSetAnswersKnownKidDuringRefresh pins that while a refresh of a set past its
// MaxAge is under way (the provider slow to answer), a lookup of a kid the current set holds is
// answered at once from that set, without waiting for the refresh: a slow provider must not
// stall every request whose token is signed by a key already known.
func TestReview40DueSetAnswersKnownKidDuringRefresh(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public())), token.RemoteKeySetOptions{})
	started, hold := make(chan struct{}), make(chan struct{})
	f.srv.set(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	})
	tokA, tokB := edToken(t, a, "a"), edToken(t, b, "b")
	f.clock.advance(2 * time.Hour) // past MaxAge: due
	first := make(chan error, 1)
	go func() {
		_, err := f.v.Authenticate(context.Background(), tokA) // starts the refresh and waits
		first <- err
	}()
	<-started
	second := make(chan error, 1)
	go func() {
		_, err := f.v.Authenticate(context.Background(), tokB)
		second <- err
	}()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case err := <-second:
		if err != nil {
			t.Errorf("Authenticate(a token of known kid b) during the refresh = %v, want accepted", err)
		}
	case <-timer.C:
		t.Errorf("Authenticate(a token of known kid b) waited for the refresh under way, want an answer at once")
	}
	close(hold)
	if err := <-first; err != nil {
		t.Errorf("Authenticate(a token of kid a) that started the refresh = %v, want accepted from the last good set", err)
	}
}

// TestReview40IntrospectTimeClaimBounds pins the range of an introspection answer's time
// claims (exp, nbf, iat): 0 (the epoch) and 253402300799 (the last second of year 9999) are
// times; past either end the answer is unreadable and the token refused. An issuer that
// writes nbf 0 or a far exp must not have its tokens refused.
func TestReview40IntrospectTimeClaimBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		claim string
		value any
		ok    bool
	}{
		{"nbf_epoch", "nbf", 0, true},
		{"iat_epoch", "iat", 0, true},
		{"exp_last_second", "exp", int64(253402300799), true},
		{"exp_past_year_9999", "exp", int64(253402300800), false},
		{"nbf_negative", "nbf", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIntroEndpoint(t)
			e.answer(tokAnn, introAnswer(t, func(m map[string]any) { m[tc.claim] = tc.value }))
			i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
			pr, _, err := i.Introspect(t.Context(), tokAnn)
			if got := err == nil && pr != nil; got != tc.ok {
				t.Errorf("Introspect with %s %v = %v, %v; want accepted %v", tc.claim, tc.value, pr, err, tc.ok)
			}
		})
	}
}

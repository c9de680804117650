package token_test

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview25cTokenNamesNoURL: a token controls its header ("jku", "x5u",
// "jwk", "x5c", a kid with path characters or a URL) but never where keys
// are fetched from: the attacker's server sees no request, and the
// provider sees only its set's URL, once (the miss of an unknown kid).
func TestReview25cTokenNamesNoURL(t *testing.T) {
	var hits atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer attacker.Close()
	a := edKey(t)
	var paths atomic.Value
	paths.Store("")
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
	f.srv.set(func(w http.ResponseWriter, r *http.Request) {
		paths.Store(paths.Load().(string) + r.URL.RequestURI() + " ")
		w.Write(jwks(t, jwk(t, "a", a.Public())))
	})
	f.clock.advance(time.Minute)
	for _, kid := range []string{"a", "../../admin", attacker.URL + "/k", "/jwks.json?x=1", "a/../a"} {
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims(nil))
		tok.Header["kid"] = kid
		tok.Header["jku"] = attacker.URL + "/jku"
		tok.Header["x5u"] = attacker.URL + "/x5u"
		tok.Header["jwk"] = jwk(t, kid, a.Public())
		s, err := tok.SignedString(a)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = f.v.Verify(s)
		if kid == "a" {
			if err != nil {
				t.Errorf("kid a with jku and x5u: %v", err)
			}
			continue
		}
		checkRefusal(t, err, s, "unknown kid")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the attacker's server saw %d requests", n)
	}
	if got := paths.Load().(string); got != "/jwks.json " {
		t.Errorf("the provider saw %q, want one fetch of /jwks.json", got)
	}
}

// TestReview25cHangingFetchKnownKidsQuick: while a fetch that an unknown kid
// started hangs at the provider, tokens whose kid is in the set verify at
// once, and concurrent unknown kids wait for that one fetch (no second
// one); the waiting lookup is released by its context or by Timeout.
func TestReview25cHangingFetchKnownKidsQuick(t *testing.T) {
	a := edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{Timeout: 2 * time.Second})
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	f.srv.set(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	f.clock.advance(time.Minute)
	done := make(chan error, 5)
	for i := range 5 {
		go func() {
			_, _, err := f.v.Verify(edToken(t, a, fmt.Sprintf("new-%d", i)))
			done <- err
		}()
	}
	<-entered
	start := time.Now()
	for range 20 {
		f.ok(t, "known kid during a hanging fetch", edToken(t, a, "a"))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("20 known-kid tokens took %v during a hanging fetch", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := f.v.Authenticate(ctx, edToken(t, a, "new-x")); !errors.Is(err, token.ErrKeySetUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a waiting lookup whose context ended: %v, want not judged", err)
	}
	for range 5 {
		if err := <-done; !errors.Is(err, token.ErrKeySetUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("unknown kid after a timed-out fetch: %v, want not judged (the fetch timed out)", err)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("waiting lookups released after %v, want about Timeout (2s)", d)
	}
	f.fetches(t, "one fetch for six unknown kids", 2)
	if len(f.errs.all()) != 1 || !errors.Is(f.errs.all()[0], context.DeadlineExceeded) {
		t.Errorf("reported %v, want one timeout", f.errs.all())
	}
}

// TestReview25cRedirectsAndJWKSURIChecked: a redirect of the set or of the
// discovery document, and a discovery document's jwks_uri, to http:// on a
// host that is not loopback is refused; https on another host, and http
// to loopback, are followed as documented.
func TestReview25cRedirectsAndJWKSURIChecked(t *testing.T) {
	a := edKey(t)
	set := jwks(t, jwk(t, "a", a.Public()))
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(set) }))
	defer plain.Close()
	var tlsURL string
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-http":
			http.Redirect(w, r, "http://idp.invalid/jwks", http.StatusFound)
		case "/to-loopback":
			http.Redirect(w, r, plain.URL+"/jwks", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/tenant" + oidcPath:
			http.Redirect(w, r, "http://idp.invalid"+oidcPath, http.StatusFound)
		case oidcPath:
			json.NewEncoder(w).Encode(metadata(tlsURL, "http://idp.invalid/jwks"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer tlsSrv.Close()
	tlsURL = tlsSrv.URL
	opts := &token.RemoteKeySetOptions{Client: tlsSrv.Client(), Timeout: 2 * time.Second}
	ctx := context.Background()
	for _, path := range []string{"/to-http", "/to-file"} {
		if _, err := token.NewRemoteKeySet(ctx, tlsURL+path, opts); err == nil || !strings.Contains(err.Error(), "redirect refused") {
			t.Errorf("%s: %v, want redirect refused", path, err)
		}
	}
	if _, err := token.NewRemoteKeySet(ctx, tlsURL+"/to-loopback", opts); err != nil {
		t.Errorf("https redirecting to http on loopback: %v", err)
	}
	if _, err := token.DiscoverKeySet(ctx, tlsURL+"/tenant", opts); err == nil || !strings.Contains(err.Error(), "redirect refused") {
		t.Errorf("discovery document redirected to http: %v, want redirect refused", err)
	}
	if _, err := token.DiscoverKeySet(ctx, tlsURL, opts); err == nil || !strings.Contains(err.Error(), "use https") {
		t.Errorf("jwks_uri on http: %v, want refused", err)
	}
}

// TestReview25cUnusableKeysRefuseTheirTokens: the keys of a set that cannot
// verify (use enc, key_ops without verify, oct, RSA under 2048 bits, EC off
// its curve, a kid listed twice with different algorithms) refuse the
// tokens naming them as unknown kids, cost one fetch per interval, and
// leave the set's good key in use.
func TestReview25cUnusableKeysRefuseTheirTokens(t *testing.T) {
	k := newTestKeys(t)
	good := edKey(t)
	enc := jwk(t, "enc", &k.rsa.PublicKey)
	enc["use"] = "enc"
	ops := jwk(t, "ops", &k.rsa.PublicKey)
	delete(ops, "use")
	ops["key_ops"] = []string{"sign", "encrypt"}
	oct := map[string]any{"kty": "oct", "kid": "oct", "k": base64.RawURLEncoding.EncodeToString([]byte("secret")), "alg": "HS256"}
	small := jwk(t, "small", &rsa.PublicKey{N: k.rsa.N, E: 65537})
	small["n"] = base64.RawURLEncoding.EncodeToString(k.rsa.N.Bytes()[:128])
	off := jwk(t, "off", &k.ec.PublicKey)
	off["y"] = off["x"]
	dup1, dup2 := jwk(t, "dup", &k.rsa.PublicKey), jwk(t, "dup", &k.ec.PublicKey)
	dup1["alg"], dup2["alg"] = "RS256", "ES256"
	f := newRemote(t, jwks(t, jwk(t, "good", good.Public()), enc, ops, oct, small, off, dup1, dup2), token.RemoteKeySetOptions{})
	f.ok(t, "the good key", edToken(t, good, "good"))
	for _, c := range []struct {
		kid    string
		method jwt.SigningMethod
		key    any
		want   string
	}{
		{"enc", jwt.SigningMethodRS256, k.rsa, "unknown kid"},
		{"ops", jwt.SigningMethodRS256, k.rsa, "unknown kid"},
		{"oct", jwt.SigningMethodHS256, []byte("secret"), "not accepted"},
		{"small", jwt.SigningMethodRS256, k.rsa, "unknown kid"},
		{"off", jwt.SigningMethodES256, k.ec, "unknown kid"},
		{"dup", jwt.SigningMethodRS256, k.rsa, "unknown kid"},
		{"dup", jwt.SigningMethodES256, k.ec, "unknown kid"},
	} {
		f.refused(t, c.kid+" "+c.method.Alg(), sign(t, c.method, c.key, c.kid, claims(nil)), c.want)
	}
	f.fetches(t, "after the unusable keys' tokens", 1)
	if errs := f.errs.all(); len(errs) != 1 {
		t.Errorf("reports %v, want one listing the keys left out", errs)
	}
}

// TestReview25cEnormousSet: a set over 1 MiB is a failed fetch, at the
// start and on a refresh, where the last good set stays in use.
func TestReview25cEnormousSet(t *testing.T) {
	a := edKey(t)
	good := jwks(t, jwk(t, "a", a.Public()))
	huge := []byte(`{"keys":[` + strings.Repeat(" ", 1<<20) + string(good[len(`{"keys":[`):]))
	srv := newJWKSServer(t, huge)
	if _, err := token.NewRemoteKeySet(context.Background(), srv.URL, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a set over 1 MiB: %v", err)
	}
	f := newRemote(t, good, token.RemoteKeySetOptions{})
	f.srv.serve(huge, "")
	f.clock.advance(time.Hour)
	f.ok(t, "known kid, set due, provider sends 1 MiB+", edToken(t, a, "a"))
	if errs := f.errs.all(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "larger than") {
		t.Errorf("reports %v", errs)
	}
}

// TestReview25cMemberNamesExact: JWK member names are case-sensitive (RFC
// 7517, section 4): "USE", "Key_Ops", "uſe" (long s) or "KID" are unknown
// members, ignored. encoding/json matched them to the struct's fields,
// without regard to case, the last one winning, while the checks of "use"
// and "key_ops" read the exact members: a key whose "use" is "enc" (or
// whose "key_ops" lacks "verify") was kept as a signature key when a
// case-variant member said "sig" (or held "verify"), against ParseJWKS's
// doc; a key without "kid" took its kid from "KID"; one with "alg" was
// bound to an "ALG"; and a set's "KEYS" replaced its "keys". A fetched set
// is read the same way.
func TestReview25cMemberNamesExact(t *testing.T) {
	k := newTestKeys(t)
	// withMembers is the JWK of k.rsa under kid ("" for none) with extra
	// appended, in that order, after its members.
	withMembers := func(kid string, edit func(m map[string]any), extra string) json.RawMessage {
		m := jwk(t, kid, &k.rsa.PublicKey)
		if kid == "" {
			delete(m, "kid")
		}
		if edit != nil {
			edit(m)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return json.RawMessage(string(b[:len(b)-1]) + "," + extra + "}")
	}
	noUse := func(m map[string]any) { delete(m, "use") }
	useEnc := func(m map[string]any) { m["use"] = "enc" }
	rs := sign(t, jwt.SigningMethodRS256, k.rsa, "k", claims(nil))
	ps := sign(t, jwt.SigningMethodPS256, k.rsa, "k", claims(nil))
	for _, c := range []struct {
		name string
		key  json.RawMessage
		tok  string // verifies with the set when want is ""
		want string // ParseJWKS's error, or a refusal of tok
	}{
		{"use_enc_USE_sig", withMembers("k", useEnc, `"USE":"sig"`), rs, "unknown kid"},
		{"use_enc_long_s", withMembers("k", useEnc, `"u\u017fe":"sig"`), rs, "unknown kid"},
		{"key_ops_sign_Key_Ops_verify", withMembers("k", func(m map[string]any) {
			delete(m, "use")
			m["key_ops"] = []string{"sign"}
		}, `"Key_Ops":["verify"]`), rs, "unknown kid"},
		{"KID_only", withMembers("", nil, `"KID":"k"`), rs, "no kid"},
		{"alg_RS256_ALG_PS256", withMembers("k", func(m map[string]any) { m["alg"] = "RS256" }, `"ALG":"PS256"`), ps, "does not match the key's alg RS256"},
		{"USE_enc_ignored", withMembers("k", noUse, `"USE":"enc"`), rs, ""},
		{"KTY_number_ignored", withMembers("k", nil, `"KTY":5`), rs, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			other, err := json.Marshal(jwk(t, "other", &k.rsa2.PublicKey))
			if err != nil {
				t.Fatal(err)
			}
			set := []byte(`{"keys":[` + string(other) + "," + string(c.key) + "]}")
			keys, err := token.ParseJWKS(set)
			switch {
			case c.want == "no kid":
				if err == nil || !strings.Contains(err.Error(), "no kid") {
					t.Errorf("ParseJWKS: %v, want no kid", err)
				}
				return
			case err != nil:
				t.Fatalf("ParseJWKS: %v", err)
			}
			v := newJWT(t, token.JWTConfig{Keys: keys})
			_, _, err = v.Verify(c.tok)
			if c.want == "" {
				if err != nil {
					t.Errorf("Verify: %v, want accepted", err)
				}
				return
			}
			checkRefusal(t, err, c.tok, c.want)
		})
	}

	good, evil := edKey(t), edKey(t)
	set := string(jwks(t, jwk(t, "k", good.Public())))
	set = set[:len(set)-1] + `,"KEYS":` + string(jwks(t, jwk(t, "k", evil.Public())))[len(`{"keys":`):]
	keys, err := token.ParseJWKS([]byte(set))
	if err != nil {
		t.Fatalf("ParseJWKS of keys and KEYS: %v", err)
	}
	v := newJWT(t, token.JWTConfig{Keys: keys})
	if _, _, err := v.Verify(edToken(t, good, "k")); err != nil {
		t.Errorf("the key of \"keys\": %v", err)
	}
	if _, _, err := v.Verify(edToken(t, evil, "k")); err == nil {
		t.Errorf("the key of \"KEYS\" verified")
	}

	enc := jwk(t, "k", good.Public())
	enc["use"] = "enc"
	b, err := json.Marshal(enc)
	if err != nil {
		t.Fatal(err)
	}
	remote := `{"keys":[` + string(b[:len(b)-1]) + `,"u\u017fe":"sig"},` + string(jwks(t, jwk(t, "other", evil.Public())))[len(`{"keys":[`):]
	f := newRemote(t, []byte(remote), token.RemoteKeySetOptions{})
	f.refused(t, "a fetched key whose use is enc", edToken(t, good, "k"), "unknown kid")
}

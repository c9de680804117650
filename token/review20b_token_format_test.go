package token_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TestReview20bRemoteKeySetHiddenInsideStructs: a *RemoteKeySet prints
// its String for every verb, but fmt calls Format only for a value it can
// reach as an interface. A *RemoteKeySet in an unexported field (of a
// JWT, or of the caller's own struct) printed with a verb that a pointer
// does not take (%s, %q) is printed as "%!s(*token.RemoteKeySet=&{...})",
// its fields whole (as is a RemoteKeySet value, with any verb): the JWK Set URL's user:password and "?api_key="
// were printed by fmt.Sprintf("%s", jwtVerifier). The URL is kept where
// fmt shows an address.
func TestReview20bRemoteKeySetHiddenInsideStructs(t *testing.T) {
	const secret, password = "s3cret-query-key", "pa55word"
	a := edKey(t)
	srv := newJWKSServer(t, jwks(t, jwk(t, "a", a.Public())))
	raw := strings.Replace(srv.URL, "http://", "http://svc:"+password+"@", 1) + "/jwks.json?api_key=" + secret
	set, err := token.NewRemoteKeySet(context.Background(), raw, nil)
	if err != nil {
		t.Fatalf("NewRemoteKeySet: %v", err)
	}
	v, err := token.NewJWT(token.JWTConfig{KeySet: set, Issuer: testIssuer, Audience: testAudience})
	if err != nil {
		t.Fatalf("NewJWT: %v", err)
	}
	type holder struct {
		set *token.RemoteKeySet
		jwt *token.JWT
	}
	type exported struct {
		Set *token.RemoteKeySet
		JWT *token.JWT
	}
	for what, x := range map[string]any{
		"*JWT":                   v,
		"a struct's unexported":  holder{set, v},
		"&a struct's unexported": &holder{set, v},
		"a struct's exported":    exported{set, v},
		"&a struct's exported":   &exported{set, v},
		"a slice":                []*token.RemoteKeySet{set},
		"a map":                  map[string]*token.JWT{"v": v},
		"a RemoteKeySet value":   reflect.ValueOf(set).Elem(), // fmt prints the value the reflect.Value holds
		"a JWT value":            reflect.ValueOf(v).Elem(),
	} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%-8s", "%t"} {
			got := fmt.Sprintf(verb, x)
			if strings.Contains(got, secret) || strings.Contains(got, password) {
				t.Errorf("Sprintf(%q) of %s = %.400q: shows the URL's credential", verb, what, got)
			}
		}
	}
	// Nothing else changed: the set still works, and says where it is.
	if got, want := set.String(), strings.TrimSuffix(srv.URL, "/")+"/jwks.json?…"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := fmt.Sprintf("%v|%s|%+v", set, set, exported{Set: set}); strings.Count(got, set.String()) != 3 {
		t.Errorf("printed %q, want String three times", got)
	}
	var none *token.RemoteKeySet
	if got := fmt.Sprintf("%v %s %#v", none, none, holder{}); strings.Contains(got, "PANIC") {
		t.Errorf("a nil *RemoteKeySet printed as %q", got)
	}
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{})
	f.ok(t, "a token of the set's key", edToken(t, a, "a"))
}

// TestReview20bIntrospectorAndTableHiddenInsideStructs: as for a
// RemoteKeySet, an *Introspector or a *Table in an unexported field
// printed with %s or %q had its fields printed whole: the HTTP Basic
// header of the client's credentials, and the SHA-256 digests of tokens
// (a Table's, and those an Introspector holds answers for), with which a
// guess at a token can be checked offline. A Table value printed with %s
// showed its digests too. (An Introspector value would as well: copying
// one copies its mutex, which go vet reports.)
func TestReview20bIntrospectorAndTableHiddenInsideStructs(t *testing.T) {
	e := newIntroEndpoint(t)
	e.answer(tokAnn, introAnswer(t, nil))
	i, log := newIntrospector(t, e, &clock{now: testNow}, nil)
	if _, _, err := i.Introspect(context.Background(), tokAnn); err != nil {
		t.Fatalf("Introspect: %v; failures %v", err, log.all())
	}
	tab, err := token.New(map[string]*policy.Principal{tokBob: {Subject: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(introClientID) + ":" + url.QueryEscape(introSecret)))
	digests := map[string][sha256.Size]byte{"tokAnn": sha256.Sum256([]byte(tokAnn)), "tokBob": sha256.Sum256([]byte(tokBob))}
	type holder struct {
		i *token.Introspector
		t *token.Table
	}
	for what, x := range map[string]any{
		"a struct's unexported":  holder{i, tab},
		"&a struct's unexported": &holder{i, tab},
		"a slice":                []*token.Introspector{i},
		"a map":                  map[string]*token.Table{"t": tab},
		"a Table value":          reflect.ValueOf(tab).Elem(),
	} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%t"} {
			got := fmt.Sprintf(verb, x)
			checkClean(t, verb+" of "+what, got)
			if strings.Contains(got, basic) {
				t.Errorf("Sprintf(%q) of %s = %.400q: shows the client's credentials", verb, what, got)
			}
			for tok, d := range digests {
				for _, shown := range []string{fmt.Sprint(d[:]), fmt.Sprintf("%x", d[:]), fmt.Sprintf("%#v", d)} {
					if strings.Contains(got, strings.Trim(shown, "[]{}")) {
						t.Errorf("Sprintf(%q) of %s = %.400q: shows the digest of %s", verb, what, got, tok)
					}
				}
			}
		}
	}
	// Nothing else changed.
	if pr, _, err := i.Introspect(context.Background(), tokAnn); err != nil || pr.Subject != "ann" || e.count(tokAnn) != 1 {
		t.Errorf("Introspect again: %v, %v, %d requests; want ann from the cache", pr, err, e.count(tokAnn))
	}
	if pr := tab.Lookup(tokBob); pr == nil || pr.Subject != "bob" {
		t.Errorf("Lookup(tokBob) = %v, want bob", pr)
	}
}

// TestReview20bZeroIntrospectorFails: an Introspector not made by
// NewIntrospector judges no token, and does not panic.
func TestReview20bZeroIntrospectorFails(t *testing.T) {
	var i token.Introspector
	if pr, _, err := i.Introspect(context.Background(), tokAnn); pr != nil || !errors.Is(err, token.ErrIntrospectionFailed) {
		t.Errorf("Introspect with a zero Introspector = %v, %v; want ErrIntrospectionFailed", pr, err)
	}
}

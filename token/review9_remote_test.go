package token_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview9RemoteKeySetErrorsHideQueryCredential: a JWK Set URL may carry
// its credential in the query (an API gateway's "?api_key=...", a
// signed-URL token) just as well as in the user info's password, which the
// RemoteKeySet already hides. A user expects neither to show up in the
// errors NewRemoteKeySet returns or the refresh errors it reports: those
// go to logs (the gateway logs every refresh failure as a warning).
// Instead every error quotes the whole URL, query included (s.shown is
// url.URL.Redacted, which masks the password only, and a network error
// quotes the URL a second time through net/http's *url.Error).
func TestReview9RemoteKeySetErrorsHideQueryCredential(t *testing.T) {
	const secret = "s3cret-query-key"
	a := edKey(t)
	good := jwks(t, jwk(t, "a", a.Public()))
	srv := newJWKSServer(t, good)
	u := srv.URL + "/jwks.json?api_key=" + secret

	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error %q shows the URL's query credential", what, err)
		}
	}

	// The first fetch fails: NewRemoteKeySet's error.
	srv.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	_, err := token.NewRemoteKeySet(context.Background(), u, nil)
	check("NewRemoteKeySet, status 500", err)

	// Refreshes fail: the errors reported to ErrorHandler.
	srv.serve(good, "")
	errs, c := &errorLog{}, &clock{now: testNow}
	set, err := token.NewRemoteKeySet(context.Background(), u, &token.RemoteKeySetOptions{ErrorHandler: errs.add, Now: c.Now})
	if err != nil {
		t.Fatalf("NewRemoteKeySet: %v", err)
	}
	v := newJWT(t, token.JWTConfig{KeySet: set})
	srv.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	c.advance(2 * time.Minute)
	v.Verify(edToken(t, a, "rotated")) // an unknown kid: a refresh, which fails
	srv.Close()
	c.advance(2 * time.Minute)
	v.Verify(edToken(t, a, "rotated")) // again, the provider unreachable
	reported := errs.all()
	if len(reported) != 2 {
		t.Fatalf("%d refresh errors reported, want 2: %v", len(reported), reported)
	}
	check("refresh, status 500", reported[0])
	check("refresh, connection refused", reported[1])
}

// TestReview9RemoteKeySetErrorsHideUserName: with HTTP basic
// authentication a URL's user info may hold the credential in the user
// name alone ("https://<token>@host/...", as for API tokens used as the
// user name). A user who reads "errors without the URL's password" expects
// the user info's credential to stay out of errors and logs; instead the
// error quotes the user name in full (url.URL.Redacted masks a password
// only, and there is none).
func TestReview9RemoteKeySetErrorsHideUserName(t *testing.T) {
	const secret = "tok-s3cret-user"
	srv := newJWKSServer(t, nil)
	srv.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	u := strings.Replace(srv.URL, "http://", "http://"+secret+"@", 1) + "/jwks.json"
	_, err := token.NewRemoteKeySet(context.Background(), u, nil)
	if err == nil {
		t.Fatal("NewRemoteKeySet with a failing server: no error")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error %q shows the user info's credential", err)
	}
}

package token_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testlog"
	"github.com/mcpguard/mcpguard/token"
)

// panickyTransport panics, quoting the request's body (the token, for an
// introspection), while on is set; otherwise it sends the request.
type panickyTransport struct{ on atomic.Bool }

func (p *panickyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.on.Load() {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
		}
		panic("transport bug on " + r.URL.String() + " " + string(body) + " " + r.Header.Get("Authorization"))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestReview54IntrospectorClientPanic: an Introspector asks its endpoint
// on a goroutine of its own, where a panic of the HTTP client's (a custom
// Transport's) ended the process. It now fails the introspection, for
// every lookup waiting for it, with an error that quotes nothing of the
// panic; the panic is logged with its stack but not its value (here the
// token and the client's credentials); the failure is not cached.
func TestReview54IntrospectorClientPanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	e := newIntroEndpoint(t)
	e.answer(tokAnn, introAnswer(t, nil))
	tr := &panickyTransport{}
	tr.on.Store(true)
	i, errs := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) {
		c.Client = &http.Client{Transport: tr}
	})
	const waiters = 8
	var wg sync.WaitGroup
	got := make([]error, waiters)
	for k := range waiters {
		wg.Go(func() { _, _, got[k] = i.Introspect(context.Background(), tokAnn) })
	}
	wg.Wait()
	for k, err := range got {
		checkIntroFailure(t, err, "the HTTP client panicked")
		if k == 0 {
			t.Logf("err: %v", err)
		}
	}
	if n := len(errs.all()); n < 1 || n > waiters {
		t.Errorf("ErrorHandler got %d errors, want 1 per request to the endpoint (1 to %d)", n, waiters)
	}
	out := logged.String()
	if !strings.Contains(out, "token: an HTTP client panicked") || !strings.Contains(out, "panic_type=string") || !strings.Contains(out, "goroutine") {
		t.Errorf("the log does not report the panic with its type and stack:\n%.3000s", out)
	}
	checkClean(t, "the log", out)
	if strings.Contains(out, "transport bug") {
		t.Errorf("the log quotes the panic's value:\n%.3000s", out)
	}

	tr.on.Store(false)
	pr, _, err := i.Introspect(context.Background(), tokAnn)
	if err != nil || pr == nil {
		t.Fatalf("the client mended: principal %v, err %v; want accepted (a failure is not cached)", pr, err)
	}
}

// TestReview54IntrospectorErrorHandlerPanic: a panic of the ErrorHandler,
// called on the Introspector's goroutine, is logged and contained: the
// lookups waiting for the failed introspection get its error, and a later
// one asks again.
func TestReview54IntrospectorErrorHandlerPanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	e := newIntroEndpoint(t)
	e.setStatus(http.StatusInternalServerError)
	var calls atomic.Int64
	i, _ := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) {
		c.ErrorHandler = func(error) { calls.Add(1); panic("handler bug") }
	})
	for n := 1; n <= 2; n++ {
		_, _, err := i.Introspect(context.Background(), tokAnn)
		checkIntroFailure(t, err, "status 500, want 200")
		if got := e.count(tokAnn); got != n {
			t.Errorf("after %d lookups the endpoint was asked %d times, want %d", n, got, n)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("ErrorHandler called %d times, want 2", n)
	}
	if out := logged.String(); strings.Count(out, "token: an ErrorHandler panicked") != 2 || strings.Contains(out, "handler bug") {
		t.Errorf("want two panics of the ErrorHandler logged, without their value:\n%.3000s", out)
	}
}

// TestReview54RemoteKeySetPanics: a RemoteKeySet refreshes on a goroutine
// of its own. A panic of its HTTP client's there fails the refresh (the
// last good set stays, the ErrorHandler is told), and a panic of its
// ErrorHandler's is contained; both are logged, and the set goes on
// refreshing once the client is mended.
func TestReview54RemoteKeySetPanics(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	a, b := edKey(t), edKey(t)
	tr := &panickyTransport{}
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{Client: &http.Client{Transport: tr}})
	f.ok(t, "key a", edToken(t, a, "a"))

	f.srv.serve(jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public())), "")
	tr.on.Store(true)
	f.clock.advance(2 * time.Minute)
	f.refused(t, "key b, the client panicking", edToken(t, b, "b"), notJudged)
	f.ok(t, "key a, the last good set", edToken(t, a, "a"))
	errs := f.errs.all()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "the HTTP client panicked") {
		t.Errorf("ErrorHandler got %v, want one error saying the HTTP client panicked", errs)
	}
	if out := logged.String(); !strings.Contains(out, "token: an HTTP client panicked") || strings.Contains(out, "transport bug") {
		t.Errorf("want the client's panic logged without its value:\n%.3000s", out)
	}

	// The same with an ErrorHandler that panics (the set's own, not the
	// fixture's log): the refresh's failure is still contained.
	var handled atomic.Int64
	srv, clk := newJWKSServer(t, jwks(t, jwk(t, "a", a.Public()))), &clock{now: testNow}
	tr.on.Store(false)
	h, err := token.NewRemoteKeySet(context.Background(), srv.URL+"/jwks.json", &token.RemoteKeySetOptions{
		Client: &http.Client{Transport: tr}, Now: clk.Now,
		ErrorHandler: func(error) { handled.Add(1); panic("handler bug") },
	})
	if err != nil {
		t.Fatal(err)
	}
	v := newJWT(t, token.JWTConfig{KeySet: h})
	tr.on.Store(true)
	clk.advance(2 * time.Minute)
	if _, _, err := v.Verify(edToken(t, b, "b")); !errors.Is(err, token.ErrKeySetUnavailable) || !strings.Contains(err.Error(), "the HTTP client panicked") {
		t.Errorf("key b, the client and the ErrorHandler panicking: err %v, want not judged, the client panicked", err)
	}
	if n := handled.Load(); n != 1 {
		t.Errorf("ErrorHandler called %d times, want 1", n)
	}
	if out := logged.String(); !strings.Contains(out, "token: an ErrorHandler panicked") || strings.Contains(out, "handler bug") {
		t.Errorf("want the ErrorHandler's panic logged without its value:\n%.3000s", out)
	}

	// Mended, the set refreshes again (after MinRefreshInterval).
	tr.on.Store(false)
	f.clock.advance(2 * time.Minute)
	f.ok(t, "key b, the client mended", edToken(t, b, "b"))
	if err := errors.Join(f.errs.all()[1:]...); err != nil {
		t.Errorf("errors after the client was mended: %v", err)
	}
}

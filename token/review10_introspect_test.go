package token_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

const (
	// introClientID has a space and a colon, introSecret a "+", a "&",
	// a "=" and a letter outside ASCII: RFC 6749, section 2.3.1, has
	// them form-urlencoded before they are joined with ":" for HTTP Basic.
	introClientID = "mcp gateway:1"
	introSecret   = "s3cret+&=é-7Yx"
	introIssuer   = "https://login.example"
	introAudience = "https://mcp.example/mcp"
	// introMarker is in every body the endpoint sends: no error may quote it.
	introMarker = "ANSWER-MARKER-91c2"
	// tokAnn and tokBob are active tokens; any other is inactive.
	tokAnn = "opq_ann_4Rt9wQx2"
	tokBob = "opq_bob_8Kz1mNv5"
)

// introEndpoint is a real RFC 7662 introspection endpoint on 127.0.0.1.
// It checks every request (POST, form-urlencoded, token_type_hint,
// Accept, the client's Basic credentials, refusing wrong ones with 401)
// and answers each token with the body in answers ({"active": false} for
// any other), or with status when set; while hold is not nil, answers wait
// until it is closed. It counts the requests for each token.
type introEndpoint struct {
	*httptest.Server
	mu      sync.Mutex
	answers map[string]string
	status  int
	hold    chan struct{}
	hits    map[string]int
}

func newIntroEndpoint(t *testing.T) *introEndpoint {
	t.Helper()
	e := &introEndpoint{answers: map[string]string{}, hits: map[string]int{}}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, err := url.ParseQuery(string(body))
		switch {
		case r.Method != http.MethodPost:
			t.Errorf("endpoint: method %s, want POST", r.Method)
		case r.Header.Get("Content-Type") != "application/x-www-form-urlencoded":
			t.Errorf("endpoint: Content-Type %q, want application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
		case r.Header.Get("Accept") != "application/json":
			t.Errorf("endpoint: Accept %q, want application/json", r.Header.Get("Accept"))
		case err != nil || len(form["token"]) != 1 || len(form) != 2 || form.Get("token_type_hint") != "access_token":
			t.Errorf("endpoint: form %q, want token and token_type_hint=access_token", body)
		case len(r.URL.Query()) != 0:
			t.Errorf("endpoint: the request has a query %q: the token belongs in the body", r.URL.RawQuery)
		}
		tok := form.Get("token")
		e.mu.Lock()
		e.hits[tok]++
		answer, ok := e.answers[tok]
		status, hold := e.status, e.hold
		e.mu.Unlock()
		id, secret, _ := r.BasicAuth()
		id, err1 := url.QueryUnescape(id)
		secret, err2 := url.QueryUnescape(secret)
		if err1 != nil || err2 != nil || id != introClientID || secret != introSecret {
			w.Header().Set("WWW-Authenticate", `Basic realm="introspection"`)
			http.Error(w, `{"error": "invalid_client", "note": "`+introMarker+`"}`, http.StatusUnauthorized)
			return
		}
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		if status != 0 {
			http.Error(w, introMarker, status)
			return
		}
		if !ok {
			answer = `{"active": false, "note": "` + introMarker + `"}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(e.Close)
	e.answers[tokAnn] = introAnswer(t, nil)
	e.answers[tokBob] = introAnswer(t, func(m map[string]any) { m["sub"] = "bob"; m["scope"] = "viewer" })
	return e
}

// answer makes the endpoint answer tok with body.
func (e *introEndpoint) answer(tok, body string) {
	e.mu.Lock()
	e.answers[tok] = body
	e.mu.Unlock()
}

// setStatus makes the endpoint answer every request with status (0: the
// answers).
func (e *introEndpoint) setStatus(status int) {
	e.mu.Lock()
	e.status = status
	e.mu.Unlock()
}

// count returns the number of requests about tok so far.
func (e *introEndpoint) count(tok string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[tok]
}

// introAnswer is the JSON answer for an active token of ann's, with roles
// "admin support" in "scope", valid from testNow-1m to testNow+1h, edited
// by edit.
func introAnswer(t *testing.T, edit func(map[string]any)) string {
	t.Helper()
	m := map[string]any{
		"active":     true,
		"sub":        "ann",
		"scope":      "admin support",
		"iss":        introIssuer,
		"aud":        introAudience,
		"client_id":  "claude-desktop",
		"token_type": "Bearer",
		"iat":        testNow.Add(-time.Minute).Unix(),
		"nbf":        testNow.Add(-time.Minute).Unix(),
		"exp":        testNow.Add(time.Hour).Unix(),
		"x_note":     introMarker,
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newIntrospector returns an Introspector of e's with the right
// credentials, issuer and audience, the clock clk, its failures recorded
// in the returned log, and cfg edited by edit.
func newIntrospector(t *testing.T, e *introEndpoint, clk *clock, edit func(*token.IntrospectionConfig)) (*token.Introspector, *errorLog) {
	t.Helper()
	log := &errorLog{}
	cfg := token.IntrospectionConfig{
		Endpoint: e.URL + "/oauth2/introspect", ClientID: introClientID, ClientSecret: introSecret,
		Issuer: introIssuer, Audience: introAudience, Now: clk.Now, ErrorHandler: log.add,
	}
	if edit != nil {
		edit(&cfg)
	}
	i, err := token.NewIntrospector(cfg)
	if err != nil {
		t.Fatalf("NewIntrospector: %v", err)
	}
	return i, log
}

// checkClean fails when msg holds a token, the client's secret or a piece
// of an answer.
func checkClean(t *testing.T, what, msg string) {
	t.Helper()
	for _, secret := range []string{tokAnn, tokBob, "opq_", introSecret, url.QueryEscape(introSecret), introMarker} {
		if strings.Contains(msg, secret) {
			t.Errorf("%s %q contains %q", what, msg, secret)
		}
	}
}

// checkIntroRefusal: err is a refusal saying want.
func checkIntroRefusal(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want a refusal containing %q", want)
	}
	if !errors.Is(err, token.ErrInvalidToken) || errors.Is(err, token.ErrIntrospectionFailed) {
		t.Errorf("err = %v: want one that unwraps to ErrInvalidToken and not to ErrIntrospectionFailed", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	checkClean(t, "err", err.Error())
}

// checkIntroFailure: err is a failed introspection saying want.
func checkIntroFailure(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want a failed introspection containing %q", want)
	}
	if !errors.Is(err, token.ErrIntrospectionFailed) || errors.Is(err, token.ErrInvalidToken) {
		t.Errorf("err = %v: want one that unwraps to ErrIntrospectionFailed and not to ErrInvalidToken (the token was not judged)", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	checkClean(t, "err", err.Error())
}

// TestIntrospectorAccepts: an active token is the principal its answer
// names, the roles from "scope" by default, or from the configured member
// (an array, a dotted path); "aud" may be an array; "exp" is returned; the
// request is what RFC 7662 asks (the endpoint checks it), Basic
// credentials form-urlencoded first.
func TestIntrospectorAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		roles  string // RolesClaim
		edit   func(map[string]any)
		leeway time.Duration
		want   *policy.Principal
	}{
		{"scope", "", nil, 0, &policy.Principal{Subject: "ann", Roles: []string{"admin", "support"}}},
		{"no_scope", "", func(m map[string]any) { delete(m, "scope") }, 0, &policy.Principal{Subject: "ann"}},
		{"aud_array", "", func(m map[string]any) { m["aud"] = []string{"other", introAudience} }, 0,
			&policy.Principal{Subject: "ann", Roles: []string{"admin", "support"}}},
		{"roles_array", "roles", func(m map[string]any) { m["roles"] = []string{"billing"} }, 0,
			&policy.Principal{Subject: "ann", Roles: []string{"billing"}}},
		{"roles_dotted_path", "realm_access.roles", func(m map[string]any) {
			m["realm_access"] = map[string]any{"roles": []string{"admin"}}
		}, 0, &policy.Principal{Subject: "ann", Roles: []string{"admin"}}},
		{"no_times", "", func(m map[string]any) { delete(m, "exp"); delete(m, "nbf"); delete(m, "iat") }, 0,
			&policy.Principal{Subject: "ann", Roles: []string{"admin", "support"}}},
		{"token_type_lower_case", "", func(m map[string]any) { m["token_type"] = "bearer" }, 0,
			&policy.Principal{Subject: "ann", Roles: []string{"admin", "support"}}},
		{"expired_within_leeway", "", func(m map[string]any) { m["exp"] = testNow.Add(-10 * time.Second).Unix() }, 30 * time.Second,
			&policy.Principal{Subject: "ann", Roles: []string{"admin", "support"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIntroEndpoint(t)
			body := introAnswer(t, tc.edit)
			e.answer(tokAnn, body)
			i, log := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) {
				c.RolesClaim, c.Leeway = tc.roles, tc.leeway
			})
			pr, exp, err := i.Introspect(context.Background(), tokAnn)
			if err != nil {
				t.Fatalf("Introspect: %v; failures %v", err, log.all())
			}
			if diff := cmp.Diff(tc.want, pr); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
			var m map[string]any
			json.Unmarshal([]byte(body), &m)
			if secs, ok := m["exp"].(float64); ok && exp.Unix() != int64(secs) || !ok && !exp.IsZero() {
				t.Errorf("exp = %v, want the answer's %v", exp, m["exp"])
			}
			if n := e.count(tokAnn); n != 1 {
				t.Errorf("the endpoint was asked %d times, want 1", n)
			}
		})
	}
}

// TestIntrospectorRefuses: every answer that does not make an active,
// current, well-formed token for this audience (and issuer) is a refusal
// that unwraps to ErrInvalidToken, says why, and quotes neither the token
// nor the answer.
func TestIntrospectorRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]any) // nil: the endpoint does not know the token
		want string
	}{
		{"unknown_token", nil, "inactive"},
		{"inactive", func(m map[string]any) { m["active"] = false }, "inactive"},
		{"active_string_true", func(m map[string]any) { m["active"] = "true" }, "inactive"},
		{"active_number", func(m map[string]any) { m["active"] = 1 }, "inactive"},
		{"active_missing", func(m map[string]any) { delete(m, "active") }, "inactive"},
		{"expired", func(m map[string]any) { m["exp"] = testNow.Add(-time.Second).Unix() }, "expired"},
		{"expires_now", func(m map[string]any) { m["exp"] = testNow.Unix() }, "expired"},
		{"nbf_future", func(m map[string]any) { m["nbf"] = testNow.Add(time.Minute).Unix() }, "not valid yet"},
		{"exp_string", func(m map[string]any) { m["exp"] = fmt.Sprint(testNow.Add(time.Hour).Unix()) }, "exp out of range or not a number"},
		{"exp_huge", func(m map[string]any) { m["exp"] = 9.2e18 }, "exp out of range"},
		{"nbf_negative", func(m map[string]any) { m["nbf"] = -1 }, "nbf out of range"},
		{"wrong_issuer", func(m map[string]any) { m["iss"] = introIssuer + "/" }, "wrong or missing issuer"},
		{"missing_issuer", func(m map[string]any) { delete(m, "iss") }, "wrong or missing issuer"},
		{"wrong_audience", func(m map[string]any) { m["aud"] = "https://other.example/mcp" }, "wrong audience"},
		{"audience_array_without", func(m map[string]any) { m["aud"] = []string{"a", "b"} }, "wrong audience"},
		{"audience_array_with_number", func(m map[string]any) { m["aud"] = []any{introAudience, 1} }, "aud holds a value that is not a string"},
		{"audience_object", func(m map[string]any) { m["aud"] = map[string]any{"x": introAudience} }, "aud is neither"},
		{"missing_audience", func(m map[string]any) { delete(m, "aud") }, "missing aud"},
		{"missing_sub", func(m map[string]any) { delete(m, "sub") }, "missing or empty sub"},
		{"empty_sub", func(m map[string]any) { m["sub"] = "" }, "missing or empty sub"},
		{"sub_number", func(m map[string]any) { m["sub"] = 7 }, "sub is not a string"},
		{"sub_not_header_safe", func(m map[string]any) { m["sub"] = "ann\r\nX-Mcp-Gateway-Role: admin" }, "sub must be printable ASCII"},
		{"scope_number", func(m map[string]any) { m["scope"] = 7 }, "scope claim is neither a string nor an array of strings"},
		{"role_with_comma", func(m map[string]any) { m["scope"] = []string{"viewer,admin"} }, "roles must be"},
		{"token_type_dpop", func(m map[string]any) { m["token_type"] = "DPoP" }, "token_type is not Bearer"},
		{"token_type_refresh", func(m map[string]any) { m["token_type"] = "refresh_token" }, "token_type is not Bearer"},
		{"token_type_number", func(m map[string]any) { m["token_type"] = 1 }, "token_type is not Bearer"},
		{"cnf", func(m map[string]any) {
			m["cnf"] = map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}
		}, "cnf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIntroEndpoint(t)
			tok := "opq_case_" + tc.name
			if tc.edit != nil {
				e.answer(tok, introAnswer(t, tc.edit))
			}
			i, log := newIntrospector(t, e, &clock{now: testNow}, nil)
			pr, _, err := i.Introspect(context.Background(), tok)
			if pr != nil {
				t.Errorf("principal %+v, want none", *pr)
			}
			checkIntroRefusal(t, err, tc.want)
			if n := len(log.all()); n != 0 {
				t.Errorf("ErrorHandler got %d errors, want none: a refusal is not a failure", n)
			}
			// Authenticate says the same.
			if _, err := i.Authenticate(context.Background(), tok); !errors.Is(err, token.ErrInvalidToken) {
				t.Errorf("Authenticate: %v, want a refusal", err)
			}
		})
	}
}

// TestIntrospectorRefusesWithoutAsking: an empty token and one longer than
// 8 KiB are refused without a request.
func TestIntrospectorRefusesWithoutAsking(t *testing.T) {
	e := newIntroEndpoint(t)
	i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
	for _, tok := range []string{"", "opq_" + strings.Repeat("a", 8<<10)} {
		_, _, err := i.Introspect(context.Background(), tok)
		checkIntroRefusal(t, err, "")
		if n := e.count(tok); n != 0 {
			t.Errorf("token of %d bytes: the endpoint was asked %d times, want 0", len(tok), n)
		}
	}
}

// TestIntrospectorUnreadableAnswers: an answer that is not one JSON object
// (an array, null, not JSON, more than 64 KiB), or that names a member
// twice (which parsers read differently: "active" false then true, "sub"
// twice) is a failed introspection: the token was not judged, nothing is
// accepted, nothing is cached.
func TestIntrospectorUnreadableAnswers(t *testing.T) {
	big := introAnswer(t, func(m map[string]any) { m["pad"] = strings.Repeat("x", 64<<10) })
	for _, tc := range []struct {
		name, body, want string
	}{
		{"array", `[{"active": true, "sub": "ann"}]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"not_json", `active=true&sub=` + introMarker, "not a JSON object"},
		{"too_large", big, "larger than 65536 bytes"},
		{"duplicate_active", `{"active": false, "active": true, "sub": "ann", "aud": "` + introAudience + `", "iss": "` + introIssuer + `"}`, "names a member twice"},
		{"duplicate_sub", strings.Replace(introAnswer(t, nil), `"sub":"ann"`, `"sub":"ann","sub":"root"`, 1), "names a member twice"},
		{"duplicate_nested", introAnswer(t, func(m map[string]any) { m["x"] = json.RawMessage(`{"a": 1, "a": 2}`) }), "names a member twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "duplicate_sub" && !strings.Contains(tc.body, `"sub":"root"`) {
				t.Fatalf("the answer %s has no duplicate", tc.body)
			}
			e := newIntroEndpoint(t)
			e.answer(tokAnn, tc.body)
			i, log := newIntrospector(t, e, &clock{now: testNow}, nil)
			for range 2 {
				pr, _, err := i.Introspect(context.Background(), tokAnn)
				if pr != nil {
					t.Errorf("principal %+v, want none", *pr)
				}
				checkIntroFailure(t, err, tc.want)
			}
			if n := e.count(tokAnn); n != 2 {
				t.Errorf("the endpoint was asked %d times, want 2 (failures are not cached)", n)
			}
			if n := len(log.all()); n != 2 {
				t.Errorf("ErrorHandler got %d errors, want 2", n)
			}
		})
	}
}

// TestIntrospectorEndpointFailures: wrong client credentials (401 from the
// endpoint), a 500, a timeout and an endpoint that is not there are
// failed introspections, not refusals; none is cached (the next lookup
// asks again, and succeeds once the endpoint is back), each is reported
// to ErrorHandler, and no error holds the token, the secret or the body.
func TestIntrospectorEndpointFailures(t *testing.T) {
	t.Run("bad_client_credentials", func(t *testing.T) {
		e := newIntroEndpoint(t)
		i, log := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) { c.ClientSecret = "wrong-" + introSecret })
		_, _, err := i.Introspect(context.Background(), tokAnn)
		checkIntroFailure(t, err, "status 401, want 200 (the endpoint refused the client's credentials)")
		if strings.Contains(err.Error(), "wrong-") {
			t.Errorf("err %q quotes the secret", err)
		}
		if errs := log.all(); len(errs) != 1 || errs[0].Error() != err.Error() {
			t.Errorf("ErrorHandler got %v, want [%v]", errs, err)
		}
	})
	t.Run("no_client_credentials", func(t *testing.T) {
		e := newIntroEndpoint(t)
		i, _ := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) { c.ClientID, c.ClientSecret = "", "" })
		_, _, err := i.Introspect(context.Background(), tokAnn)
		checkIntroFailure(t, err, "status 401")
	})
	t.Run("status_500_then_back", func(t *testing.T) {
		e := newIntroEndpoint(t)
		e.setStatus(http.StatusInternalServerError)
		i, log := newIntrospector(t, e, &clock{now: testNow}, nil)
		for n := 1; n <= 2; n++ {
			_, _, err := i.Introspect(context.Background(), tokAnn)
			checkIntroFailure(t, err, "status 500, want 200")
			if got := e.count(tokAnn); got != n {
				t.Errorf("after %d lookups the endpoint was asked %d times, want %d (a failure is not cached)", n, got, n)
			}
		}
		e.setStatus(0)
		if _, _, err := i.Introspect(context.Background(), tokAnn); err != nil {
			t.Errorf("the endpoint is back: %v", err)
		}
		if n := len(log.all()); n != 2 {
			t.Errorf("ErrorHandler got %d errors, want 2", n)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		e := newIntroEndpoint(t)
		hold := make(chan struct{})
		e.mu.Lock()
		e.hold = hold
		e.mu.Unlock()
		defer close(hold)
		i, _ := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) { c.Timeout = 50 * time.Millisecond })
		start := time.Now()
		for n := 1; n <= 2; n++ {
			_, _, err := i.Introspect(context.Background(), tokAnn)
			checkIntroFailure(t, err, "deadline exceeded")
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err %v: want one that unwraps to context.DeadlineExceeded (a gateway answers 504)", err)
			}
			if got := e.count(tokAnn); got != n {
				t.Errorf("after %d lookups the endpoint was asked %d times, want %d (a timeout is not cached)", n, got, n)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("two lookups took %v with a 50 ms timeout", d)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		e := newIntroEndpoint(t)
		i, _ := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) {
			c.Endpoint = "http://127.0.0.1:1/introspect?api_key=" + introMarker
		})
		_, _, err := i.Introspect(context.Background(), tokAnn)
		checkIntroFailure(t, err, "endpoint http://127.0.0.1:1/introspect?…")
	})
}

// TestIntrospectorNoRedirects: an endpoint that redirects (307 keeps the
// method and body: the token and the credentials would be sent again) is
// a failed introspection, and the target never hears of the token, even
// with a Client of the caller's that follows redirects.
func TestIntrospectorNoRedirects(t *testing.T) {
	var mu sync.Mutex
	var reached []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		reached = append(reached, string(body)+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, introAnswer(t, nil))
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/introspect", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	for _, client := range []*http.Client{nil, {CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}} {
		i, err := token.NewIntrospector(token.IntrospectionConfig{
			Endpoint: redirector.URL + "/introspect", ClientID: introClientID, ClientSecret: introSecret,
			Audience: introAudience, Client: client, ErrorHandler: func(error) {},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = i.Introspect(context.Background(), tokAnn)
		checkIntroFailure(t, err, "status 307, want 200 (redirects are not followed)")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reached) != 0 {
		t.Errorf("the redirect's target got %q", reached)
	}
}

// TestIntrospectorCache: an accepting answer is reused until CacheTTL (one
// minute by default) or the token's exp, whichever is sooner, then the
// endpoint is asked again; a refusing answer for NegativeCacheTTL (10 s by
// default); a negative TTL turns caching off.
func TestIntrospectorCache(t *testing.T) {
	type step struct {
		advance time.Duration // before the lookup
		ok      bool          // accepted
		asked   int           // requests about the token so far
	}
	for _, tc := range []struct {
		name  string
		edit  func(*token.IntrospectionConfig)
		exp   time.Duration // from testNow; 0: the answer has none
		tok   string
		steps []step
	}{
		{"positive_default_ttl", nil, time.Hour, tokAnn, []step{
			{0, true, 1}, {59 * time.Second, true, 1}, {time.Second, true, 2}, {30 * time.Second, true, 2},
		}},
		{"positive_ttl", func(c *token.IntrospectionConfig) { c.CacheTTL = 5 * time.Minute }, 0, tokAnn, []step{
			{0, true, 1}, {4 * time.Minute, true, 1}, {time.Minute, true, 2},
		}},
		// The token expires before CacheTTL: the endpoint is asked again at
		// exp (its answer, the same, is now refused, and cached as a
		// refusal).
		{"positive_until_exp", nil, 20 * time.Second, tokAnn, []step{
			{0, true, 1}, {19 * time.Second, true, 1}, {time.Second, false, 2}, {time.Second, false, 2},
		}},
		{"positive_off", func(c *token.IntrospectionConfig) { c.CacheTTL = -1 }, time.Hour, tokAnn, []step{
			{0, true, 1}, {0, true, 2}, {0, true, 3},
		}},
		{"negative_default_ttl", nil, time.Hour, "opq_nobody", []step{
			{0, false, 1}, {9 * time.Second, false, 1}, {time.Second, false, 2}, {0, false, 2},
		}},
		{"negative_ttl", func(c *token.IntrospectionConfig) { c.NegativeCacheTTL = time.Minute }, time.Hour, "opq_nobody", []step{
			{0, false, 1}, {59 * time.Second, false, 1}, {time.Second, false, 2},
		}},
		{"negative_off", func(c *token.IntrospectionConfig) { c.NegativeCacheTTL = -1 }, time.Hour, "opq_nobody", []step{
			{0, false, 1}, {0, false, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIntroEndpoint(t)
			e.answer(tokAnn, introAnswer(t, func(m map[string]any) {
				if tc.exp == 0 {
					delete(m, "exp")
				} else {
					m["exp"] = testNow.Add(tc.exp).Unix()
				}
			}))
			clk := &clock{now: testNow}
			i, _ := newIntrospector(t, e, clk, tc.edit)
			for n, s := range tc.steps {
				clk.advance(s.advance)
				pr, _, err := i.Introspect(context.Background(), tc.tok)
				if ok := err == nil; ok != s.ok {
					t.Errorf("step %d: principal %v, err %v; want accepted %v", n, pr, err, s.ok)
				}
				if got := e.count(tc.tok); got != s.asked {
					t.Errorf("step %d (%v later): the endpoint was asked %d times, want %d", n, s.advance, got, s.asked)
				}
			}
		})
	}
}

// TestIntrospectorCachedTimesChecked: a cached answer's exp and nbf are
// checked at every lookup: an answer cached within the leeway past exp is
// refused once the leeway is spent, without asking again; one whose nbf
// is ahead becomes valid at nbf (within the leeway), without asking again.
func TestIntrospectorCachedTimesChecked(t *testing.T) {
	e := newIntroEndpoint(t)
	e.answer(tokAnn, introAnswer(t, func(m map[string]any) { m["exp"] = testNow.Add(-5 * time.Second).Unix() }))
	e.answer(tokBob, introAnswer(t, func(m map[string]any) { m["sub"] = "bob"; m["nbf"] = testNow.Add(13 * time.Second).Unix() }))
	leeway := func(c *token.IntrospectionConfig) { c.Leeway = 10 * time.Second }

	clk := &clock{now: testNow}
	i, _ := newIntrospector(t, e, clk, leeway)
	if _, _, err := i.Introspect(context.Background(), tokAnn); err != nil {
		t.Errorf("ann within the leeway: %v", err)
	}
	clk.advance(6 * time.Second)
	_, _, err := i.Introspect(context.Background(), tokAnn)
	checkIntroRefusal(t, err, "expired")
	if n := e.count(tokAnn); n != 1 {
		t.Errorf("ann: the endpoint was asked %d times, want 1", n)
	}

	clk = &clock{now: testNow}
	i, _ = newIntrospector(t, e, clk, leeway)
	_, _, err = i.Introspect(context.Background(), tokBob)
	checkIntroRefusal(t, err, "not valid yet")
	clk.advance(3 * time.Second)
	if _, _, err := i.Introspect(context.Background(), tokBob); err != nil {
		t.Errorf("bob within the leeway of nbf: %v", err)
	}
	if n := e.count(tokBob); n != 1 {
		t.Errorf("bob: the endpoint was asked %d times, want 1", n)
	}
}

// TestIntrospectorCacheBound: the cache holds at most MaxCacheEntries
// answers, and drops the one due to expire soonest for a new one: with
// room for two, after ann (cached at t), bob (t+1s) and a third token
// (t+2s), ann is asked about again and the others are not.
func TestIntrospectorCacheBound(t *testing.T) {
	e := newIntroEndpoint(t)
	third := "opq_carl_3Jd8"
	e.answer(third, introAnswer(t, func(m map[string]any) { m["sub"] = "carl" }))
	clk := &clock{now: testNow}
	i, _ := newIntrospector(t, e, clk, func(c *token.IntrospectionConfig) { c.MaxCacheEntries = 2 })
	for _, tok := range []string{tokAnn, tokBob, third} {
		if _, _, err := i.Introspect(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Second)
	}
	for _, tok := range []string{third, tokBob, third} {
		if _, _, err := i.Introspect(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	got := []int{e.count(tokAnn), e.count(tokBob), e.count(third)}
	if diff := cmp.Diff([]int{1, 1, 1}, got); diff != "" {
		t.Errorf("requests for ann, bob, carl before ann's second lookup (-want +got):\n%s", diff)
	}
	if _, _, err := i.Introspect(context.Background(), tokAnn); err != nil {
		t.Fatal(err)
	}
	if n := e.count(tokAnn); n != 2 {
		t.Errorf("ann was asked about %d times, want 2 (dropped from the full cache)", n)
	}

	// A refusal (cached 10 s) goes before an acceptance (cached a minute)
	// added earlier.
	e2 := newIntroEndpoint(t)
	clk2 := &clock{now: testNow}
	j, _ := newIntrospector(t, e2, clk2, func(c *token.IntrospectionConfig) { c.MaxCacheEntries = 2 })
	for _, tok := range []string{tokAnn, "opq_nobody", tokBob, tokAnn} {
		j.Introspect(context.Background(), tok)
		clk2.advance(time.Second)
	}
	if got := []int{e2.count(tokAnn), e2.count("opq_nobody"), e2.count(tokBob)}; !cmp.Equal(got, []int{1, 1, 1}) {
		t.Errorf("requests for ann, nobody, bob = %v, want [1 1 1]: the refusal is dropped first", got)
	}
	j.Introspect(context.Background(), "opq_nobody")
	if n := e2.count("opq_nobody"); n != 2 {
		t.Errorf("the refusal was asked for %d times, want 2 (dropped from the full cache)", n)
	}
}

// doneSignal is a context that tells wg when a lookup waits on it: lookup
// calls Done once, after it has joined or started the request for its
// token.
type doneSignal struct {
	context.Context
	once sync.Once
	wg   *sync.WaitGroup
}

func (c *doneSignal) Done() <-chan struct{} {
	c.once.Do(c.wg.Done)
	return c.Context.Done()
}

// TestIntrospectorSharesRequests: concurrent lookups of a token share one
// request, caching off (so that only the sharing can explain a single
// request): the endpoint holds its answer until all the lookups wait. The
// lookup that started the request stops waiting when its context ends,
// with a failure, and the request goes on for the others, which get the
// answer.
func TestIntrospectorSharesRequests(t *testing.T) {
	e := newIntroEndpoint(t)
	hold := make(chan struct{})
	e.mu.Lock()
	e.hold = hold
	e.mu.Unlock()
	i, log := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) {
		c.CacheTTL, c.NegativeCacheTTL = -1, -1
	})

	// The first lookup starts the request, then gives up.
	var first sync.WaitGroup
	first.Add(1)
	cancelled, cancel := context.WithCancel(context.Background())
	quitter := make(chan error, 1)
	go func() {
		_, _, err := i.Introspect(&doneSignal{Context: cancelled, wg: &first}, tokAnn)
		quitter <- err
	}()
	first.Wait()

	const n = 32
	var waiting sync.WaitGroup
	waiting.Add(n)
	results := make(chan error, n)
	for range n {
		go func() {
			pr, _, err := i.Introspect(&doneSignal{Context: context.Background(), wg: &waiting}, tokAnn)
			if err == nil && pr.Subject != "ann" {
				err = fmt.Errorf("subject %q", pr.Subject)
			}
			results <- err
		}()
	}
	waiting.Wait()
	cancel()
	err := <-quitter
	checkIntroFailure(t, err, "waiting for the endpoint")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want one that unwraps to context.Canceled", err)
	}
	close(hold)
	for range n {
		if err := <-results; err != nil {
			t.Errorf("a lookup: %v", err)
		}
	}
	if got := e.count(tokAnn); got != 1 {
		t.Errorf("%d concurrent lookups made %d requests, want 1", n+1, got)
	}
	if errs := log.all(); len(errs) != 0 {
		t.Errorf("ErrorHandler got %v: a caller that stops waiting is not a failure", errs)
	}
}

// TestParseTokensCaseSensitive: the duplicate check that token tables
// share with introspection answers compares tokens exactly: two tokens
// that differ in case only are two tokens (an entry's members are still
// compared under case folding: TestDuplicateMemberCaseFolded).
func TestParseTokensCaseSensitive(t *testing.T) {
	tab, err := token.Parse([]byte(`{"tok-a": "admin", "TOK-A": "viewer"}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if pr := tab.Lookup("TOK-A"); pr == nil || !cmp.Equal(pr.Roles, []string{"viewer"}) {
		t.Errorf("Lookup(TOK-A) = %+v, want the viewer", pr)
	}
}

// TestIntrospectorVerifier: behind the go-sdk's auth.RequireBearerToken,
// an active token reaches the handler with its TokenInfo; an inactive one
// is 401 with the refusal's reason; an endpoint that fails is 500 with a
// text that names neither the endpoint nor the reason.
func TestIntrospectorVerifier(t *testing.T) {
	e := newIntroEndpoint(t)
	// The go-sdk checks Expiration against the real clock: so does i here.
	i, _ := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) { c.NegativeCacheTTL, c.Now = -1, time.Now })
	var got *auth.TokenInfo
	srv := httptest.NewServer(auth.RequireBearerToken(i.Verifier(), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = auth.TokenInfoFromContext(r.Context()) })))
	defer srv.Close()
	call := func(tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}

	e.answer(tokAnn, introAnswer(t, func(m map[string]any) { m["exp"] = time.Now().Add(time.Hour).Unix(); delete(m, "nbf") }))
	if code, body := call(tokAnn); code != http.StatusOK {
		t.Fatalf("active token: %d %s", code, body)
	}
	want := &auth.TokenInfo{UserID: "ann", Scopes: []string{"admin", "support"}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(auth.TokenInfo{}, "Expiration")); diff != "" {
		t.Errorf("TokenInfo (-want +got):\n%s", diff)
	}
	if got.Expiration.IsZero() {
		t.Error("TokenInfo.Expiration is zero, want the answer's exp")
	}

	code, body := call("opq_nobody")
	if code != http.StatusUnauthorized || body != "token: invalid token: inactive" {
		t.Errorf("inactive token: %d %q, want 401 with the refusal", code, body)
	}
	_, err := i.Verifier()(context.Background(), "opq_nobody", nil)
	if !errors.Is(err, auth.ErrInvalidToken) || !errors.Is(err, token.ErrInvalidToken) {
		t.Errorf("Verifier's refusal %v: want one that unwraps to auth.ErrInvalidToken and token.ErrInvalidToken", err)
	}

	e.setStatus(http.StatusBadGateway)
	code, body = call("opq_other")
	if code != http.StatusInternalServerError || body != token.ErrIntrospectionFailed.Error() {
		t.Errorf("endpoint failing: %d %q, want 500 %q", code, body, token.ErrIntrospectionFailed)
	}
}

// TestNewIntrospectorRefuses: configurations that cannot work are errors
// at construction, which never quote the secret.
func TestNewIntrospectorRefuses(t *testing.T) {
	good := token.IntrospectionConfig{Endpoint: "https://login.example/introspect", ClientID: "gw", ClientSecret: introSecret, Audience: introAudience}
	for _, tc := range []struct {
		name string
		edit func(*token.IntrospectionConfig)
		want string
	}{
		{"no_endpoint", func(c *token.IntrospectionConfig) { c.Endpoint = "" }, "no host"},
		{"http_not_loopback", func(c *token.IntrospectionConfig) { c.Endpoint = "http://login.example/introspect" }, "loopback"},
		{"other_scheme", func(c *token.IntrospectionConfig) { c.Endpoint = "ftp://login.example/introspect" }, "https"},
		{"user_info", func(c *token.IntrospectionConfig) {
			c.Endpoint = "https://gw:" + url.QueryEscape(introSecret) + "@login.example/introspect"
		}, "user info"},
		{"fragment", func(c *token.IntrospectionConfig) { c.Endpoint = "https://login.example/introspect#x" }, "fragment"},
		{"id_without_secret", func(c *token.IntrospectionConfig) { c.ClientSecret = "" }, "both ClientID and ClientSecret"},
		{"secret_without_id", func(c *token.IntrospectionConfig) { c.ClientID = "" }, "both ClientID and ClientSecret"},
		{"no_audience", func(c *token.IntrospectionConfig) { c.Audience = "" }, "no audience"},
		{"negative_timeout", func(c *token.IntrospectionConfig) { c.Timeout = -time.Second }, "negative"},
		{"negative_leeway", func(c *token.IntrospectionConfig) { c.Leeway = -time.Second }, "negative"},
		{"negative_max_entries", func(c *token.IntrospectionConfig) { c.MaxCacheEntries = -1 }, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			i, err := token.NewIntrospector(cfg)
			if err == nil {
				t.Fatalf("NewIntrospector(%s) = %v, want an error", tc.name, i)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %q, want it to contain %q", err, tc.want)
			}
			checkClean(t, "err", err.Error())
		})
	}
	if _, err := token.NewIntrospector(good); err != nil {
		t.Errorf("the good configuration: %v", err)
	}
	cfg := good
	cfg.Endpoint = "http://[::1]:8080/introspect"
	if _, err := token.NewIntrospector(cfg); err != nil {
		t.Errorf("http to a loopback host: %v", err)
	}
}

// TestIntrospectorPrintsNoSecret: an Introspector printed with any verb
// shows its endpoint without query, never its credentials.
func TestIntrospectorPrintsNoSecret(t *testing.T) {
	i, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint: "https://login.example/introspect?tenant=" + introMarker, ClientID: introClientID, ClientSecret: introSecret, Audience: introAudience,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		s := fmt.Sprintf(verb, i)
		checkClean(t, verb, s)
		if strings.Contains(s, "Basic") || strings.Contains(s, "gateway") {
			t.Errorf("%s: %q shows the credentials", verb, s)
		}
	}
	if got, want := i.String(), "https://login.example/introspect?…"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// ExampleIntrospector verifies opaque access tokens by asking the
// authorization server's introspection endpoint (RFC 7662). Behind the
// go-sdk's auth.RequireBearerToken, use i.Verifier(); in the gateway, i
// itself is an Authenticator.
func ExampleIntrospector() {
	// The authorization server's endpoint: it knows one active token.
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, secret, _ := r.BasicAuth(); id != "mcp-server" || secret != "s3cret" {
			http.Error(w, `{"error": "invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostFormValue("token") != "2YotnFZFEjr1zCsicMWpAA" {
			io.WriteString(w, `{"active": false}`)
			return
		}
		fmt.Fprintf(w, `{"active": true, "sub": "ann", "scope": "support billing", "aud": "https://mcp.example.com/orders", "exp": %d}`,
			time.Now().Add(time.Hour).Unix())
	}))
	defer endpoint.Close()

	i, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint:     endpoint.URL + "/introspect", // https, or http to loopback
		ClientID:     "mcp-server",
		ClientSecret: "s3cret",
		Audience:     "https://mcp.example.com/orders",
	})
	if err != nil {
		panic(err)
	}
	pr, err := i.Authenticate(context.Background(), "2YotnFZFEjr1zCsicMWpAA")
	fmt.Println(pr.Subject, pr.Roles, err)
	_, err = i.Authenticate(context.Background(), "tGzv3JOkF0XG5Qx2TlKWIA")
	fmt.Println(errors.Is(err, token.ErrInvalidToken), err)
	// Output:
	// ann [support billing] <nil>
	// true token: invalid token: inactive
}

// TestIntrospectorMaxInFlight: with MaxInFlight requests under way, a
// lookup of another token not in the cache fails at once, without asking
// the endpoint and without calling ErrorHandler (a flood of made-up tokens
// must not become a flood of requests), while a lookup of a token under
// way still shares its request; once the requests end, the refused token
// is asked about.
func TestIntrospectorMaxInFlight(t *testing.T) {
	e := newIntroEndpoint(t)
	hold := make(chan struct{})
	e.mu.Lock()
	e.hold = hold
	e.mu.Unlock()
	i, log := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) { c.MaxInFlight = 2 })
	results := make(chan error, 3)
	for _, tok := range []string{tokAnn, tokBob, tokAnn} {
		go func() {
			_, _, err := i.Introspect(context.Background(), tok)
			results <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.count(tokAnn) == 0 || e.count(tokBob) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the two requests never reached the endpoint")
		}
		time.Sleep(time.Millisecond)
	}
	_, _, err := i.Introspect(context.Background(), "opq_carl_3Jd8")
	checkIntroFailure(t, err, "MaxInFlight")
	if got := e.count("opq_carl_3Jd8"); got != 0 {
		t.Errorf("the refused lookup made %d requests, want 0", got)
	}
	close(hold)
	for range 3 {
		if err := <-results; err != nil {
			t.Errorf("a lookup under way: %v", err)
		}
	}
	if got := e.count(tokAnn); got != 1 {
		t.Errorf("%d requests about ann's token, want 1 (shared)", got)
	}
	if errs := log.all(); len(errs) != 0 {
		t.Errorf("ErrorHandler got %v, want nothing for a lookup refused by MaxInFlight", errs)
	}
	if _, _, err := i.Introspect(context.Background(), "opq_carl_3Jd8"); !errors.Is(err, token.ErrInvalidToken) {
		t.Errorf("after the requests ended: %v, want the endpoint's refusal", err)
	}
	if got := e.count("opq_carl_3Jd8"); got != 1 {
		t.Errorf("after the requests ended: %d requests, want 1", got)
	}
	if _, err := token.NewIntrospector(token.IntrospectionConfig{Endpoint: e.URL, Audience: "a", MaxInFlight: -1}); err == nil {
		t.Error("NewIntrospector accepted a negative MaxInFlight")
	}
}

// TestIntrospectorDoneContextAsksNothing: a lookup whose context has
// already ended fails (not judged, unwrapping to the context's error)
// without starting a request nobody would wait for; a cached answer still
// serves it.
func TestIntrospectorDoneContextAsksNothing(t *testing.T) {
	e := newIntroEndpoint(t)
	i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := i.Introspect(ctx, tokAnn)
	checkIntroFailure(t, err, "canceled")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want one that unwraps to context.Canceled", err)
	}
	if n := e.count(tokAnn); n != 0 {
		t.Errorf("the endpoint was asked %d times for a lookup nobody waits for", n)
	}
	if _, _, err := i.Introspect(context.Background(), tokAnn); err != nil {
		t.Fatal(err)
	}
	if pr, _, err := i.Introspect(ctx, tokAnn); err != nil || pr.Subject != "ann" {
		t.Errorf("a cached answer with an ended context: %v, %v", pr, err)
	}
}

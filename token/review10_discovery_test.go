package token_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpguard/mcpguard/token"
)

const (
	oidcPath  = "/.well-known/openid-configuration"
	oauthPath = "/.well-known/oauth-authorization-server"
	// bodyMarker is in every document served: no error may quote it.
	bodyMarker = "BODY-MARKER-7f3a"
)

// idpServer is a real HTTP server on 127.0.0.1 playing an authorization
// server: it answers the paths in routes (404 for any other) and records
// every path requested. Routes may be changed before the first request.
type idpServer struct {
	*httptest.Server
	routes map[string]http.HandlerFunc
	mu     sync.Mutex
	paths  []string
}

func newIDPServer(t *testing.T) *idpServer {
	t.Helper()
	s := &idpServer{routes: map[string]http.HandlerFunc{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		h := s.routes[r.URL.Path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// route makes the server answer path with h.
func (s *idpServer) route(path string, h http.HandlerFunc) {
	s.mu.Lock()
	s.routes[path] = h
	s.mu.Unlock()
}

// requested returns the paths requested so far, in order.
func (s *idpServer) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// serveJSON answers v marshalled as JSON.
func serveJSON(t *testing.T, v any) http.HandlerFunc {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

// metadata is a discovery document naming issuer and jwksURI.
func metadata(issuer, jwksURI string) map[string]any {
	return map[string]any{
		"issuer":                 issuer,
		"jwks_uri":               jwksURI,
		"authorization_endpoint": issuer + "/authorize",
		"x_note":                 bodyMarker,
	}
}

// TestDiscoverKeySetFindsJWKS: the JWK Set is found through the OpenID
// Connect discovery document, the issuer's path (without a terminating
// "/") followed by the well-known path; and, only when that answers 404,
// through RFC 8414's metadata, the well-known path inserted between host
// and path. The set then verifies a token signed by the issuer's key and
// refuses one signed by another.
func TestDiscoverKeySetFindsJWKS(t *testing.T) {
	key, other := edKey(t), edKey(t)
	for _, tc := range []struct {
		name       string
		issuerPath string // after the server's URL
		docPath    string // where the server publishes the document
		want       []string
	}{
		{"oidc_no_path", "", oidcPath, []string{oidcPath, "/keys"}},
		{"oidc_root_slash", "/", oidcPath, []string{oidcPath, "/keys"}},
		{"oidc_path", "/realms/mcp", "/realms/mcp" + oidcPath, []string{"/realms/mcp" + oidcPath, "/keys"}},
		{"oidc_path_trailing_slash", "/realms/mcp/", "/realms/mcp" + oidcPath, []string{"/realms/mcp" + oidcPath, "/keys"}},
		{"rfc8414_no_path", "", oauthPath, []string{oidcPath, oauthPath, "/keys"}},
		{"rfc8414_path", "/tenant/a", oauthPath + "/tenant/a", []string{"/tenant/a" + oidcPath, oauthPath + "/tenant/a", "/keys"}},
		{"rfc8414_path_trailing_slash", "/tenant/", oauthPath + "/tenant", []string{"/tenant" + oidcPath, oauthPath + "/tenant", "/keys"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newIDPServer(t)
			issuer := srv.URL + tc.issuerPath
			srv.route(tc.docPath, serveJSON(t, metadata(issuer, srv.URL+"/keys")))
			srv.route("/keys", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "k1", key.Public())))))
			set, err := token.DiscoverKeySet(context.Background(), issuer, nil)
			if err != nil {
				t.Fatalf("DiscoverKeySet(%q): %v; requested %q", issuer, err, srv.requested())
			}
			if diff := cmp.Diff(tc.want, srv.requested()); diff != "" {
				t.Errorf("paths requested (-want +got):\n%s", diff)
			}
			if got, want := set.String(), srv.URL+"/keys"; got != want {
				t.Errorf("set.String() = %q, want %q", got, want)
			}
			v := newJWT(t, token.JWTConfig{KeySet: set, Issuer: issuer})
			withIss := claims(func(c jwt.MapClaims) { c["iss"] = issuer })
			if _, _, err := v.Verify(sign(t, jwt.SigningMethodEdDSA, key, "k1", withIss)); err != nil {
				t.Errorf("token signed by the discovered key: %v", err)
			}
			tok := sign(t, jwt.SigningMethodEdDSA, other, "k1", withIss)
			_, _, err = v.Verify(tok)
			checkRefusal(t, err, tok, "signature")
		})
	}
}

// TestDiscoverKeySetRefusesDocument: metadata that does not name this
// issuer exactly (a mix-up: another issuer's, or the same URL with or
// without a terminating "/"), has no usable jwks_uri, or is no JSON object
// is refused before the jwks_uri is fetched; the error says why, names the
// document's URL and never quotes the rest of the body.
func TestDiscoverKeySetRefusesDocument(t *testing.T) {
	key := edKey(t)
	for _, tc := range []struct {
		name       string
		issuerPath string
		doc        func(issuer, keys string) any
		want       string
	}{
		{"other_issuer", "", func(_, keys string) any { return metadata("https://other.example", keys) }, `"issuer" is "https://other.example"`},
		{"issuer_with_extra_slash", "/realms/mcp", func(iss, keys string) any { return metadata(iss+"/", keys) }, "want"},
		{"issuer_without_its_slash", "/realms/mcp/", func(iss, keys string) any { return metadata(strings.TrimSuffix(iss, "/"), keys) }, "want"},
		{"issuer_other_case", "/realms/mcp", func(iss, keys string) any { return metadata(strings.ToUpper(iss), keys) }, "want"},
		{"no_issuer", "", func(_, keys string) any { return map[string]any{"jwks_uri": keys, "x": bodyMarker} }, `no "issuer"`},
		{"issuer_not_string", "", func(_, keys string) any { return map[string]any{"issuer": 42, "jwks_uri": keys, "x": bodyMarker} }, `no "issuer"`},
		{"members_case_folded", "", func(iss, keys string) any { return map[string]any{"ISSUER": iss, "JWKS_URI": keys, "x": bodyMarker} }, `no "issuer"`},
		{"no_jwks_uri", "", func(iss, _ string) any { return map[string]any{"issuer": iss, "x": bodyMarker} }, `no "jwks_uri"`},
		{"jwks_uri_empty", "", func(iss, _ string) any { return metadata(iss, "") }, `no "jwks_uri"`},
		{"jwks_uri_plain_http_off_loopback", "", func(iss, _ string) any { return metadata(iss, "http://idp.example/keys") }, "loopback"},
		{"jwks_uri_not_url", "", func(iss, _ string) any { return metadata(iss, "keys.json") }, "no host"},
		{"jwks_uri_ftp", "", func(iss, _ string) any { return metadata(iss, "ftp://127.0.0.1/keys") }, "scheme must be https"},
		{"array", "", func(iss, keys string) any { return []any{metadata(iss, keys)} }, "not a JSON object"},
		{"null", "", func(string, string) any { return nil }, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newIDPServer(t)
			issuer := srv.URL + tc.issuerPath
			docURL := strings.TrimSuffix(issuer, "/") + oidcPath
			srv.route(strings.TrimPrefix(docURL, srv.URL), serveJSON(t, tc.doc(issuer, srv.URL+"/keys")))
			srv.route("/keys", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "k1", key.Public())))))
			_, err := token.DiscoverKeySet(context.Background(), issuer, nil)
			if err == nil {
				t.Fatalf("DiscoverKeySet accepted the document")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, docURL) {
				t.Errorf("err %q: want it to name %s and contain %q", msg, docURL, tc.want)
			}
			if strings.Contains(msg, bodyMarker) {
				t.Errorf("err %q quotes the document", msg)
			}
			if got := srv.requested(); len(got) != 1 {
				t.Errorf("paths requested %q, want the document only", got)
			}
		})
	}
}

// TestDiscoverKeySetFetchFailures: the discovery fetches keep the limits
// of the set's own: a status other than 200 on the OpenID Connect path is
// an error at once, without trying RFC 8414's (only 404 leads there); so is
// a timeout; a body over 1 MiB is refused; a redirect is followed to
// another loopback URL but not to plain http off loopback; a jwks_uri that
// cannot be fetched is NewRemoteKeySet's error.
func TestDiscoverKeySetFetchFailures(t *testing.T) {
	key := edKey(t)
	set := serveJSON(t, json.RawMessage(jwks(t, jwk(t, "k1", key.Public()))))
	release := make(chan struct{})
	defer close(release)
	for _, tc := range []struct {
		name   string
		routes func(s *idpServer) // the server's routes besides /keys
		ok     bool
		want   string   // in the error
		paths  []string // requested, in order
	}{
		{"oidc_500", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, bodyMarker, http.StatusInternalServerError)
			})
			s.route(oauthPath, serveJSON(t, metadata(s.URL, s.URL+"/keys")))
		}, false, oidcPath + ": status 500, want 200", []string{oidcPath}},
		{"oidc_401", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
			s.route(oauthPath, serveJSON(t, metadata(s.URL, s.URL+"/keys")))
		}, false, "status 401", []string{oidcPath}},
		{"oidc_timeout", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			s.route(oauthPath, serveJSON(t, metadata(s.URL, s.URL+"/keys")))
		}, false, "deadline exceeded", []string{oidcPath}},
		{"both_404", func(s *idpServer) {}, false, oauthPath + ": status 404", []string{oidcPath, oauthPath}},
		{"rfc8414_500", func(s *idpServer) {
			s.route(oauthPath, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		}, false, oauthPath + ": status 500", []string{oidcPath, oauthPath}},
		{"oversized", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) {
				doc, _ := json.Marshal(metadata(s.URL, s.URL+"/keys"))
				w.Write(doc[:len(doc)-1])
				w.Write([]byte(`,"pad":"` + strings.Repeat("x", 1<<20) + `"}`))
			})
		}, false, "larger than 1048576 bytes", []string{oidcPath}},
		{"just_under_the_limit", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) {
				doc, _ := json.Marshal(metadata(s.URL, s.URL+"/keys"))
				w.Write(doc[:len(doc)-1])
				w.Write([]byte(`,"pad":"` + strings.Repeat("x", 1<<20-len(doc)-9) + `"}`))
			})
		}, true, "", []string{oidcPath, "/keys"}},
		{"redirect_on_loopback", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/moved", http.StatusFound) })
			s.route("/moved", serveJSON(t, metadata(s.URL, s.URL+"/keys")))
		}, true, "", []string{oidcPath, "/moved", "/keys"}},
		{"redirect_to_plain_http", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://idp.example"+oidcPath, http.StatusFound)
			})
		}, false, "redirect refused", []string{oidcPath}},
		{"redirect_to_ftp", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "ftp://127.0.0.1/openid-configuration", http.StatusFound)
			})
		}, false, "redirect refused", []string{oidcPath}},
		{"redirect_loop", func(s *idpServer) {
			s.route(oidcPath, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, oidcPath, http.StatusFound) })
		}, false, "stopped after 10 redirects", []string{oidcPath, oidcPath, oidcPath, oidcPath, oidcPath, oidcPath, oidcPath, oidcPath, oidcPath, oidcPath}},
		{"jwks_uri_404", func(s *idpServer) {
			s.route(oidcPath, serveJSON(t, metadata(s.URL, s.URL+"/gone")))
		}, false, "JWK Set", []string{oidcPath, "/gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newIDPServer(t)
			srv.route("/keys", set)
			tc.routes(srv)
			// The test's own deadline, should Timeout be ignored.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			// Short, for the slow cases; a megabyte under -race on a
			// busy machine may take longer than that to arrive.
			timeout := 300 * time.Millisecond
			if tc.name == "oversized" || tc.name == "just_under_the_limit" {
				timeout = 10 * time.Second
			}
			start := time.Now()
			_, err := token.DiscoverKeySet(ctx, srv.URL, &token.RemoteKeySetOptions{Timeout: timeout})
			if d := time.Since(start); timeout < time.Second && d > 3*time.Second {
				t.Errorf("DiscoverKeySet took %v, want the 300 ms Timeout per fetch", d)
			}
			switch {
			case tc.ok && err != nil:
				t.Errorf("DiscoverKeySet: %v", err)
			case !tc.ok && err == nil:
				t.Errorf("DiscoverKeySet: no error, want one containing %q", tc.want)
			case !tc.ok && (!strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), bodyMarker)):
				t.Errorf("err %q: want it to contain %q and not to quote the body", err, tc.want)
			}
			if diff := cmp.Diff(tc.paths, srv.requested()); diff != "" {
				t.Errorf("paths requested (-want +got):\n%s", diff)
			}
		})
	}
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	mu   sync.Mutex
	sent []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.sent = append(c.sent, r.URL.Path)
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestDiscoverKeySetUsesOptions: the options' Client sends the discovery
// fetches and, with the rest of the options, is the returned set's: its
// refreshes, and its reads of the document again, go through it and are
// spaced by MinRefreshInterval.
func TestDiscoverKeySetUsesOptions(t *testing.T) {
	a, b := edKey(t), edKey(t)
	srv := newIDPServer(t)
	srv.route(oidcPath, serveJSON(t, metadata(srv.URL, srv.URL+"/keys")))
	srv.route("/keys", serveJSON(t, json.RawMessage(jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public())))))
	tr := &countingTransport{}
	clk := &clock{now: testNow}
	set, err := token.DiscoverKeySet(context.Background(), srv.URL, &token.RemoteKeySetOptions{
		Client: &http.Client{Transport: tr}, MinRefreshInterval: time.Hour, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	v := newJWT(t, token.JWTConfig{KeySet: set, Issuer: srv.URL})
	withIss := claims(func(c jwt.MapClaims) { c["iss"] = srv.URL })
	clk.advance(30 * time.Minute)
	tok := sign(t, jwt.SigningMethodEdDSA, a, "z", withIss)
	_, _, err = v.Verify(tok)
	checkRefusal(t, err, tok, "unknown kid") // within the hour: no refetch
	clk.advance(time.Hour)
	_, _, err = v.Verify(tok)
	checkRefusal(t, err, tok, "unknown kid") // refetched, still unknown: the document is read again
	want := []string{oidcPath, "/keys", "/keys", oidcPath}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if diff := cmp.Diff(want, tr.sent); diff != "" {
		t.Errorf("requests sent through the options' Client (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, srv.requested()); diff != "" {
		t.Errorf("requests the server saw (-want +got):\n%s", diff)
	}
}

// TestDiscoverKeySetRefusesIssuer: an issuer that is not an https URL (http
// only to a loopback host), or that has user info, a query or a fragment,
// and negative durations, are refused before any request; the error does
// not show the issuer's password or query.
func TestDiscoverKeySetRefusesIssuer(t *testing.T) {
	srv := newIDPServer(t)
	srv.route(oidcPath, serveJSON(t, metadata(srv.URL, srv.URL+"/keys")))
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		issuer, want string
	}{
		{"http://idp.example", "loopback"},
		{"http://10.0.0.1", "loopback"},
		{"ftp://" + hostPort, "scheme must be https"},
		{"idp", "no host"},
		{"", "no host"},
		{"https:///realms/mcp", "no host"},
		{"http://reader:s3cret@" + hostPort, "user info"},
		{srv.URL + "?tenant=s3cret", "query"},
		{srv.URL + "?", "query"},
		{srv.URL + "#s3cret", "fragment"},
		{srv.URL + "#", "fragment"},
	} {
		_, err := token.DiscoverKeySet(context.Background(), tc.issuer, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "https") {
			t.Errorf("DiscoverKeySet(%q): err %v, want one saying https and %q", tc.issuer, err, tc.want)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("DiscoverKeySet(%q): err %q shows the credential", tc.issuer, err)
		}
	}
	for _, o := range []token.RemoteKeySetOptions{{Timeout: -1}, {MinRefreshInterval: -1}, {MaxAge: -1}} {
		if _, err := token.DiscoverKeySet(context.Background(), srv.URL, &o); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("options %+v: err %v, want negative durations refused", o, err)
		}
	}
	if got := srv.requested(); len(got) != 0 {
		t.Errorf("refused issuers and options: the server saw %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := token.DiscoverKeySet(ctx, srv.URL, nil); err == nil {
		t.Errorf("cancelled context: no error")
	}
}

// TestDiscoverKeySetHidesCredentials: a jwks_uri or a document's issuer
// holding a credential (user info, a query) is shown without it in
// DiscoverKeySet's errors, which end up in logs.
func TestDiscoverKeySetHidesCredentials(t *testing.T) {
	srv := newIDPServer(t)
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	srv.route("/keys", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	for name, doc := range map[string]any{
		"jwks_uri_fails":       metadata(srv.URL, "http://reader:s3cret@"+hostPort+"/keys?api_key=s3cret"),
		"jwks_uri_refused":     metadata(srv.URL, "http://reader:s3cret@idp.example/keys?api_key=s3cret"),
		"other_issuer_queried": metadata("https://other.example/?api_key=s3cret", srv.URL+"/keys"),
	} {
		srv.route(oidcPath, serveJSON(t, doc))
		_, err := token.DiscoverKeySet(context.Background(), srv.URL, nil)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: err %q shows the credential", name, err)
		}
	}
}

// ExampleDiscoverKeySet finds an issuer's JWK Set from its discovery
// document and verifies a token signed by the issuer's key.
func ExampleDiscoverKeySet() {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	var issuer string // the server's URL and a path, known once it runs
	mux := http.NewServeMux()
	mux.HandleFunc("/realms/mcp/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"issuer": %q, "jwks_uri": %q}`, issuer, issuer+"/certs")
	})
	mux.HandleFunc("/realms/mcp/certs", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": %q}]}`,
			base64.RawURLEncoding.EncodeToString(pub))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	issuer = srv.URL + "/realms/mcp" // in production, https://login.example.com/realms/mcp

	keys, err := token.DiscoverKeySet(context.Background(), issuer, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("jwks_uri found:", keys.String() == issuer+"/certs")
	v, err := token.NewJWT(token.JWTConfig{KeySet: keys, Issuer: issuer, Audience: "https://mcp.example.com/orders"})
	if err != nil {
		panic(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": issuer, "aud": "https://mcp.example.com/orders", "sub": "ann",
		"exp": time.Now().Add(5 * time.Minute).Unix(),
	})
	tok.Header["kid"] = "k1"
	s, _ := tok.SignedString(priv)
	pr, _, err := v.Verify(s)
	fmt.Println(pr.Subject, err)
	// Output:
	// jwks_uri found: true
	// ann <nil>
}

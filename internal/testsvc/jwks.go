package testsvc

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// A JWKS is an identity provider's JSON Web Key Set URL, on 127.0.0.1: it
// publishes the public halves of Ed25519 keys named by kid, and signs
// tokens with them. It can be taken down (503) and brought back.
type JWKS struct {
	URL string

	mu        sync.Mutex
	keys      map[string]ed25519.PrivateKey
	published []string
	down      bool
}

// StartJWKS starts a JWK Set URL that publishes keys named kids; it is
// stopped when the test ends.
func StartJWKS(t testing.TB, kids ...string) *JWKS {
	t.Helper()
	j := &JWKS{keys: map[string]ed25519.PrivateKey{}}
	j.Publish(t, kids...)
	srv := httptest.NewServer(http.HandlerFunc(j.serve))
	t.Cleanup(srv.Close)
	j.URL = srv.URL + "/jwks.json"
	return j
}

func (j *JWKS) serve(w http.ResponseWriter, _ *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.down {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	keys := []map[string]string{}
	for _, kid := range j.published {
		x := base64.RawURLEncoding.EncodeToString(j.keys[kid].Public().(ed25519.PublicKey))
		keys = append(keys, map[string]string{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"keys": keys})
}

// Publish makes the set publish kids (and only them), keys made for those
// it has never seen.
func (j *JWKS) Publish(t testing.TB, kids ...string) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, kid := range kids {
		j.key(t, kid)
	}
	j.published = kids
}

// SetDown makes the URL answer 503 (down) or the set again.
func (j *JWKS) SetDown(down bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.down = down
}

// Sign returns claims signed (EdDSA) with the key named kid, made if new
// (and not published).
func (j *JWKS) Sign(t testing.TB, kid string, claims jwt.MapClaims) string {
	t.Helper()
	j.mu.Lock()
	key := j.key(t, kid)
	j.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// key returns the key named kid, made if new; j.mu is held.
func (j *JWKS) key(t testing.TB, kid string) ed25519.PrivateKey {
	if k, ok := j.keys[kid]; ok {
		return k
	}
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	j.keys[kid] = k
	return k
}

// The issuer and audience of the tokens [JWKS.Verifier] accepts and
// [JWKS.Claims] writes.
const (
	JWKSIssuer   = "https://idp.example"
	JWKSAudience = "mcp"
)

// Verifier returns a JWT verifier of the tokens j signs (issuer JWKSIssuer,
// audience JWKSAudience), its keys fetched from j's URL now and as the
// verifier needs them, on clock (nil means time.Now), its fetch failures
// not reported.
func (j *JWKS) Verifier(t testing.TB, clock func() time.Time) *token.JWT {
	t.Helper()
	ks, err := token.NewRemoteKeySet(context.Background(), j.URL, &token.RemoteKeySetOptions{Now: clock, ErrorHandler: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := token.NewJWT(token.JWTConfig{KeySet: ks, Issuer: JWKSIssuer, Audience: JWKSAudience})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Claims returns the claims of a token for sub with audience aud, expiring
// at exp, from JWKSIssuer, with role, if not empty.
func Claims(sub, role, aud string, exp time.Time) jwt.MapClaims {
	c := jwt.MapClaims{"iss": JWKSIssuer, "aud": aud, "sub": sub, "exp": exp.Unix()}
	if role != "" {
		c["role"] = role
	}
	return c
}

// A Clock is a test clock that moves only when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads the time now until advanced.
func NewClock() *Clock { return &Clock{now: time.Now()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

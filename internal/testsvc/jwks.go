package testsvc

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"
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

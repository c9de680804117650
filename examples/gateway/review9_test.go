package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestReview9JWKSQueryCredentialNotLogged: an operator whose provider's
// JWK Set sits behind an API key in the query string starts the gateway
// with --jwt-jwks 'https://.../jwks.json?api_key=...'. The gateway takes
// care to hide a password in the URL's user info from its start log
// (u.Redacted()), so the operator expects the query's credential to stay
// out of the log as well. Instead the "verifying bearer tokens as JWTs"
// line logs the URL with its query, on every start (main.go, authenticator).
func TestReview9JWKSQueryCredentialNotLogged(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	const secret = "s3cret-query-key"
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set := `{"keys":[{"kty":"OKP","crv":"Ed25519","use":"sig","kid":"k1","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api_key") != secret {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, set)
	}))
	defer idp.Close()
	url, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp",
		"--jwt-jwks", idp.URL+"/jwks.json?api_key="+secret,
		"--jwt-issuer", "https://idp.example", "--jwt-audience", "mcp-gateway")
	if url == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	stop()
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the gateway's log shows the JWK Set URL's query credential:\n%s", logs)
	}
}

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
	"path/filepath"
	"strings"
	"testing"
)

// TestReview18dMinRefreshBound: --jwt-jwks-min-refresh is at most the
// JWK Set's lifetime, 1h: exactly 1h starts the binary (with a --jwt-jwks
// URL, whose set is fetched at start), 1h and a nanosecond does not, with
// the flag's own message, not the token package's. With a key set file,
// where the flag does nothing, a value over 1h is refused for that.
func TestReview18dMinRefreshBound(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		io.WriteString(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"`+base64.RawURLEncoding.EncodeToString(pub)+`"}]}`)
	}))
	defer idp.Close()
	file := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(file, []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"`+base64.RawURLEncoding.EncodeToString(pub)+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		jwks, refresh string
		want          string // the error's text; "" means the gateway starts
	}{
		{idp.URL + "/jwks.json", "1h", ""},
		{idp.URL + "/jwks.json", "60m", ""},
		{idp.URL + "/jwks.json", "1h0m0.000000001s", "--jwt-jwks-min-refresh 1h0m0.000000001s: at most 1h, the JWK Set's lifetime"},
		{idp.URL + "/jwks.json", "61m", "--jwt-jwks-min-refresh 1h1m0s: at most 1h"},
		// With a file the flag does nothing, whatever its value: that is
		// what to say first (an operator told "at most 1h" who then gives
		// 1h is only then told to drop it).
		{file, "2h", "--jwt-jwks-min-refresh: only with a --jwt-jwks URL"},
	} {
		url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp",
			"--jwt-jwks", tc.jwks, "--jwt-jwks-min-refresh", tc.refresh,
			"--jwt-issuer", "https://idp.example", "--jwt-audience", "mcp-gateway")
		switch {
		case tc.want == "" && url == "":
			t.Errorf("--jwt-jwks-min-refresh %s: the gateway did not start: %v; logs:\n%s", tc.refresh, err, logs)
		case tc.want == "":
			stop()
		case url != "":
			stop()
			t.Errorf("--jwt-jwks-min-refresh %s: the gateway started", tc.refresh)
		case err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "token:"):
			t.Errorf("--jwt-jwks-min-refresh %s: err %v, want it to begin %q (the flag's own message)", tc.refresh, err, tc.want)
		}
	}
}

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestJWTResource runs the binary with --jwt-resource and without
// --jwt-audience: a request without a token gets 401 naming the resource
// metadata, which the go-sdk's discovery code fetches and accepts (the
// resource is the gateway's URL, the authorization server --jwt-issuer);
// a token whose audience is the resource URL is forwarded, one for
// another audience is refused and never forwarded.
func TestJWTResource(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(t.TempDir(), "keys.json")
	set := `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
	if err := os.WriteFile(jwks, []byte(set), 0o600); err != nil {
		t.Fatal(err)
	}
	var forwarded atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		forwarded.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	defer down.Close()

	// The resource URL is the gateway's own: take a free port first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	resource := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	const issuer = "https://idp.example/realms/mcp"

	url, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--upstream", down.URL+"/mcp",
		"--jwt-jwks", jwks, "--jwt-issuer", issuer, "--jwt-resource", resource)
	if url == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()

	post := func(tok string) *http.Response { return callResponse(t, url, "get_customer_record", tok) }
	sign := func(aud string) string {
		return signEdDSA(t, priv, "k1", jwt.MapClaims{
			"iss": issuer, "aud": aud, "sub": "ann", "exp": time.Now().Add(time.Hour).Unix(),
		})
	}

	resp := post("")
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || err != nil || len(chs) != 1 {
		t.Fatalf("no token: %s, challenges %q (%v)", resp.Status, resp.Header.Values("WWW-Authenticate"), err)
	}
	where := chs[0].Params["resource_metadata"]
	if want := url + "/.well-known/oauth-protected-resource/mcp"; where != want {
		t.Errorf("resource_metadata %q, want %q", where, want)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), where, resource, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{issuer}, prm.AuthorizationServers); diff != "" {
		t.Errorf("authorization servers (-want +got):\n%s", diff)
	}

	if resp := post(sign(resource)); resp.StatusCode != http.StatusOK || forwarded.Load() != 1 {
		t.Errorf("token for the resource: %s, forwarded %d, want 200 and 1", resp.Status, forwarded.Load())
	}
	if resp := post(sign("mcp-gateway")); resp.StatusCode != http.StatusUnauthorized || forwarded.Load() != 1 {
		t.Errorf("token for another audience: %s, forwarded %d, want 401 and still 1", resp.Status, forwarded.Load())
	}
}

// TestJWTResourceRefused: --jwt-resource that cannot be served truthfully
// stops the binary at start: without --jwt-jwks, with an issuer that is
// not an https URL (it must be the authorization server's), with a
// resource URL in plain http to a host other than loopback.
func TestJWTResourceRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	jwks := filepath.Join(t.TempDir(), "keys.json")
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(jwks, []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"`+base64.RawURLEncoding.EncodeToString(pub)+`"}]}`), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"without_jwks", []string{"--jwt-resource", "https://gw.example/mcp"}, "only with --jwt-jwks"},
		{"issuer_not_url", []string{"--jwt-jwks", jwks, "--jwt-issuer", "idp", "--jwt-resource", "https://gw.example/mcp"}, "--jwt-resource"},
		{"resource_http", []string{"--jwt-jwks", jwks, "--jwt-issuer", "https://idp.example", "--jwt-resource", "http://gw.example/mcp"}, "loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, tc.args...)
			url, err, stop, _ := startRun(t, args...)
			if url != "" {
				stop()
				t.Fatalf("gateway %v started", tc.args)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

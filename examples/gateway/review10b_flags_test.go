package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview10bFlagValuesRefused: flag values that the gateway would
// replace silently by something the operator did not write stop the start
// instead, before the introspection endpoint is asked anything: a
// --timeout so small that it rounds to no duration at all (which
// gateway.New turns into its 30 s default), and a roles claim given as
// empty (which token.JWTConfig and token.IntrospectionConfig turn into
// "roles" and "scope": an operator who meant "no roles" would get the
// roles of the default claim, "admin" among them). Each configuration
// is otherwise one that starts.
func TestReview10bFlagValuesRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	e := newGWEndpoint(t)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(t.TempDir(), "keys.json")
	set := `{"keys":[{"kty":"OKP","crv":"Ed25519","use":"sig","kid":"k1","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
	if err := os.WriteFile(jwks, []byte(set), 0o600); err != nil {
		t.Fatal(err)
	}
	jwtFlags := []string{"--jwt-jwks", jwks, "--jwt-issuer", "https://idp.example", "--jwt-audience", "mcp-gateway"}
	inFlags := []string{"--introspect", e.URL, "--introspect-audience", "mcp-gateway"}
	for _, tc := range []struct {
		name  string
		args  []string
		creds bool // the introspection client's credentials in the environment
		want  string
	}{
		{"timeout_below_a_nanosecond", []string{"--timeout", "1e-10"}, false, "--timeout"},
		{"empty_jwt_roles_claim", append(jwtFlags, "--jwt-roles-claim", ""), false, "--jwt-roles-claim"},
		{"empty_introspect_roles_claim", append(inFlags, "--introspect-roles-claim", ""), true, "--introspect-roles-claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(introspectIDEnv, gwClientID)
			t.Setenv(introspectSecretEnv, gwSecret)
			if !tc.creds {
				os.Unsetenv(introspectIDEnv)
				os.Unsetenv(introspectSecretEnv)
			}
			before := e.count(introspectProbe)
			args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, tc.args...)
			base, err, stop, logs := startRun(t, args...)
			if base != "" {
				stop()
				t.Fatalf("gateway %q started; want a refusal at start; logs:\n%s", tc.args, logs)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one naming %s", err, tc.want)
			}
			if n := e.count(introspectProbe) - before; n != 0 {
				t.Errorf("the endpoint got %d requests, want none", n)
			}
		})
	}
}

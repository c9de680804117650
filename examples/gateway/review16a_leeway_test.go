package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"flag"
	"os"
	"strings"
	"testing"
)

// TestReview16aLeewayFlagsCheckedFirst: a --jwt-leeway or
// --introspect-leeway out of range (negative, or over token.MaxLeeway,
// five minutes) stops the start with an error naming the flag, before the
// issuer's discovery document or the introspection endpoint is asked
// anything. The bound was the token package's, met only once the JWK Set
// had been found (after a network round trip, whose failure would hide
// the flag's), and its error named a configuration field, not the flag.
func TestReview16aLeewayFlagsCheckedFirst(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := newDiscoveryIDP(t, edSet("key-a", pub))
	e := newGWEndpoint(t)
	jwtFlags := []string{"--jwt-issuer", idp.issuer, "--jwt-audience", "mcp-gateway"}
	inFlags := []string{"--introspect", e.URL, "--introspect-audience", "mcp-gateway"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"jwt_leeway_over_the_bound", append(jwtFlags, "--jwt-leeway", "10m"), "--jwt-leeway"},
		{"jwt_leeway_negative", append(jwtFlags, "--jwt-leeway", "-1s"), "--jwt-leeway"},
		{"introspect_leeway_over_the_bound", append(inFlags, "--introspect-leeway", "5m1s"), "--introspect-leeway"},
		{"introspect_leeway_negative", append(inFlags, "--introspect-leeway", "-1s"), "--introspect-leeway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(introspectIDEnv, gwClientID)
			t.Setenv(introspectSecretEnv, gwSecret)
			if !strings.HasPrefix(tc.name, "introspect") {
				os.Unsetenv(introspectIDEnv)
				os.Unsetenv(introspectSecretEnv)
			}
			idpBefore, endpointBefore := idp.total(), e.count(introspectProbe)
			args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, tc.args...)
			base, err, stop, logs := startRun(t, args...)
			if base != "" {
				stop()
				t.Fatalf("gateway %q started; want a refusal at start; logs:\n%s", tc.args, logs)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one naming %s", err, tc.want)
			}
			if n := idp.total() - idpBefore; n != 0 {
				t.Errorf("the issuer got %d requests, want none", n)
			}
			if n := e.count(introspectProbe) - endpointBefore; n != 0 {
				t.Errorf("the introspection endpoint got %d requests, want none", n)
			}
		})
	}
}

package main

import (
	"strings"
	"testing"
)

// TestReview32URLSecret2OriginNotShown: a token or user:password typed
// into --origin or --allowed-origins (bare, after the scheme with the host
// left out, after "http:/", after a space) is not printed in the
// usage error; a host name or host:* given without its scheme still is.
func TestReview32URLSecret2OriginNotShown(t *testing.T) {
	const tok = "sk_live_51HabcdEFGH0123456789"
	for _, v := range []string{tok, "https://admin:" + tok, "http:/admin:" + tok, "https://a.example " + tok} {
		for _, args := range [][]string{
			{"--origin", v},
			{"--transport", "http", "--allowed-origins", "https://a.example," + v},
		} {
			var out strings.Builder
			code := run(append([]string{"--gateway", "http://127.0.0.1:1"}, args...), &out, &out)
			if code != 2 {
				t.Errorf("%q: exit %d, want 2; output:\n%s", args, code, out.String())
			}
			if strings.Contains(out.String(), "0123456789") {
				t.Errorf("%q: the token is shown:\n%s", args, out.String())
			}
		}
	}
	for _, args := range [][]string{
		{"--origin", "my-service-01234.svc.cluster.local:8080"},
		{"--transport", "http", "--allowed-origins", "localhost:*"},
	} {
		var out strings.Builder
		code := run(append([]string{"--gateway", "http://127.0.0.1:1"}, args...), &out, &out)
		if want := `"` + args[len(args)-1] + `"`; code != 2 || !strings.Contains(out.String(), want) {
			t.Errorf("%q: exit %d, want 2 and %s quoted; output:\n%s", args, code, want, out.String())
		}
	}
}

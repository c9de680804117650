package main

import (
	"strings"
	"testing"
)

// TestReview31Small2FlagValueNotShown: --origin, --allowed-origins and
// --addr refused a value holding user information or a query, and quoted
// it whole in the usage error: the gateway's URL with its user:password@
// (or a ?token=) put in the wrong flag reached the terminal and the logs
// that keep it.
func TestReview31Small2FlagValueNotShown(t *testing.T) {
	for _, args := range [][]string{
		{"--origin", "http://shop:s3cretpw@127.0.0.1:9"},
		{"--origin", "http://127.0.0.1:9/?token=s3cretpw"},
		{"--transport", "http", "--allowed-origins", "http://shop:s3cretpw@127.0.0.1:9"},
		{"--transport", "http", "--allowed-origins", "http://127.0.0.1:9?key=s3cretpw"},
		{"--transport", "http", "--addr", "shop:s3cretpw@127.0.0.1:0"},
	} {
		var out strings.Builder
		code := run(append([]string{"--gateway", "http://127.0.0.1:1"}, args...), &out, &out)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2; output:\n%s", args, code, out.String())
		}
		if strings.Contains(out.String(), "s3cretpw") {
			t.Errorf("%q: the secret is shown:\n%s", args, out.String())
		}
	}
	// A plain mistake is still shown, so that it can be corrected.
	var out strings.Builder
	if code := run([]string{"--gateway", "http://127.0.0.1:1", "--origin", "http://127.0.0.1:9/"}, &out, &out); code != 2 || !strings.Contains(out.String(), `"http://127.0.0.1:9/"`) {
		t.Errorf("--origin with a path: exit %d, want 2 and the value quoted; output:\n%s", code, out.String())
	}
}

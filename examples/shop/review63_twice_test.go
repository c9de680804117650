package main

import (
	"strings"
	"testing"
)

// TestReview63FlagTwice: a flag given twice kept its last value (the flag
// package's way): a second --rate in a script replaced the first without a
// word. It is a usage error naming the flag, for the server and for
// fake-gateway.
func TestReview63FlagTwice(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// --transport bogus: without the check, a usage error of another
		// kind, not a server on the test's own stdin.
		{[]string{"--gateway", "http://127.0.0.1:1", "--transport", "bogus", "--rate", "5", "--rate=500"}, "--rate is given twice"},
		{[]string{"fake-gateway", "--port", "0", "--port", "0"}, "--port is given twice"},
	} {
		var out, stderr strings.Builder
		if code := run(tc.args, &out, &stderr); code != 2 {
			t.Errorf("%q: exit status %d, want 2 (stderr %q)", tc.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: stderr %q: want %q", tc.args, stderr.String(), tc.want)
		}
	}
}

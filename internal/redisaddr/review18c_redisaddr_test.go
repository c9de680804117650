package redisaddr

import (
	"strings"
	"testing"
)

// TestReview18cCheckSaysWhy: a --redis value refused for its host (not
// printable ASCII, white space) or its port (a sign, out of range) says
// which, as well as what a value looks like. Before, each got the one
// text "want host:port, e.g. 127.0.0.1:6379 (not a URL, no user info)",
// which "bücher.example:6379" or "127.0.0.1:+6379", host:port without
// user info and no URL, seem to satisfy.
func TestReview18cCheckSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want []string
	}{
		{"bücher.example:6379", []string{"host", "ASCII", "xn--"}},
		{"127.0.0.1\u00a0:6379", []string{"host", "ASCII"}},
		{"127.0.0.1\n:6379", []string{"host", "white space"}},
		{"redis 1:6379", []string{"host", "white space"}},
		{"127.0.0.1:+6379", []string{"port", "1 to 65535"}},
		{"127.0.0.1:0", []string{"port", "1 to 65535"}},
		{"127.0.0.1:65536", []string{"port", "1 to 65535"}},
		{"127.0.0.1:redis", []string{"port", "1 to 65535"}},
		{"u:pw@127.0.0.1:6379", []string{"user info", "redis://"}},
	} {
		err := (Flag{Value: tc.v}).Check()
		if err == nil {
			t.Errorf("Check(%q): nil, want an error", tc.v)
			continue
		}
		msg := err.Error()
		for _, w := range append(tc.want, "--redis ", "host:port") {
			if !strings.Contains(msg, w) {
				t.Errorf("Check(%q): %q, want it to say %q", tc.v, msg, w)
			}
		}
		if strings.Contains(msg, "pw") {
			t.Errorf("Check(%q): %q shows the password", tc.v, msg)
		}
	}
}

// TestReview18cCheckPathIsURL: a path or query after the port is the
// mark of a URL, not a bad port number: the error does not blame the port.
func TestReview18cCheckPathIsURL(t *testing.T) {
	for _, v := range []string{"127.0.0.1:6379/2", "127.0.0.1:6379?db=2", "127.0.0.1:6379#x"} {
		err := (Flag{Value: v}).Check()
		if err == nil || strings.Contains(err.Error(), "the port is not") || !strings.Contains(err.Error(), "redis://") {
			t.Errorf("Check(%q): %v, want the URL error, not the port's", v, err)
		}
	}
}

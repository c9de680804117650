package main

import (
	"strings"
	"testing"
)

// TestReview30StrayArgumentNotShown: a stray argument (a Redis URL whose
// --redis was forgotten, or one after a word that ends the flags) was
// echoed whole in "unexpected arguments", the password in it too, onto
// standard error and so into the logs. Such a value is now named without
// being shown, as the --redis errors and ticket's stray arguments do;
// other stray arguments are still quoted.
func TestReview30StrayArgumentNotShown(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"server_forgotten_flag", []string{"--gateway", "http://127.0.0.1:1", "--transport", "http", "redis://app:s3cret@127.0.0.1:6379"}},
		{"server_after_word", []string{"--gateway", "http://127.0.0.1:1", "serve", "--redis", "rediss://:s3cret@127.0.0.1:6379/1"}},
		{"server_query", []string{"--gateway", "http://127.0.0.1:1", "127.0.0.1:6379?password=s3cret"}},
		{"fake_gateway", []string{"fake-gateway", "redis://app:s3cret@127.0.0.1:6379"}},
		{"demo", []string{"demo", "redis://app:s3cret@127.0.0.1:6379"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if code := run(tc.args, &out, &out); code != 2 {
				t.Errorf("%q: exit %d, want 2; output:\n%s", tc.args, code, out.String())
			}
			if !strings.Contains(out.String(), "unexpected arguments") {
				t.Errorf("%q: output does not say \"unexpected arguments\":\n%s", tc.args, out.String())
			}
			if strings.Contains(out.String(), "s3cret") {
				t.Errorf("%q: output shows the password:\n%s", tc.args, out.String())
			}
		})
	}
	var out strings.Builder
	run([]string{"--gateway", "http://127.0.0.1:1", "stray", "--rate"}, &out, &out)
	if !strings.Contains(out.String(), `unexpected arguments ["stray" "--rate"]`) {
		t.Errorf("plain stray arguments are not quoted as before:\n%s", out.String())
	}
}

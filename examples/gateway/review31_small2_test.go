package main

import (
	"strings"
	"testing"
)

// TestReview31Small2FlagValueNotShown: --host and --path refused a value
// holding user information or a query and quoted it whole: the upstream's
// URL, with its user:password@ or a ?token=, put in the wrong flag reached
// the error and the logs that keep it.
func TestReview31Small2FlagValueNotShown(t *testing.T) {
	for _, args := range [][]string{
		{"--host", "http://gw:s3cretpw@127.0.0.1"},
		{"--host", "gw:s3cretpw@127.0.0.1"},
		{"--path", "/mcp?token=s3cretpw"},
		{"--path", "/mcp?sig=s3cretpw0123456789abcdef"},
	} {
		logs, err := runAtStart(t, nil, append([]string{"--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, args...)...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("%q: err %v, want exit status 2; logs:\n%s", args, err, logs)
			continue
		}
		if strings.Contains(err.Error(), "s3cretpw") || strings.Contains(logs, "s3cretpw") {
			t.Errorf("%q: the secret is shown: %v\n%s", args, err, logs)
		}
	}
}

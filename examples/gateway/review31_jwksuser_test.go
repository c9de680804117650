package main

import (
	"strings"
	"testing"
)

// TestReview31JWKSUserInformationRefused: --jwt-jwks took a URL with user
// information (a credential on the command line, which every user of the
// host can read), though --upstream and --jwt-issuer refuse one; it failed
// only at the fetch. It is refused at start now, as a usage error that does
// not show it.
func TestReview31JWKSUserInformationRefused(t *testing.T) {
	logs, err := runAtStart(t, nil, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp",
		"--jwt-jwks", "https://admin:S3cretPass@idp.example/jwks.json", "--jwt-issuer", "https://idp.example", "--jwt-audience", "a")
	if err == nil || !strings.Contains(err.Error(), "--jwt-jwks") || !strings.Contains(err.Error(), "user information") {
		t.Fatalf("err %v, want --jwt-jwks refused for its user information; logs:\n%s", err, logs)
	}
	if got := exitCode(err); got != 2 {
		t.Errorf("exit status %d, want 2", got)
	}
	if strings.Contains(err.Error()+logs, "S3cretPass") {
		t.Errorf("the password is shown: %v\n%s", err, logs)
	}
}

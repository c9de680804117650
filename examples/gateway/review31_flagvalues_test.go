package main

import (
	"strings"
	"testing"
)

// TestReview31RefusedFlagValuesNotShown: a URL with its password put into
// --allowed-origins, --jwt-resource or --rate by mistake was printed whole
// in the usage error (and again in the library's error it wrapped), though
// the README says a value that may hold a secret is not shown.
func TestReview31RefusedFlagValuesNotShown(t *testing.T) {
	for _, args := range [][]string{
		{"--allowed-origins", "https://admin:S3cretPass@app.example"},
		{"--jwt-resource", "https://admin:S3cretPass@mcp.example/mcp", "--jwt-jwks", "x.json", "--jwt-issuer", "https://idp.example", "--jwt-audience", "a"},
		{"--rate", "https://admin:S3cretPass@x/1m"},
		{"--rate", "admin:S3cretPass"},
	} {
		all := append([]string{"--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, args...)
		logs, err := runAtStart(t, nil, all...)
		if err == nil {
			t.Fatalf("run(%q): accepted", args)
		}
		if strings.Contains(err.Error()+logs, "S3cretPass") {
			t.Errorf("run(%q): the error or logs show the password: %v\n%s", args, err, logs)
		}
	}
}

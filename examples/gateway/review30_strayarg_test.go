package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestReview30StrayArgumentNotShown: a value given without its flag (a URL
// with user information, the upstream's or the introspection endpoint's)
// ends flag parsing and is refused as an unexpected argument; the error
// must not print it whole, password included. A plain stray word is still
// quoted as it was.
func TestReview30StrayArgumentNotShown(t *testing.T) {
	for _, tt := range []struct {
		arg, want string
	}{
		{"http://svc:s3cret@127.0.0.1:9000/mcp", "not shown"},
		{"https://idp.example/introspect?password=s3cret", "not shown"},
		{"extra", `"extra"`},
	} {
		fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("upstream", "", "")
		args := []string{tt.arg}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := checkArgs(fs, args)
		if err == nil {
			t.Fatalf("%q: accepted", tt.arg)
		}
		if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v", tt.arg, err)
		}
	}
}

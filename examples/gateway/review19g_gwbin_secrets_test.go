package main

import (
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview19gURLErrorsHideSecrets: the error for an --upstream or a
// --jwt-issuer the gateway refuses never shows what may be a user
// information or a query, whatever the shape of the string: the scheme
// left out ("usr1:pw1@host", which url.Parse reads as the scheme "usr1"),
// one slash, no slash (an opaque URL), a fragment. It exits 2.
func TestReview19gURLErrorsHideSecrets(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"upstream_without_scheme", []string{"--upstream", "usr1:pw1@127.0.0.1:8081/mcp"}},
		{"upstream_one_slash", []string{"--upstream", "http:/usr1:pw1@127.0.0.1:8081/mcp"}},
		{"upstream_opaque", []string{"--upstream", "http:usr1:pw1@127.0.0.1:8081/mcp"}},
		{"upstream_slash_in_password", []string{"--upstream", "http://usr1:pw1/pw2@127.0.0.1:8081/mcp"}},
		{"upstream_fragment", []string{"--upstream", "ftp://127.0.0.1/mcp#pw1"}},
		{"issuer_without_scheme", []string{"--jwt-issuer", "usr1:pw1@idp.example", "--jwt-audience", "a"}},
		{"issuer_one_slash", []string{"--jwt-issuer", "https:/usr1:pw1@idp.example", "--jwt-audience", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--port", "0", "--audit", filepath.Join(t.TempDir(), "a.jsonl")}, tc.args...)
			logs, err := runAtStart(t, nil, args...)
			if err == nil {
				t.Fatalf("run(%q) = nil error", tc.args)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("run(%q): %v: exit status %d, want 2", tc.args, err, got)
			}
			for _, s := range []string{"usr1", "pw1", "pw2"} {
				if strings.Contains(err.Error()+logs, s) {
					t.Errorf("run(%q): the error or logs show %q: %v\n%s", tc.args, s, err, logs)
				}
			}
		})
	}
}

// TestReview19gCheckArgsFollowsTheFlagPackage: checkArgs reads the
// arguments as the flag package does (-flag and --flag, -flag=value, a
// value that begins with "-" or is a flag's name, the "--" terminator),
// so that it refuses what the flag package would drop or replace, and
// nothing it reads as the operator wrote it.
func TestReview19gCheckArgsFollowsTheFlagPackage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--path", "-x"}, true},
		{[]string{"--path", "--port"}, true},
		{[]string{"--path", "--port", "--port", "1"}, true},
		{[]string{"--upstream", "--", "--port", "1"}, true},
		{[]string{"-port", "1", "--path=/a"}, true},
		{[]string{"--port", "1", "--"}, true},
		{[]string{"-b=true", "-b=false"}, false},
		{[]string{"-b", "--b=true"}, false},
		{[]string{"-port", "1", "--port=1"}, false},
		{[]string{"--path", "-x", "--path", "/y"}, false},
		{[]string{"--port", "1", "--", "--host", "x"}, false},
		{[]string{"--", "x"}, false},
		{[]string{"-b", "true"}, false},
		{[]string{"-b", "--", "x"}, false},
		{[]string{"--path="}, false},
		{[]string{"--upstream", ""}, false},
	} {
		fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("port", 0, "")
		fs.String("path", "/mcp", "")
		fs.String("upstream", "u", "")
		fs.String("host", "h", "")
		fs.Bool("b", false, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("flag package refused %q: %v", tc.args, err)
		}
		if err := checkArgs(fs, tc.args); (err == nil) != tc.ok {
			t.Errorf("checkArgs(%q) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

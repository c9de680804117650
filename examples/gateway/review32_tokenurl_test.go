package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReview32TokenInURLFlagNotShown: a token typed where a URL belongs
// (no scheme, no '@', '?' or '#'), or carried in a URL's path (a
// webhook's), is not shown in the error or the logs of a refused start,
// as user information and a query are not (TestReview19gURLErrorsHideSecrets);
// an ordinary mistake is still shown.
func TestReview32TokenInURLFlagNotShown(t *testing.T) {
	const tok = "sk_live_51HabcdEFGH0123456789"
	for _, tc := range []struct {
		name string
		args []string
		show string // what the error must still show; "" for nothing
	}{
		{"upstream_bare_token", []string{"--upstream", tok}, ""},
		{"upstream_token_in_path", []string{"--upstream", "ftp://127.0.0.1:8081/hooks/" + tok}, ""},
		{"issuer_bare_token", []string{"--jwt-issuer", tok, "--jwt-audience", "a"}, ""},
		{"upstream_plain_mistake", []string{"--upstream", "127.0.0.1:8081/mcp"}, "127.0.0.1"},
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
			if strings.Contains(err.Error()+logs, "0123456789") {
				t.Errorf("run(%q): the error or logs show the token: %v\n%s", tc.args, err, logs)
			}
			if tc.show != "" && !strings.Contains(err.Error(), tc.show) {
				t.Errorf("run(%q): %v; want it to show %q", tc.args, err, tc.show)
			}
		})
	}
}

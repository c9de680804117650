package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview30RedisPassword: --redis took host:port alone, so the servers
// could share their budgets only on a Redis without a password. The
// password now comes from TICKET_MCP_REDIS_PASSWORD, and --redis takes a
// redis:// URL with a user name and a database number too. Without the
// password (or with a wrong one) the start fails (exit 1) naming the
// variable; with it, two servers, one as the default user on host:port and
// one as the ACL user of a redis:// URL, share a REST session's 5 calls.
func TestReview30RedisPassword(t *testing.T) {
	const pw = "ticket-redis-s3cret"
	rd := testsvc.StartRedis(t)
	rd.Protect(t, pw)
	for _, tc := range []struct {
		name, value, password, want string
	}{
		{"no_password", rd.Addr, "", "NOAUTH"},
		{"wrong_password", "redis://app@" + rd.Addr + "/0", "not-it", "WRONGPASS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(redisPasswordEnv, tc.password)
			stderr := &syncBuffer{}
			code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir(), "--redis", tc.value}, io.Discard, stderr)
			out := stderr.String()
			if code != 1 || !strings.Contains(out, tc.want) || !strings.Contains(out, redisPasswordEnv) || !strings.Contains(out, "--redis") {
				t.Errorf("--redis %s, password %q: exit %d, stderr %q; want exit 1 saying %s and naming --redis and %s",
					tc.value, tc.password, code, out, tc.want, redisPasswordEnv)
			}
			if strings.Contains(out, pw) || (tc.password != "" && strings.Contains(out, tc.password)) {
				t.Errorf("stderr shows a password: %q", out)
			}
		})
	}

	t.Setenv(redisPasswordEnv, pw)
	a := startServeHTTP(t, "--audit-dir", t.TempDir(), "--redis", rd.Addr)
	b := startServeHTTP(t, "--audit-dir", t.TempDir(), "--redis", "redis://app@"+rd.Addr)
	var got []int
	for i := range 6 {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		got = append(got, restPost(t, srv.base, "search_docs", "token-alice", "shared", searchBody).status)
	}
	if diff := cmp.Diff([]int{200, 200, 200, 200, 200, 429}, got); diff != "" {
		t.Errorf("one session over two servers on a Redis with a password (-want +got):\n%s", diff)
	}
}

// TestReview30RedisFlagRefused: a password on the command line (in a
// redis:// URL) is a usage error (exit 2) that names
// TICKET_MCP_REDIS_PASSWORD and does not show it; so are a URL that names
// a user without that variable, a URL with options (skip_verify), a
// malformed URL (not shown), and the variable set for a server without
// --redis (for serve-stdio too). tools and demo, which take no --redis,
// do not mind it. The help names the variable.
func TestReview30RedisFlagRefused(t *testing.T) {
	for _, tc := range []struct {
		name, password string
		args, want     []string
		never          string
	}{
		{"password_in_url", "", []string{"--redis", "redis://app:s3cret@127.0.0.1:1"},
			[]string{"--redis", "password", redisPasswordEnv}, "s3cret"},
		{"password_in_rediss_url", "pw", []string{"--redis", "rediss://:s3cret@127.0.0.1:1/0"},
			[]string{"--redis", "password", redisPasswordEnv}, "s3cret"},
		{"user_without_password", "", []string{"--redis", "redis://app@127.0.0.1:1"},
			[]string{"--redis", "user", redisPasswordEnv}, "app@"},
		{"skip_verify", "", []string{"--redis", "rediss://127.0.0.1:1?skip_verify=true"},
			[]string{"--redis", "query"}, "skip_verify=true"},
		{"malformed", "", []string{"--redis", "redis://[127.0.0.1:1/s3cret"},
			[]string{"--redis", "not a valid URL"}, "s3cret"},
		{"password_without_redis", "s3cret", nil, []string{redisPasswordEnv, "--redis"}, "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(redisPasswordEnv, tc.password)
			stderr := &syncBuffer{}
			dir := t.TempDir() + "/audit"
			code := run(t.Context(), append([]string{"serve-http", "--port", "0", "--audit-dir", dir}, tc.args...), io.Discard, stderr)
			out := stderr.String()
			if code != 2 {
				t.Errorf("%q: exit %d, want 2; stderr %q", tc.args, code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q: stderr %q does not say %q", tc.args, out, w)
				}
			}
			if strings.Contains(out, tc.never) {
				t.Errorf("%q: stderr %q shows %q", tc.args, out, tc.never)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%q: the audit directory was created before the usage error", tc.args)
			}
		})
	}

	// serve-stdio, as a process.
	cmd := exec.Command(ticketBinary(t), "serve-stdio", "--audit-dir", t.TempDir())
	cmd.Env = append(os.Environ(), redisPasswordEnv+"=s3cret")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), redisPasswordEnv) || strings.Contains(string(out), "s3cret") {
		t.Errorf("serve-stdio with %s and no --redis: %v, output %q; want exit 2 naming it", redisPasswordEnv, err, out)
	}

	t.Setenv(redisPasswordEnv, "s3cret")
	if code := run(t.Context(), []string{"tools"}, io.Discard, io.Discard); code != 0 {
		t.Errorf("tools with %s set: exit %d, want 0", redisPasswordEnv, code)
	}
	stderr := &syncBuffer{}
	run(t.Context(), []string{"-h"}, io.Discard, stderr)
	for _, w := range []string{redisPasswordEnv, "redis://", "rediss://"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("ticket -h does not mention %s:\n%s", w, stderr)
		}
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview30RedisPassword: the shop could reach only a Redis without a
// password (--redis took host:port alone), so not a production one. The
// password now comes from SHOP_MCP_REDIS_PASSWORD, and --redis takes a
// redis:// URL with a user name and a database number too. Without the
// password the start fails (exit 1) naming the variable; with it, two
// replicas, one as the default user on host:port and one as the ACL user of
// a redis:// URL, share each user's rate on that Redis.
func TestReview30RedisPassword(t *testing.T) {
	const pw = "shop-redis-s3cret"
	rd := testsvc.StartRedis(t)
	rd.Protect(t, pw)
	key := confirmKeyEnv + "=" + strings.Repeat("ab", 32)
	base := []string{"--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "127.0.0.1:0", "--redis"}

	for _, tc := range []struct {
		name, value, password string
		want                  []string
	}{
		{"no_password", rd.Addr, "", []string{"NOAUTH", redisPasswordEnv}},
		{"wrong_password", "redis://app@" + rd.Addr, "not-it", []string{"WRONGPASS", redisPasswordEnv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{key}
			if tc.password != "" {
				env = append(env, redisPasswordEnv+"="+tc.password)
			}
			code, out := runBinaryEnv(t, env, append(base, tc.value)...)
			if code != 1 {
				t.Errorf("--redis %s, password %q: exit %d, want 1; output:\n%s", tc.value, tc.password, code, out)
			}
			for _, w := range append(tc.want, "--redis") {
				if !strings.Contains(out, w) {
					t.Errorf("--redis %s, password %q: output does not say %q:\n%s", tc.value, tc.password, w, out)
				}
			}
			if strings.Contains(out, pw) || (tc.password != "" && strings.Contains(out, tc.password)) {
				t.Errorf("the output shows a password:\n%s", out)
			}
		})
	}

	t.Setenv(redisPasswordEnv, pw)
	t.Setenv(confirmKeyEnv, strings.Repeat("ab", 32))
	gw, gwURL := startGateway(t)
	a := &stack{mcpURL: startBinaryHTTP(t, "--gateway", gwURL, "--rate", "3", "--redis", rd.Addr), gw: gw}
	b := &stack{mcpURL: startBinaryHTTP(t, "--gateway", gwURL, "--rate", "3", "--redis", "redis://app@"+rd.Addr+"/0"), gw: gw}
	adaA, adaB := connect(t, a, sessionCustomer, nil), connect(t, b, sessionCustomer, nil)
	ok(t, adaA, "list_categories", map[string]any{})
	ok(t, adaB, "list_categories", map[string]any{})
	ok(t, adaA, "list_categories", map[string]any{})
	for name, cs := range map[string]*mcp.ClientSession{"a": adaA, "b": adaB} {
		e := toolErr(t, cs, "list_categories", map[string]any{})
		if e["code"] != "RATE_LIMIT_EXCEEDED" {
			t.Errorf("ada's fourth call in a minute, on replica %s: %v, want RATE_LIMIT_EXCEEDED", name, e)
		}
	}
	ok(t, connect(t, b, sessionCustomer2, nil), "list_categories", map[string]any{})
}

// TestReview30RedisFlagRefused: a password on the command line (in a
// redis:// URL) is a usage error (exit 2) that names SHOP_MCP_REDIS_PASSWORD
// and does not show it; so are a URL that names a user without that
// variable, a URL with options (skip_verify), a malformed URL (not shown)
// and the variable without --redis. --help names the variable and the URL
// forms.
func TestReview30RedisFlagRefused(t *testing.T) {
	key := confirmKeyEnv + "=" + strings.Repeat("ab", 32)
	base := []string{"--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "127.0.0.1:0"}
	for _, tc := range []struct {
		name  string
		args  []string
		env   []string
		want  []string
		never string
	}{
		{"password_in_url", []string{"--redis", "redis://app:s3cret@127.0.0.1:1"}, nil,
			[]string{"--redis", "password", redisPasswordEnv}, "s3cret"},
		{"password_in_rediss_url", []string{"--redis", "rediss://:s3cret@127.0.0.1:1/0"}, []string{redisPasswordEnv + "=pw"},
			[]string{"--redis", "password", redisPasswordEnv}, "s3cret"},
		{"user_without_password", []string{"--redis", "redis://app@127.0.0.1:1"}, nil,
			[]string{"--redis", "user", redisPasswordEnv}, "app@"},
		{"skip_verify", []string{"--redis", "rediss://127.0.0.1:1?skip_verify=true"}, nil,
			[]string{"--redis", "query"}, "skip_verify=true"},
		{"malformed", []string{"--redis", "redis://[127.0.0.1:1/s3cret"}, nil,
			[]string{"--redis", "not a valid URL"}, "s3cret"},
		{"other_scheme", []string{"--redis", "http://127.0.0.1:1/s3cret"}, nil,
			[]string{"--redis", "scheme"}, "s3cret"},
		{"password_without_redis", nil, []string{redisPasswordEnv + "=s3cret"},
			[]string{redisPasswordEnv, "--redis"}, "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{key}, tc.env...)
			if tc.args == nil {
				env = tc.env // the confirmation key alone is refused too
			}
			code, out := runBinaryEnv(t, env, append(base, tc.args...)...)
			if code != 2 {
				t.Errorf("%q: exit %d, want 2; output:\n%s", tc.args, code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q: output does not say %q:\n%s", tc.args, w, out)
				}
			}
			if strings.Contains(out, tc.never) {
				t.Errorf("%q: output shows %q:\n%s", tc.args, tc.never, out)
			}
		})
	}
	code, out := runBinary(t, "--help")
	for _, w := range []string{redisPasswordEnv, "redis://", "rediss://"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("shop --help: exit %d, does not mention %s:\n%s", code, w, out)
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// runBinary runs the shop binary with args and an environment without the
// shop's variables, for at most 5 s (a run that starts serving is killed),
// and returns its exit status (-1 when killed) and its output
// (runBinaryEnv without more variables).
func runBinary(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runBinaryEnv(t, nil, args...)
}

// TestReview16FlagUsageErrors: flags that can never work were accepted
// or failed late. A --gateway with user info started the shop: the
// password was printed in its start line (gateway=http://svc:s3cret@...)
// and Go's HTTP client sent it to the gateway as an Authorization: Basic
// header with every call, a credential of the server's leaving, which the
// seed forbids (only accept, origin and the caller's rs_auth cookie
// leave). --rate 0, --max-in-flight -1, a --gateway that is not an http
// URL and an --origin that is not an origin exited 1 with the library's
// messages, or served. They are usage errors now: exit 2, naming the flag,
// never printing the value of --gateway.
func TestReview16FlagUsageErrors(t *testing.T) {
	base := []string{"--transport", "http", "--addr", "127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"gateway_user_info", []string{"--gateway", "http://svc:s3cret@127.0.0.1:1"}, "--gateway"},
		{"gateway_user_only", []string{"--gateway", "http://s3cret@127.0.0.1:1"}, "--gateway"},
		{"gateway_query", []string{"--gateway", "http://127.0.0.1:1/?token=s3cret"}, "--gateway"},
		{"gateway_fragment", []string{"--gateway", "http://127.0.0.1:1/#s3cret"}, "--gateway"},
		{"gateway_scheme", []string{"--gateway", "ftp://127.0.0.1:1"}, "--gateway"},
		{"gateway_no_host", []string{"--gateway", "http://"}, "--gateway"},
		{"rate_zero", []string{"--gateway", "http://127.0.0.1:1", "--rate", "0"}, "--rate"},
		{"rate_negative", []string{"--gateway", "http://127.0.0.1:1", "--rate", "-5"}, "--rate"},
		{"in_flight_zero", []string{"--gateway", "http://127.0.0.1:1", "--max-in-flight", "0"}, "--max-in-flight"},
		{"origin_not_an_origin", []string{"--gateway", "http://127.0.0.1:1", "--origin", "javascript:alert(1)"}, "--origin"},
		{"origin_with_path", []string{"--gateway", "http://127.0.0.1:1", "--origin", "https://shop.example/path"}, "--origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runBinary(t, append(tc.args, base...)...)
			if code != 2 || !strings.Contains(out, tc.want) || strings.Contains(out, "s3cret") {
				t.Errorf("shop %q: exit %d, output %q; want exit 2 naming %s, without s3cret", tc.args, code, out, tc.want)
			}
		})
	}
}

// TestReview16GatewayClientSendsNoUserInfo: the gateway client itself
// refuses a base URL with user info, without echoing it, so that no
// caller of newShop can make it send a credential of its own.
func TestReview16GatewayClientSendsNoUserInfo(t *testing.T) {
	for _, base := range []string{"http://svc:s3cret@127.0.0.1:1", "https://s3cret@gw.example", "http://127.0.0.1:1?s3cret"} {
		if _, err := newGatewayClient(base, ""); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("newGatewayClient(%q) = %v, want an error without the secret", base, err)
		}
	}
}

// TestReview16Help: `shop --help` is a request, not a usage error: it
// exited 2, and said nothing of the subcommands or of the environment
// variables the README lists, among them SHOP_MCP_SESSION, without which a
// stdio server refuses every call.
func TestReview16Help(t *testing.T) {
	if code, out := runBinary(t, "fake-gateway", "--help"); code != 0 || !strings.Contains(out, "-port") {
		t.Errorf("shop fake-gateway --help: exit %d, output %q; want exit 0 and its flags", code, out)
	}
	for _, flag := range []string{"--help", "-h"} {
		code, out := runBinary(t, flag)
		if code != 0 {
			t.Errorf("shop %s: exit %d, want 0", flag, code)
		}
		for _, want := range []string{"shop demo", "shop fake-gateway", "SHOP_GATEWAY_URL", "MCP_TRANSPORT", sessionEnv,
			adminWritesEnv, confirmKeyEnv, auditKeyEnv, "--redis"} {
			if !strings.Contains(out, want) {
				t.Errorf("shop %s does not mention %s:\n%s", flag, want, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("shop %s: a flag states its default twice: %q", flag, line)
			}
		}
	}
}

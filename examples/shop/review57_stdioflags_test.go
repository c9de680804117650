package main

import (
	"strings"
	"testing"
)

// TestReview57HTTPFlagsUnderStdio: --addr, --allow-remote, --allowed-hosts
// and --allowed-origins set the HTTP listener; under the stdio transport
// (the default) they were ignored silently, so "shop --gateway URL --addr
// 0.0.0.0:4107" without --transport http quietly served stdio. A usage
// error now names them and the missing --transport.
func TestReview57HTTPFlagsUnderStdio(t *testing.T) {
	for _, extra := range [][]string{
		{"--addr", "127.0.0.1:4107"},
		{"--allow-remote"},
		{"--allowed-hosts", "shop.example"},
		{"--allowed-origins", "https://console.example"},
	} {
		args := append([]string{"--gateway", "http://127.0.0.1:4110"}, extra...)
		code, out := runBinary(t, args...)
		if code != 2 || !strings.Contains(out, extra[0]) || !strings.Contains(out, "--transport http") {
			t.Errorf("%v under stdio: exit %d, want 2 naming %s and --transport http:\n%s", extra, code, extra[0], out)
		}
	}
}

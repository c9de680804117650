package main

import (
	"strings"
	"sync"
	"testing"
)

// TestReview57PortsOutOfRangeRefused: url.Parse takes any run of digits as
// a port, so --gateway http://127.0.0.1:99999 (a digit too many) started
// the shop, and every call then failed as "the gateway is unavailable",
// with nothing in the log saying why (Go's dialer refused the port); an
// --origin or an --allowed-origins entry with such a port (or port 0) was
// taken too, though no browser sends it, so every write failed the
// gateway's CSRF check or every browser page was refused. Each is a usage
// error now, naming the flag, as a --redis port outside 1 to 65535 is.
func TestReview57PortsOutOfRangeRefused(t *testing.T) {
	ok := config{gateway: "http://127.0.0.1:4110", rate: 60, inFlight: 32}
	for _, tc := range []struct {
		name string
		mod  func(*config)
		want string
	}{
		{"gateway_99999", func(c *config) { c.gateway = "http://127.0.0.1:99999" }, "--gateway"},
		{"gateway_0", func(c *config) { c.gateway = "http://127.0.0.1:0/api" }, "--gateway"},
		{"gateway_v6_70000", func(c *config) { c.gateway = "https://[::1]:70000" }, "--gateway"},
		{"origin_99999", func(c *config) { c.origin = "https://shop.example:99999" }, "--origin"},
		{"origin_0", func(c *config) { c.origin = "http://shop.example:0" }, "--origin"},
	} {
		cfg := ok
		tc.mod(&cfg)
		err := checkFlags(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), "65535") {
			t.Errorf("%s: checkFlags: %v, want an error about %s's port", tc.name, err, tc.want)
		}
	}
	for _, o := range []string{"https://console.example:99999", "http://console.example:0"} {
		if err := checkAllowedOrigins([]string{o}); err == nil || !strings.Contains(err.Error(), "65535") {
			t.Errorf("--allowed-origins %s: %v, want an error about its port", o, err)
		}
	}
	// What was accepted still is.
	for _, g := range []string{"http://127.0.0.1:4110", "http://127.0.0.1:65535/api", "https://[::1]:1", "http://gw.internal:/x", "https://gw.internal"} {
		cfg := ok
		cfg.gateway, cfg.origin = g, "https://shop.example:8443"
		if err := checkFlags(cfg); err != nil {
			t.Errorf("--gateway %s: %v", g, err)
		}
	}
	if err := checkAllowedOrigins([]string{"https://console.example:8443", "http://console.example:*"}); err != nil {
		t.Error(err)
	}
	// End to end: the binary exits 2 before serving.
	code, out := runBinary(t, "--gateway", "http://127.0.0.1:99999", "--transport", "http", "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(out, "--gateway") || strings.Contains(out, "serving") {
		t.Errorf("--gateway http://127.0.0.1:99999: exit %d, want 2 naming --gateway:\n%s", code, out)
	}
}

// TestReview57AllowedHostsThatMatchNothingRefused: --allowed-hosts entries
// were never checked, though --allowed-origins entries that can match
// nothing stop the start. An entry written as an origin or URL
// (https://shop.example, shop.example/mcp), a wildcard (*, *.example),
// user information, an IPv6 address without brackets or a port out of
// range can equal no Host header: the shop started, and refused every
// request through the name it was meant to allow with 403 "host not
// allowed". Each is a usage error now (exit 2, naming the flag), before
// anything is opened; the entries that can match still start.
func TestReview57AllowedHostsThatMatchNothingRefused(t *testing.T) {
	bad := []string{"https://shop.example", "http://shop.example:*", "shop.example/mcp", "*", "*.example:*",
		"ops@shop.example", "::1", "::1:*", "shop.example:99999", "shop.example:", "shop.example:+80", "[shop]:*", " "}
	for _, h := range bad {
		if err := checkAllowedHosts([]string{"127.0.0.1:*", h}); err == nil || !strings.HasPrefix(err.Error(), "--allowed-hosts") {
			t.Errorf("--allowed-hosts 127.0.0.1:*,%q: %v, want a usage error", h, err)
		}
	}
	good := append(defaultHosts(), "shop.internal", "Shop.Internal:4107", "shop_1.internal:*", "[::1]", "[::1]:4107",
		"10.0.0.7:80", "shop.example.:*")
	if err := checkAllowedHosts(good); err != nil {
		t.Errorf("--allowed-hosts %s: %v", strings.Join(good, ","), err)
	}
	// End to end, in parallel: a run that starts serving is killed after 5 s.
	var wg sync.WaitGroup
	for _, h := range []string{"https://shop.example", "*"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out := runBinary(t, "--gateway", "http://127.0.0.1:4110", "--transport", "http", "--addr", "127.0.0.1:0", "--allowed-hosts", h)
			if code != 2 || !strings.Contains(out, "--allowed-hosts") || strings.Contains(out, "serving") {
				t.Errorf("--allowed-hosts %s: exit %d, want 2 naming the flag:\n%s", h, code, out)
			}
		}()
	}
	wg.Wait()
}

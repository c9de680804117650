package main

import (
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview18cFlagEdgesAccepted: the usage checks of the eighteenth
// session refuse only values that can never work. The bounds themselves
// (a cap of one cent, a window of exactly limiter.MinWindow or MaxWindow,
// port 0 and 65535) and every loopback spelling of -http (an empty host,
// localhost in any ASCII case, [::1], an IPv4-mapped loopback) are taken;
// the values just beyond are not.
func TestReview18cFlagEdgesAccepted(t *testing.T) {
	base := config{sessionCap: 500, userCap: 500, capWindow: time.Hour}
	for _, tc := range []struct {
		name string
		edit func(*config)
		ok   bool
	}{
		{"caps_one_cent", func(c *config) { c.sessionCap, c.userCap = 0.01, 0.01 }, true},
		{"caps_huge", func(c *config) { c.sessionCap, c.userCap = 1e308, 1e308 }, true},
		{"cap_just_below_a_cent", func(c *config) { c.userCap = 0.0099999 }, false},
		{"window_min", func(c *config) { c.capWindow = limiter.MinWindow }, true},
		{"window_max", func(c *config) { c.capWindow = limiter.MaxWindow }, true},
		{"window_below_min", func(c *config) { c.capWindow = limiter.MinWindow - 1 }, false},
		{"window_above_max", func(c *config) { c.capWindow = limiter.MaxWindow + 1 }, false},
		{"http_empty_host", func(c *config) { c.httpAddr = ":0" }, true},
		{"http_ipv6_loopback", func(c *config) { c.httpAddr = "[::1]:8080" }, true},
		{"http_localhost", func(c *config) { c.httpAddr = "localhost:8080" }, true},
		{"http_localhost_upper", func(c *config) { c.httpAddr = "LOCALHOST:0" }, true},
		{"http_mapped_loopback", func(c *config) { c.httpAddr = "[::ffff:127.0.0.1]:0" }, true},
		{"http_port_max", func(c *config) { c.httpAddr = "127.0.0.1:65535" }, true},
		{"http_port_leading_zero", func(c *config) { c.httpAddr = "127.0.0.1:08081" }, true},
		{"http_remote_allowed", func(c *config) { c.httpAddr, c.allowRemote = "0.0.0.0:0", true }, true},
		{"http_port_above_max", func(c *config) { c.httpAddr = "127.0.0.1:65536" }, false},
		{"http_port_signed", func(c *config) { c.httpAddr = "127.0.0.1:+8080" }, false},
		{"http_long_s_localhost", func(c *config) { c.httpAddr = "localho\u017ft:0" }, false},
		{"http_remote", func(c *config) { c.httpAddr = "0.0.0.0:0" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			if err := checkFlags(c); (err == nil) != tc.ok {
				t.Errorf("checkFlags(%+v) = %v, want ok %v", c, err, tc.ok)
			}
		})
	}
}

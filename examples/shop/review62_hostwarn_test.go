package main

import (
	"flag"
	"io"
	"net"
	"strings"
	"testing"
)

// TestReview62UnlistedHostWarning: a shop on a non-loopback address
// (--allow-remote) without --allowed-hosts refused every request sent to
// the address it logs (403, host not allowed: the default list holds the
// loopback names alone) and said nothing at start (62e helper's lead). It
// warns; not on a loopback address, nor with --allowed-hosts given.
func TestReview62UnlistedHostWarning(t *testing.T) {
	for _, tc := range []struct {
		addr string
		args []string
		warn bool
	}{
		{"192.0.2.1:4107", nil, true},
		{"0.0.0.0:4107", nil, true},
		{"[2001:db8::1]:4107", nil, true},
		{"192.0.2.1:4107", []string{"--allowed-hosts", "shop.example:*"}, false},
		{"127.0.0.1:4107", nil, false},
		{"[::1]:4107", nil, false},
	} {
		fs := flag.NewFlagSet("shop", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("allowed-hosts", "", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		w := unlistedHostWarning(fs, a)
		if (w != "") != tc.warn || tc.warn && !strings.Contains(w, "--allowed-hosts") {
			t.Errorf("%s %v: warning %q, want one: %v", tc.addr, tc.args, w, tc.warn)
		}
	}
}

package redisaddr

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestReview18CheckEdges: Check refuses every white space and control
// character (not only space and tab), a port with a sign (strconv.Atoi
// takes "+6379", net.Dial does not), and redis URLs with a password; it
// takes IPv6 and zoned hosts.
func TestReview18CheckEdges(t *testing.T) {
	for _, v := range []string{"[::1]:6379", "[fe80::1%eth0]:6379", "redis-0.redis.svc.cluster.local:6379", "127.0.0.1:06379"} {
		if err := (Flag{Value: v}).Check(); err != nil {
			t.Errorf("Check(%q): %v, want nil", v, err)
		}
	}
	for _, v := range []string{
		"127.0.0.1\n:6379", "127.0.0.1\r:6379", "127.0.0.1\v:6379", "127.0.0.1\f:6379",
		"\x00127.0.0.1:6379", "127.0.0.1\x1b[31m:6379", "127.0.0.1\u0085:6379", "127.0.0.1\u00a0:6379",
		"127.0.0.1\u2028:6379", "127.0.0.1\u202e:6379", "127.0.0.1\x7f:6379", "\xff:6379",
		"127.0.0.1:+6379", "127.0.0.1:-1", "127.0.0.1: 6379", "127.0.0.1:6379 ", "127.0.0.1:0x18eb",
		"rediss://:pw@127.0.0.1:6379", "unix:/tmp/redis.sock", "/tmp/redis.sock", "redis://u:pw@[::1]:6379/2",
		"[::1]:6379/2",
	} {
		if err := (Flag{Value: v}).Check(); err == nil {
			t.Errorf("Check(%q): nil, want an error", v)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("Check(%q): %q shows the password", v, err)
		}
	}
}

// TestReview18DialErrorQuotes: Dial's error shows the address as Shown
// does, quoted, as Check's do.
func TestReview18DialErrorQuotes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = (Flag{Value: addr}).Dial(500 * time.Millisecond)
	if err == nil || !strings.HasPrefix(err.Error(), "--redis "+Shown(addr)+": ") {
		t.Errorf("Dial(%s) = %v, want it to start with --redis %s", addr, err, Shown(addr))
	}
}

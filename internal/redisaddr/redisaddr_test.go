package redisaddr

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	for _, v := range []string{"127.0.0.1:6379", "localhost:1", "[::1]:65535", "redis.internal:6380"} {
		if err := (Flag{Value: v}).Check(); err != nil {
			t.Errorf("Check(%q): %v", v, err)
		}
	}
	for _, v := range []string{
		"", "127.0.0.1", ":6379", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:redis",
		"redis://:pw@127.0.0.1:6379", "pw@127.0.0.1:6379", "u:pw@127.0.0.1:6379", "127.0.0.1:6379/0",
		"127.0.0.1:6379?password=pw", "a b:1",
	} {
		err := (Flag{Value: v}).Check()
		switch {
		case err == nil:
			t.Errorf("Check(%q): nil, want an error", v)
		case !strings.HasPrefix(err.Error(), "--redis"):
			t.Errorf("Check(%q): %q, want it to name the flag", v, err)
		case strings.Contains(err.Error(), "pw"):
			t.Errorf("Check(%q): %q shows the password", v, err)
		}
	}
}

func TestShown(t *testing.T) {
	for v, want := range map[string]string{
		"127.0.0.1:1":       `"127.0.0.1:1"`,
		"u:pw@h:1":          "(a value with user info or a password, not shown)",
		"h:1?PASSWORD=x":    "(a value with user info or a password, not shown)",
		"postgres://u@h/db": "(a value with user info or a password, not shown)",
		"with \"quotes\"\n": `"with \"quotes\"\n"`,
	} {
		if got := Shown(v); got != want {
			t.Errorf("Shown(%q) = %s, want %s", v, got, want)
		}
	}
}

// TestDialRefusesAndTimesOut: a bad value is refused before any dial, and
// an address where nothing answers fails within the timeout.
func TestDialRefusesAndTimesOut(t *testing.T) {
	if _, err := (Flag{Value: "pw@127.0.0.1:1"}).Dial(time.Second); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("Dial with user info: %v, want a refusal that does not show it", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	if _, err := (Flag{Value: addr}).Dial(500 * time.Millisecond); err == nil || !strings.HasPrefix(err.Error(), "--redis") {
		t.Errorf("Dial(%s) with nothing listening: %v, want an error naming --redis", addr, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial took %v, want about its 500 ms timeout", d)
	}
}

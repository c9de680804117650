package redisaddr

import (
	"crypto/tls"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// fuzzSecret is the secret the seeds put in a URL's password part;
// fuzzPassword is the Flag's Password.
const (
	fuzzSecret   = "s3cretMARK"
	fuzzPassword = "PWfieldMARK"
	fuzzEnv      = "FUZZ_REDIS_PASSWORD"
)

// FuzzReview30Flag: Options never panics; a value it takes carries no
// password and no query, and the options go-redis dials (Addr, Username,
// DB, TLS and its ServerName) are what url.Parse, or net.SplitHostPort for
// host:port, reads in the value, with a host that is a name or an IP
// address (a colon only in an IPv6 address); its errors name the flag and
// show neither the Password nor, when the value has user info or a
// password, the value, and a URL never.
func FuzzReview30Flag(f *testing.F) {
	for _, v := range []string{
		"127.0.0.1:6379", "localhost:1", "[::1]:6379", "[fe80::1%eth0]:6379", "[fe80::1%25eth0]:6379",
		"redis.internal:6380", "127.0.0.1:06379", "127.0.0.1:+6379", "127.0.0.1:0", "127.0.0.1:65536",
		"a:1:1", "[a:1]:2", "[1.2.3.4]:1", "::1:6379",
		"redis://127.0.0.1:6379", "rediss://redis.example:6380/2", "redis://[::1]:6379/0", "redis://[::1%25lo]:1",
		"redis://app@127.0.0.1:6379/1", "redis://app:" + fuzzSecret + "@127.0.0.1:6379",
		"redis://:" + fuzzSecret + "@h", "rediss://app:@h:1", "redis://@h:1", "redis://a@b@h:1",
		"redis://a%3Ab@h:1", "redis://%00@h:1", "redis://a%40b:" + fuzzSecret + "%40@h:1",
		"app:" + fuzzSecret + "@127.0.0.1:6379", fuzzSecret + "@127.0.0.1:6379",
		"redis://h:1?password=" + fuzzSecret, "rediss://h:1?skip_verify=true", "redis://h:1?", "redis://h:1/0?db=3",
		"redis://h:1#" + fuzzSecret, "redis://h:1#", "redis://h:1/%30", "redis://h:1/0%2F1", "redis://h:1//1",
		"redis://h:1/99999999999", "redis://h:1/-1", "redis://h:", "redis://:6379", "redis:///0", "redis://",
		"REDISS://h:1", "Redis://h", "redis:/h:1", "redis:h:1", "unix:///tmp/r.sock", "http://u:" + fuzzSecret + "@h:1",
		"redis://a:1:2", "redis://::1", "redis://fe80::1", "redis://h;x:1", "redis://a]:1", "redis://[abc]:1",
		"redis://1.2.3.4%25x:1", "redis://bücher.example", "redis://xn--bcher-kva.example", "bücher.example:6379",
		"redis://h\x00:1", "redis://h:1/\x1b[31m", "127.0.0.1\n:6379", "127.0.0.1\u202e:6379", "\xff:6379",
		"redis://h:6379\\@evil:1", " redis://h:1", "redis://h:1 ", "h:1?password=" + fuzzSecret,
	} {
		f.Add(v, true)
		f.Add(v, false)
	}
	f.Fuzz(func(t *testing.T, v string, withPassword bool) {
		fl := Flag{Value: v, PasswordEnv: fuzzEnv}
		if withPassword {
			fl.Password = fuzzPassword
		}
		o, err := fl.Options()
		if err != nil {
			checkFuzzError(t, v, err)
			return
		}
		if o.Password != fl.Password || o.MaxRetries != -1 || !o.ContextTimeoutEnabled {
			t.Fatalf("Options(%q): Password %q, MaxRetries %d, ContextTimeoutEnabled %v", v, o.Password, o.MaxRetries, o.ContextTimeoutEnabled)
		}
		host, port, err := net.SplitHostPort(o.Addr)
		if err != nil {
			t.Fatalf("Options(%q): Addr %q: %v", v, o.Addr, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			t.Fatalf("Options(%q): Addr %q, port %q", v, o.Addr, port)
		}
		if host == "" || !plainHost(host) {
			t.Fatalf("Options(%q): Addr %q, host %q", v, o.Addr, host)
		}
		if strings.Contains(host, ":") {
			if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
				t.Fatalf("Options(%q): Addr %q: a host with a colon that is not an IPv6 address", v, o.Addr)
			}
		}
		if !strings.Contains(v, "://") {
			if o.Addr != v || o.Username != "" || o.DB != 0 || o.TLSConfig != nil || strings.ContainsAny(v, "@/?#") {
				t.Fatalf("Options(%q): %+v", v, o)
			}
			return
		}
		u, err := url.Parse(v)
		if err != nil {
			t.Fatalf("Options(%q) took a value url.Parse refuses: %v", v, err)
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				t.Fatalf("Options(%q) took a URL with a password", v)
			}
			if u.User.Username() == "" || fl.Password == "" {
				t.Fatalf("Options(%q) took a URL with a user but no user name or no Password", v)
			}
		}
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(v, "#") || u.Opaque != "" {
			t.Fatalf("Options(%q) took a URL with a query, a fragment or no //", v)
		}
		wantPort := u.Port()
		if wantPort == "" {
			wantPort = "6379"
		}
		if host != u.Hostname() || port != wantPort {
			t.Fatalf("Options(%q): Addr %q, url.Parse says host %q port %q", v, o.Addr, u.Hostname(), u.Port())
		}
		if o.Username != u.User.Username() {
			t.Fatalf("Options(%q): Username %q, url.Parse says %q", v, o.Username, u.User.Username())
		}
		wantDB := 0
		if p := strings.TrimPrefix(u.Path, "/"); p != "" {
			if wantDB, err = strconv.Atoi(p); err != nil || wantDB < 0 || strings.TrimLeft(p, "0123456789") != "" {
				t.Fatalf("Options(%q): took the path %q", v, u.Path)
			}
		}
		if o.DB != wantDB {
			t.Fatalf("Options(%q): DB %d, the path says %d", v, o.DB, wantDB)
		}
		switch tc := o.TLSConfig; {
		case (tc != nil) != (u.Scheme == "rediss"):
			t.Fatalf("Options(%q): TLS %v for the scheme %q", v, tc != nil, u.Scheme)
		case tc != nil && (tc.ServerName != u.Hostname() || tc.InsecureSkipVerify || tc.MinVersion < tls.VersionTLS12 || tc.RootCAs != nil):
			t.Fatalf("Options(%q): TLS %+v", v, tc)
		}
	})
}

// checkFuzzError checks an error of Options(v).
func checkFuzzError(t *testing.T, v string, err error) {
	t.Helper()
	msg := err.Error()
	// shows: msg has v quoted (as Shown quotes), or verbatim if it is not
	// short enough to be a word of the fixed text ("@", "redis://").
	shows := strings.Contains(msg, strconv.Quote(v)) || len(v) >= 16 && strings.Contains(msg, v)
	switch {
	case !strings.HasPrefix(msg, "--redis"):
		t.Fatalf("Options(%q): %q does not name the flag", v, msg)
	case strings.Contains(msg, fuzzPassword):
		t.Fatalf("Options(%q): %q shows the Password", v, msg)
	case strings.Contains(v, "@") && (shows || strings.Contains(msg, fuzzSecret)):
		t.Fatalf("Options(%q): %q shows a value with user info", v, msg)
	case strings.Contains(strings.ToLower(v), "password") && shows:
		t.Fatalf("Options(%q): %q shows a value with a password", v, msg)
	case strings.Contains(v, "://") && strings.Contains(msg, strconv.Quote(v)):
		t.Fatalf("Options(%q): %q shows a URL", v, msg)
	}
}

// TestReview30FuzzColonHost: a host with a colon is taken only as an IPv6
// address in brackets. Check took redis://::1 (url.Parse reads the host ":"
// and the port 1, dialled as [:]:1), redis://fe80::1 ([fe80:]:1),
// redis://a:1:2 and [a:1]:2 (the name "a:1"), and redis://a]:1 (an Addr
// net.Dial refuses). Found by FuzzReview30Flag's seeds.
func TestReview30FuzzColonHost(t *testing.T) {
	for _, v := range []string{"redis://::1", "redis://fe80::1", "redis://::1:6379", "redis://a:1:2", "rediss://h:6379:6379", "[a:1]:2", "redis://a]:1"} {
		err := (Flag{Value: v, PasswordEnv: fuzzEnv}).Check()
		if err == nil {
			o, _ := (Flag{Value: v}).Options()
			t.Errorf("Check(%q): nil (Addr %q), want an error", v, o.Addr)
		} else if !strings.Contains(err.Error(), "IPv6") {
			t.Errorf("Check(%q): %q, want it to say IPv6", v, err)
		}
	}
	for _, v := range []string{"redis://[::1]:6379", "redis://[fe80::1%25eth0]", "rediss://[::ffff:127.0.0.1]:1", "[fe80::1%eth0]:6379", "[::1]:1"} {
		if err := (Flag{Value: v}).Check(); err != nil {
			t.Errorf("Check(%q): %v, want nil", v, err)
		}
	}
}

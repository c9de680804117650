// Package redisaddr checks and dials the --redis flag of the example
// servers, which keep their limiter state (and, for the shop, confirmation
// nonces) on a Redis shared by replicas: host:port, or a redis:// or
// rediss:// URL, with the password from an environment variable.
package redisaddr

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Flag is a --redis value and the password that goes with it.
type Flag struct {
	// Value is host:port, or redis://[user@]host[:port][/db] (rediss:// for
	// TLS) without a password.
	Value string
	// Password is the Redis password (of the URL's user, or of the default
	// user), read from the environment variable PasswordEnv; "" means none.
	Password string
	// PasswordEnv names the environment variable of the password; errors
	// name it.
	PasswordEnv string

	// roots verifies a rediss:// server's certificate; nil means the
	// system's roots. Only tests set it.
	roots *x509.CertPool
}

// Check checks the value of f: host:port, the port 1 to 65535 in decimal
// digits, the host printable ASCII (an internationalized name in its xn--
// form) without user info, a path, a query or white space, and with a colon
// only as an IPv6 address in brackets ([::1]:6379); or a redis://
// or rediss:// URL with such a host, an optional port (6379), an optional
// user name and an optional database number as its path, and no password,
// query or fragment. A URL that names a user needs f.Password: without
// one, go-redis would connect as the default user. Its errors name the
// flag, say what is wrong, and show a host:port value only as [Shown] does
// and a URL never: a malformed one may hold a password anywhere. A
// password in the value is refused with an error that names
// f.PasswordEnv: the command line is readable by every user of the host.
func (f Flag) Check() error {
	_, err := f.Options()
	return err
}

// Options checks f as [Flag.Check] does and returns the client's options:
// f.Password, no retries and every command bounded by its context, and for
// rediss:// TLS 1.2 or later with the server's certificate verified for the
// URL's host.
func (f Flag) Options() (*redis.Options, error) {
	v := f.Value
	if v == "" {
		return nil, errors.New("--redis: empty address (want host:port, e.g. 127.0.0.1:6379, or a redis:// or rediss:// URL)")
	}
	var opts *redis.Options
	if strings.Contains(v, "://") {
		o, err := f.urlOptions(v)
		if err != nil {
			return nil, err
		}
		opts = o
	} else {
		if err := f.checkHostPort(v); err != nil {
			return nil, err
		}
		opts = &redis.Options{Addr: v}
	}
	opts.Password = f.Password
	opts.ContextTimeoutEnabled, opts.MaxRetries = true, -1
	if opts.TLSConfig != nil {
		opts.TLSConfig.RootCAs = f.roots
		opts.TLSConfig.MinVersion = max(opts.TLSConfig.MinVersion, tls.VersionTLS12)
		opts.TLSConfig.InsecureSkipVerify = false
	}
	return opts, nil
}

// checkHostPort checks a value that is not a URL: host:port.
func (f Flag) checkHostPort(v string) error {
	why := ""
	host, port, err := net.SplitHostPort(v)
	switch {
	case strings.Contains(v, "@"):
		return fmt.Errorf("--redis %s: user info is taken only in a redis:// URL, redis://user@host:port, and a password only from %s (the command line is readable by every user of the host)", Shown(v), f.PasswordEnv)
	case err != nil || host == "" || strings.ContainsAny(v, "/?#"):
		// Not host:port, or a URL's path, query or fragment.
	case !plainHost(host):
		why = "the host has white space, a control character or a character outside ASCII (an internationalized name goes in its xn-- form); "
	case !addrHost(host):
		why = "the host has a colon but is not an IPv6 address; "
	case !portNumber(port):
		why = "the port is not a number from 1 to 65535; "
	default:
		return nil
	}
	return fmt.Errorf("--redis %s: %swant host:port, e.g. 127.0.0.1:6379, or %s", Shown(v), why, urlUsage)
}

// urlUsage is the form of a --redis URL.
const urlUsage = "redis://[user@]host[:port][/db] or rediss://... for TLS"

// urlOptions checks the URL v and returns go-redis's options of it. Its
// errors never show v.
func (f Flag) urlOptions(v string) (*redis.Options, error) {
	bad := func(why string) error {
		return fmt.Errorf("--redis: %s (want %s; the password in %s)", why, urlUsage, f.PasswordEnv)
	}
	u, err := url.Parse(v)
	if err != nil {
		return nil, bad("not a valid URL")
	}
	switch {
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return nil, bad("a URL's scheme must be redis or rediss")
	case u.Opaque != "":
		return nil, bad("not a valid URL: no // before the host")
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return nil, fmt.Errorf("--redis: the URL has a password: put it in %s, not on the command line, which every user of the host can read (keep the user name in the URL: redis://user@host:port)", f.PasswordEnv)
		}
		if u.User.Username() == "" {
			return nil, bad("the URL has an @ but no user name")
		}
		if f.Password == "" {
			return nil, fmt.Errorf("--redis: the URL names a user but %s is empty: the client would connect as the default user, without a password", f.PasswordEnv)
		}
	}
	switch host, port := u.Hostname(), u.Port(); {
	case host == "":
		return nil, bad("the URL names no host")
	case !plainHost(host):
		return nil, bad("the URL's host has white space, a control character or a character outside ASCII (an internationalized name goes in its xn-- form)")
	case !addrHost(host) || strings.Contains(host, ":") && !strings.HasPrefix(u.Host, "["):
		// url.Parse takes redis://::1 as the host ":" and the port 1, and
		// redis://a]:1 as the host "a]".
		return nil, bad("the URL's host has a colon or a bracket but is not an IPv6 address in brackets (redis://[::1]:6379)")
	case port != "" && !portNumber(port), strings.HasSuffix(u.Host, ":"):
		return nil, bad("the URL's port is not a number from 1 to 65535")
	}
	if u.Path != "" && u.Path != "/" && !dbNumber(strings.TrimPrefix(u.Path, "/")) {
		return nil, bad("the URL's path must be a database number, /0 to /2147483647")
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, bad("the URL has a query (?...): the client's options are the server's own, and TLS is always verified")
	}
	if u.Fragment != "" || strings.Contains(v, "#") {
		return nil, bad("the URL has a fragment (#...)")
	}
	o, err := redis.ParseURL(v)
	if err != nil {
		// Not expected after the checks above; go-redis's text may quote
		// parts of the URL.
		return nil, bad("not a URL go-redis takes")
	}
	return o, nil
}

// plainHost reports whether host is printable ASCII without white space.
func plainHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// addrHost reports whether host, of net.SplitHostPort or url.URL.Hostname,
// has a colon only as an IPv6 address and no brackets: a host such as
// "a:1" (of [a:1]:2) is dialled as a name no resolver has.
func addrHost(host string) bool {
	if strings.ContainsAny(host, "[]") {
		return false
	}
	if !strings.Contains(host, ":") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is6()
}

// portNumber reports whether s is a port from 1 to 65535 in decimal
// digits only (strconv.Atoi also takes a sign, which net.Dial does not).
func portNumber(s string) bool {
	n, ok := digits(s)
	return ok && n >= 1 && n <= 65535
}

// dbNumber reports whether s is a database number, 0 to 2147483647 in
// decimal digits only.
func dbNumber(s string) bool {
	n, ok := digits(s)
	return ok && n <= 1<<31-1
}

// digits returns the number s writes in decimal digits only.
func digits(s string) (int, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, s != "" && err == nil
}

// Shown quotes a command-line value for an error, or names it without
// showing it when it may hold a password: when it has an "@" (the user
// info of a URL, user:password@host) or the word "password" (a query's
// ?password=).
func Shown(v string) string {
	if strings.Contains(v, "@") || strings.Contains(strings.ToLower(v), "password") {
		return "(a value with user info or a password, not shown)"
	}
	return strconv.Quote(v)
}

// Dial checks f and returns a client of its Redis, which must answer a
// PING within timeout. The client bounds every command by its context and
// does not retry: a limiter decision retried after a lost reply could be
// charged twice, and a nonce retried so would find itself used (redislimit
// and redisnonce bound each call themselves). An error of a Redis that
// wants a password, or refuses the one given, names f.PasswordEnv.
func (f Flag) Dial(timeout time.Duration) (*redis.Client, error) {
	opts, err := f.Options()
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("--redis %s: %w%s", Shown(f.Value), err, f.authHint(err))
	}
	return rdb, nil
}

// authHint returns a hint naming f.PasswordEnv for err, Redis's refusal of
// a connection without a password or with a wrong one; "" for other
// errors.
func (f Flag) authHint(err error) string {
	var re redis.Error
	if !errors.As(err, &re) {
		return ""
	}
	switch msg := re.Error(); {
	case strings.HasPrefix(msg, "NOAUTH"), strings.HasPrefix(msg, "WRONGPASS"):
	default:
		return ""
	}
	if f.Password == "" {
		return " (the password is read from " + f.PasswordEnv + ", which is empty)"
	}
	return " (the password is read from " + f.PasswordEnv + ")"
}

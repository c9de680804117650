// Package redisaddr checks and dials the --redis HOST:PORT flag of the
// example servers, which keep their limiter state (and, for the shop,
// confirmation nonces) on a Redis shared by replicas.
package redisaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Check checks a --redis value: host:port, the port 1 to 65535 in
// decimal digits, the host printable ASCII (an internationalized name in
// its xn-- form) without user info, a path, a query or white space (not a
// redis:// URL: no Redis password is wired here). Its errors name the flag,
// say what is wrong with the host or the port when the value is host:port
// otherwise, and show the value only as [Shown] does.
func Check(v string) error {
	if v == "" {
		return errors.New("--redis: empty address (want host:port, e.g. 127.0.0.1:6379)")
	}
	why := ""
	host, port, err := net.SplitHostPort(v)
	switch {
	case err != nil || host == "" || strings.ContainsAny(v, "@/?#"):
		// Not host:port, or a URL's user info, path, query or fragment.
	case !plainHost(host):
		why = "the host has white space, a control character or a character outside ASCII (an internationalized name goes in its xn-- form); "
	case !portNumber(port):
		why = "the port is not a number from 1 to 65535; "
	default:
		return nil
	}
	return fmt.Errorf("--redis %s: %swant host:port, e.g. 127.0.0.1:6379 (not a URL, no user info)", Shown(v), why)
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

// portNumber reports whether s is a port from 1 to 65535 in decimal
// digits only (strconv.Atoi also takes a sign, which net.Dial does not).
func portNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	n, err := strconv.Atoi(s)
	return s != "" && err == nil && n >= 1 && n <= 65535
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

// Dial checks addr and returns a client of the Redis there, which must
// answer a PING within timeout. The client bounds every command by its
// context and does not retry: a limiter decision retried after a lost
// reply could be charged twice, and a nonce retried so would find itself
// used (redislimit and redisnonce bound each call themselves).
func Dial(addr string, timeout time.Duration) (*redis.Client, error) {
	if err := Check(addr); err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("--redis %s: %w", Shown(addr), err)
	}
	return rdb, nil
}

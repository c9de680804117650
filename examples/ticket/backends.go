package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mcpguard/mcpguard/internal/redisaddr"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// The backends that several server processes share: the limiter's state on
// Redis (--redis) and the audit_log table on PostgreSQL (--audit-postgres).
// Each is checked twice: its value when the flags are parsed (a usage
// error, exit 2), and its server when the app starts (it must answer, or
// the server does not start: exit 1).

// redisPrefix starts the limiter's Redis keys. Every ticket server on one
// Redis uses it, so that they share their budgets; the hash tag keeps a
// decision's keys in one slot on Redis Cluster.
const redisPrefix = "{mcpguard-ticket}:limiter:"

// startTimeout bounds the first answer of Redis or PostgreSQL at start.
const startTimeout = 5 * time.Second

// redisFlag is the --redis value v with its password, from
// redisPasswordEnv.
func redisFlag(v, password string) redisaddr.Flag {
	return redisaddr.Flag{Value: v, Password: password, PasswordEnv: redisPasswordEnv}
}

// openRedisStore connects to the Redis at addr (host:port or a redis:// or
// rediss:// URL) with password (redisaddr.Flag.Dial: it must answer within
// startTimeout) and returns the limiter store on it and the client's
// Close. A Redis that may evict keys (a maxmemory-policy other than
// noeviction) is refused: under memory pressure it would forget spent
// budgets, and the sessions would get them again.
func openRedisStore(addr, password string) (*redislimit.Store, func() error, error) {
	rdb, err := redisFlag(addr, password).Dial(startTimeout)
	if err != nil {
		return nil, nil, err
	}
	// The check has the start's time; decisions, the store's 250 ms.
	check := redislimit.New(rdb, &redislimit.Options{Prefix: redisPrefix, Timeout: startTimeout})
	if err := check.CheckServer(context.Background()); err != nil {
		rdb.Close()
		return nil, nil, fmt.Errorf("--redis: %w", err)
	}
	return redislimit.New(rdb, &redislimit.Options{Prefix: redisPrefix}), rdb.Close, nil
}

// postgresUsage is the form --audit-postgres takes.
const postgresUsage = "want postgres://user@host:port/database?sslmode=..., the password in PGPASSWORD or ~/.pgpass"

// postgresConfig checks an --audit-postgres value and returns pgx's
// configuration of it (which also reads PGPASSWORD, ~/.pgpass and the
// other PG* variables). Its errors never show the URL: it may hold a
// password.
func postgresConfig(v string) (*pgx.ConnConfig, error) {
	if v == "" {
		return nil, errors.New("--audit-postgres: empty URL (" + postgresUsage + ")")
	}
	// The scheme in lower case, as pgx wants it: net/url lowers it, and pgx
	// reads POSTGRES://... as a keyword/value string that sets nothing.
	u, err := url.Parse(v)
	if err != nil || (!strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://")) {
		return nil, errors.New("--audit-postgres: not a postgres:// URL (" + postgresUsage + ")")
	}
	if u.Hostname() == "" && u.Query().Get("host") == "" {
		return nil, errors.New("--audit-postgres: the URL names no host (" + postgresUsage + ")")
	}
	if urlHasPassword(v) {
		// As --redis: not from the command line, which every user of the
		// host can read (ps, /proc).
		return nil, errors.New("--audit-postgres: a password in the URL is refused: the command line is readable by every user of the host; put it in PGPASSWORD or ~/.pgpass (a client key's passphrase, sslpassword, in PGSSLPASSWORD)")
	}
	cfg, err := pgx.ParseConfig(v)
	if err != nil {
		return nil, fmt.Errorf("--audit-postgres: not a valid PostgreSQL URL%s (%s)", parseReason(err, u), postgresUsage)
	}
	return cfg, nil
}

// urlHasPassword reports whether the postgres:// URL v sets a password,
// read as pgx reads it (libpq's rules, not net/url's): user information
// with a colon (user:password@, an empty one too) before the first '@'
// that comes before any '/', or a query key password or sslpassword (the
// client key's passphrase), percent-decoded, spaces trimmed, in any case
// (pgx reads them in lower case; another spelling would be sent to the
// server as a run-time parameter). Every '&'- or '?'-separated part of v is
// taken as a possible key: pgx knows no fragment ('#' is a value's byte to
// it), and a '?' in the user information moves where its query starts.
func urlHasPassword(v string) bool {
	rest := v[strings.Index(v, "://")+3:]
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' && strings.Contains(rest[:i], ":") {
		return true
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == '&' || r == '?' }) {
		k, _, _ := strings.Cut(part, "=")
		if d, err := url.PathUnescape(k); err == nil {
			k = d
		}
		k = strings.Trim(k, " ")
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			return true
		}
	}
	return false
}

// parseReason returns ": <why>" for pgx's error err parsing u, without the
// URL that pgx's message quotes; "" when the reason could show a password.
func parseReason(err error, u *url.URL) string {
	s := err.Error()
	i := strings.LastIndex(s, "`: ")
	if i < 0 {
		return ""
	}
	s = s[i+3:]
	pw, _ := u.User.Password()
	for _, p := range []string{pw, u.Query().Get("password")} {
		if p != "" && strings.Contains(s, p) {
			return ""
		}
	}
	return ": " + s
}

// openPostgres connects to the PostgreSQL database of the URL v, which
// must answer within startTimeout. At most 8 connections are open: the
// sink's one background writer, the durable writes of write calls, and
// queries.
func openPostgres(ctx context.Context, v string) (*sql.DB, error) {
	cfg, err := postgresConfig(v)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("--audit-postgres: %w", err)
	}
	return db, nil
}

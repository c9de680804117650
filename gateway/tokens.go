package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TokensEnv is the environment variable [TokensFromEnv] reads.
const TokensEnv = "MCP_GATEWAY_TOKENS"

// ErrUnknownToken is returned by [TokenStore.Authenticate] for a token that
// is not configured.
var ErrUnknownToken = errors.New("gateway: unknown token")

// ErrAuthenticatorUnavailable is an error an [Authenticator] wraps when it
// could not judge a token because a service it depends on failed (the
// authorization server's introspection endpoint, say); the gateway
// treats token.ErrIntrospectionFailed and token.ErrKeySetUnavailable (a
// JWT whose kid the key set lacks while the set cannot be fetched), which
// do not wrap it, the same way. The gateway then answers -32003 (UPSTREAM_UNAVAILABLE) with 502, or
// 504 when the error also wraps context.DeadlineExceeded, rather than
// 401: the client's token may well be good, and a 401 with
// error="invalid_token" (RFC 6750) would send the client to authorize
// again, against an authorization server that is already failing. The
// request is not forwarded either way.
var ErrAuthenticatorUnavailable = errors.New("gateway: the authenticator could not judge the token")

// An Authenticator turns a bearer token into the principal it stands for. It
// returns a non-nil error for a token it does not accept; the gateway then
// answers 401 without saying why (but see [ErrAuthenticatorUnavailable]).
// The gateway also answers 401 (and logs an error) for a principal without a
// subject or one that fails [token.CheckPrincipal]: a role with a comma or a
// subject with outer spaces would reach the downstream's identity headers as
// another identity. Implementations are safe for concurrent use and must not
// log the token. One that panics (its bug) is logged with its stack, and
// the request refused: INTERNAL, HTTP 500 (but for http.ErrAbortHandler,
// which breaks the connection, as net/http does with it).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*policy.Principal, error)
}

// AuthenticatorFunc adapts a function to an [Authenticator].
type AuthenticatorFunc func(ctx context.Context, token string) (*policy.Principal, error)

// Authenticate calls f(ctx, token).
func (f AuthenticatorFunc) Authenticate(ctx context.Context, token string) (*policy.Principal, error) {
	return f(ctx, token)
}

// A TokenStore is a static table of bearer tokens, a [token.Table]: lookup
// compares SHA-256 digests in constant time against every configured token.
// It is immutable and safe for concurrent use. A nil *TokenStore holds no
// tokens.
type TokenStore struct {
	t *token.Table
}

// NewTokenStore wraps a token table.
func NewTokenStore(t *token.Table) *TokenStore { return &TokenStore{t: t} }

// Authenticate implements [Authenticator]. It returns [ErrUnknownToken] for a
// token that is not configured. The returned principal must not be modified.
func (s *TokenStore) Authenticate(_ context.Context, tok string) (*policy.Principal, error) {
	if s == nil {
		return nil, ErrUnknownToken // as a nil token.Table: no tokens
	}
	if pr := s.t.Lookup(tok); pr != nil {
		return pr, nil
	}
	return nil, ErrUnknownToken
}

// Len returns the number of configured tokens (none in a nil store).
func (s *TokenStore) Len() int {
	if s == nil {
		return 0
	}
	return s.t.Len()
}

// ParseTokens parses a token table (see package token for the format: a
// role, a list of roles, or {"sub", "role" | "roles"} per token). Errors name
// [TokensEnv] and never quote a token.
func ParseTokens(data []byte) (*TokenStore, error) {
	t, err := token.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", TokensEnv, err)
	}
	return &TokenStore{t: t}, nil
}

// DemoTokens returns the seed's demonstration table: admin-token is subject
// "admin" with role admin, viewer-token is subject "viewer" with role viewer.
// For local trials only.
func DemoTokens() *TokenStore {
	t, err := token.New(map[string]*policy.Principal{
		"admin-token":  {Subject: "admin", Roles: []string{"admin"}},
		"viewer-token": {Subject: "viewer", Roles: []string{"viewer"}},
	})
	if err != nil { // a constant table: cannot happen
		panic(err)
	}
	return &TokenStore{t: t}
}

// TokensFromEnv reads the token table from the environment variable
// [TokensEnv] (see [ParseTokens]). When the variable is unset it returns
// [DemoTokens] and logs a warning on logger (nil means slog.Default()); when
// it is set but invalid it returns an error, so a bad deployment fails to
// start rather than falling back to known tokens.
func TokensFromEnv(logger *slog.Logger) (*TokenStore, error) {
	v, ok := os.LookupEnv(TokensEnv)
	if !ok {
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("MCP_GATEWAY_TOKENS is unset: using the built-in demo tokens admin-token and viewer-token; do not use this in production")
		return DemoTokens(), nil
	}
	return ParseTokens([]byte(v))
}

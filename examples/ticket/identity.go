package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/token"
)

// jwtFlags are serve-http's --jwt-* flags: with them the bearer tokens are
// JWTs of an identity provider, verified against its keys, instead of the
// dev-only token table.
type jwtFlags struct {
	jwks, issuer, audience, rolesClaim, teamClaim string
}

// maxJWKSFile bounds a --jwt-jwks file.
const maxJWKSFile = 16 << 20

// check checks the flags' values, given reports whether any --jwt-* flag
// was: then --jwt-jwks, --jwt-issuer and --jwt-audience are required, and
// no flag may be empty.
func (j *jwtFlags) check(given bool) error {
	if !given {
		return nil
	}
	switch {
	case j.jwks == "":
		return errors.New("--jwt-jwks: required with the --jwt-* flags (a JWK Set file, or the identity provider's jwks_uri)")
	case j.issuer == "":
		return errors.New(`--jwt-issuer: required with --jwt-jwks (the tokens' "iss")`)
	case j.audience == "":
		return errors.New(`--jwt-audience: required with --jwt-jwks (this server's identifier, which the tokens' "aud" must hold)`)
	case j.rolesClaim == "":
		return errors.New("--jwt-roles-claim: empty claim name (leave the flag out for \"roles\")")
	case j.teamClaim == "":
		return errors.New("--jwt-team-claim: empty claim name (leave the flag out for \"team\")")
	}
	return nil
}

// verifier returns the JWT verifier of the flags: the keys of a JWK Set
// file, read now, or of a URL (https, or http to a loopback host),
// fetched now and again when a token names a key it lacks. The team
// attribute, which search_docs filters by, is the team claim.
func (j *jwtFlags) verifier(ctx context.Context, log *slog.Logger) (*token.JWT, error) {
	cfg := token.JWTConfig{Issuer: j.issuer, Audience: j.audience, RolesClaim: j.rolesClaim,
		AttrClaims: map[string]string{"team": j.teamClaim}}
	if strings.Contains(j.jwks, "://") {
		set, err := token.NewRemoteKeySet(ctx, j.jwks, &token.RemoteKeySetOptions{ErrorHandler: func(err error) {
			log.Warn("ticket: JWK Set: a refresh failed (the last good set is kept) or left keys out", "err", err)
		}})
		if err != nil {
			return nil, fmt.Errorf("--jwt-jwks: %w", err)
		}
		cfg.KeySet = set
	} else {
		data, err := cliarg.ReadFile("--jwt-jwks", j.jwks, maxJWKSFile)
		if err != nil {
			return nil, err
		}
		if cfg.Keys, err = token.ParseJWKS(data); err != nil {
			return nil, fmt.Errorf("--jwt-jwks %s: %w", j.jwks, err)
		}
	}
	v, err := token.NewJWT(cfg)
	if err != nil {
		return nil, fmt.Errorf("--jwt-* flags: %w", err)
	}
	return v, nil
}

// identities turns the bearer tokens of HTTP requests into principals:
// the dev-only token table, or a JWT verifier.
type identities struct {
	table *token.Table
	jwt   *token.JWT // nil: the table
}

// authenticator is the guard's: it reads "Authorization: Bearer" from a
// request's HTTP headers.
func (ids identities) authenticator() mcpguard.Authenticator {
	if ids.jwt == nil {
		return mcpguard.BearerTokens(ids.table)
	}
	return mcpguard.Bearer(ids.jwt)
}

// bindSessions binds each MCP session at h to the principal that opened
// it: a request with a valid token goes through the go-sdk's
// auth.RequireBearerToken, one without passes on to h, whose guard refuses
// and audits its calls.
func (ids identities) bindSessions(h http.Handler) http.Handler {
	if ids.jwt == nil {
		return ids.table.BindSessions(h)
	}
	return token.BindSessions(ids.jwt.Verifier(), h)
}

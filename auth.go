package mcpguard

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Credential is the caller's own secret (a bearer token, an API key), kept
// so that a handler can call its downstream as the caller: auth
// passthrough, never a shared service account. Its String, GoString,
// Format and LogValue all print "[REDACTED]"; only [Credential.Reveal]
// returns the secret.
type Credential struct{ secret string }

// NewCredential wraps secret.
func NewCredential(secret string) Credential { return Credential{secret: secret} }

// Reveal returns the secret, for the one place that needs it: the
// Authorization header of the downstream call.
func (c Credential) Reveal() string { return c.secret }

// IsZero reports whether c holds no secret.
func (c Credential) IsZero() bool { return c.secret == "" }

const redacted = "[REDACTED]"

// String returns "[REDACTED]".
func (c Credential) String() string { return redacted }

// GoString returns "[REDACTED]".
func (c Credential) GoString() string { return redacted }

// Format prints "[REDACTED]" for every verb.
func (c Credential) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue returns "[REDACTED]".
func (c Credential) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText returns "[REDACTED]", so encoders never leak the secret.
func (c Credential) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// An Identity is an authenticated caller: who (the principal) and, when
// known, their own credential for auth passthrough.
type Identity struct {
	Principal  *policy.Principal
	Credential Credential
}

// An Authenticator resolves the caller of a request (a tools/call or a
// tools/list). req.GetExtra() is nil on stdio and in-memory transports;
// over HTTP it carries the headers and, behind auth.RequireBearerToken, the
// verified TokenInfo. It returns an error that unwraps to
// [ErrUnauthenticated] when there is no valid identity; it never invents a
// default one, and it never reads tool arguments (the model writes those).
// Implementations must be safe for concurrent use.
type Authenticator interface {
	Authenticate(ctx context.Context, req mcp.Request) (*Identity, error)
}

// AuthenticatorFunc adapts a function to [Authenticator].
type AuthenticatorFunc func(ctx context.Context, req mcp.Request) (*Identity, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, req mcp.Request) (*Identity, error) {
	return f(ctx, req)
}

func extraOf(req mcp.Request) *mcp.RequestExtra {
	if req == nil {
		return nil
	}
	return req.GetExtra()
}

func unauthenticated(msg string) error { return Deny(CodeUnauthenticated, msg) }

// FromTokenInfo returns an Authenticator for servers behind the go-sdk's
// auth.RequireBearerToken middleware: the principal comes from
// extra.TokenInfo (subject UserID, roles Scopes unless roles is non-nil, in
// which case roles maps the TokenInfo to roles), and the credential from the
// Authorization header. A request without TokenInfo or without a UserID is
// unauthenticated.
func FromTokenInfo(roles func(*auth.TokenInfo) []string) Authenticator {
	return AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*Identity, error) {
		extra := extraOf(req)
		if extra == nil || extra.TokenInfo == nil {
			return nil, unauthenticated("no verified token")
		}
		ti := extra.TokenInfo
		if ti.UserID == "" {
			return nil, unauthenticated("verified token names no user")
		}
		r := ti.Scopes
		if roles != nil {
			r = roles(ti)
		}
		id := &Identity{Principal: &policy.Principal{Subject: ti.UserID, Roles: slices.Clone(r)}}
		if tok, ok := bearer(extra.Header); ok {
			id.Credential = NewCredential(tok)
		}
		return id, nil
	})
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 7235); the token is case-sensitive.
func bearer(h http.Header) (string, bool) {
	v := h.Get("Authorization")
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// A TokenStore maps static bearer tokens to principals, for demos and
// small deployments. Lookup compares the SHA-256 of the presented token with
// that of every stored token in constant time, without early exit, so the
// response time does not reveal which token nearly matched. A TokenStore is
// immutable and safe for concurrent use.
type TokenStore struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum [sha256.Size]byte
	pr  *policy.Principal
}

// NewTokenStore returns a store of tokens. It returns an error for an empty
// token, a principal without a subject, or a duplicate token.
func NewTokenStore(tokens map[string]*policy.Principal) (*TokenStore, error) {
	s := &TokenStore{}
	keys := make([]string, 0, len(tokens))
	for k := range tokens {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, tok := range keys {
		pr := tokens[tok]
		if tok == "" {
			return nil, errors.New("mcpguard: empty token in token store")
		}
		if pr == nil || pr.Subject == "" {
			return nil, errors.New("mcpguard: token store entry without a subject")
		}
		cp := *pr
		cp.Roles = slices.Clone(pr.Roles)
		s.entries = append(s.entries, tokenEntry{sum: sha256.Sum256([]byte(tok)), pr: &cp})
	}
	return s, nil
}

// Lookup returns the principal of token, or nil.
func (s *TokenStore) Lookup(token string) *policy.Principal {
	if s == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	var found *policy.Principal
	for i := range s.entries {
		if subtle.ConstantTimeCompare(sum[:], s.entries[i].sum[:]) == 1 {
			found = s.entries[i].pr
		}
	}
	return found
}

// Headers returns an Authenticator that reads "Authorization: Bearer <token>"
// from the request's HTTP headers and looks it up in s. Requests without
// headers (stdio, in-memory) are unauthenticated.
func (s *TokenStore) Headers() Authenticator {
	return AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*Identity, error) {
		extra := extraOf(req)
		if extra == nil || extra.Header == nil {
			return nil, unauthenticated("no bearer token")
		}
		tok, ok := bearer(extra.Header)
		if !ok {
			return nil, unauthenticated("no bearer token")
		}
		pr := s.Lookup(tok)
		if pr == nil {
			return nil, unauthenticated("invalid bearer token")
		}
		return &Identity{Principal: pr, Credential: NewCredential(tok)}, nil
	})
}

// FromEnv returns the Authenticator of a stdio server: the identity is the
// token in environment variable name, looked up in s once, now, at start.
// The MCP client's configuration sets the variable when it launches the
// server, so every call runs as that user. When the variable is unset or
// the token unknown, every call is refused as unauthenticated (there is no
// default identity). Requests that arrive over HTTP (with headers) are
// refused too: the launching user's identity is never lent to a network
// caller.
func FromEnv(name string, s *TokenStore) Authenticator {
	return fromToken(os.Getenv(name), s, "environment variable "+name)
}

func fromToken(tok string, s *TokenStore, where string) Authenticator {
	var id *Identity
	var why error
	switch pr := s.Lookup(tok); {
	case tok == "":
		why = unauthenticated(where + " is not set")
	case pr == nil:
		why = unauthenticated(where + " holds an unknown token")
	default:
		id = &Identity{Principal: pr, Credential: NewCredential(tok)}
	}
	return AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*Identity, error) {
		extra := extraOf(req)
		if extra != nil && (extra.Header != nil || extra.TokenInfo != nil) {
			return nil, unauthenticated("the launching identity is not available over HTTP")
		}
		if why != nil {
			return nil, why
		}
		return id, nil
	})
}

type identityKey struct{}

// NewContext returns ctx carrying id. The guard does this before the
// handler runs.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the caller's identity, or nil outside a guarded call.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// PrincipalFromContext returns the caller's principal, or nil.
func PrincipalFromContext(ctx context.Context) *policy.Principal {
	if id := FromContext(ctx); id != nil {
		return id.Principal
	}
	return nil
}

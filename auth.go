package mcpguard

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Credential is the caller's own secret (a bearer token, an API key), kept
// so that a handler can call its downstream as the caller: auth
// passthrough, never a shared service account. Its String, GoString,
// Format and LogValue all print "[REDACTED]"; only [Credential.Reveal]
// returns the secret.
//
// The secret is held by a function: fmt cannot call the methods of a value
// it reaches through an unexported field (a Credential kept in a struct of
// the caller's), and walks it instead; of a function it prints only the
// address, whatever the verb.
type Credential struct{ reveal func() string }

// NewCredential wraps secret.
func NewCredential(secret string) Credential {
	if secret == "" {
		return Credential{}
	}
	return Credential{func() string { return secret }}
}

// Reveal returns the secret, for the one place that needs it: the
// Authorization header of the downstream call.
func (c Credential) Reveal() string {
	if c.reveal == nil {
		return ""
	}
	return c.reveal()
}

// Equal reports whether c and o hold the same secret. A Credential is not
// comparable with == (nor, so, is an [Identity]): its secret is held by a
// function, which fmt never prints. go-cmp uses this method.
func (c Credential) Equal(o Credential) bool {
	return subtle.ConstantTimeCompare([]byte(c.Reveal()), []byte(o.Reveal())) == 1
}

// IsZero reports whether c holds no secret.
func (c Credential) IsZero() bool { return c.reveal == nil }

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
// tools/list, or, under [Guard.Install], a request for the server's
// prompts or resources). req.GetExtra() is nil on stdio and in-memory
// transports, and over the go-sdk's HTTP+SSE transport too (its calls run
// in the context of the HTTP request that opened the stream); over
// Streamable HTTP it carries the headers and, behind
// auth.RequireBearerToken, the verified TokenInfo. It returns an error
// that unwraps to [ErrUnauthenticated] when there is no valid identity; it
// never invents a default one, and it never reads tool arguments (the
// model writes those).
// The call is refused with the error's code and message when the error is
// a [*DenialError] with code UNAUTHENTICATED, UPSTREAM_UNAVAILABLE (the
// identity provider could not be asked: retryable), RATE_LIMIT_EXCEEDED or
// CONCURRENCY_LIMIT_EXCEEDED (the authenticator's own cap, such as one on
// the calls it makes to the identity provider; with its RetryAfter), so its
// message must be safe to show; any other error is refused as
// UNAUTHENTICATED with a message of the guard's. An identity without a
// Principal, or whose Subject is empty or only white space (a header or
// claim present but blank), is no identity: refused UNAUTHENTICATED.
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
// which case roles maps the TokenInfo to roles, attributes a copy of the
// map[string]string its Extra holds under [token.ExtraAttrs], as the
// token package's Verifiers give them), and the credential from the
// Authorization header. A request without TokenInfo (stdio, in memory, and
// the go-sdk's HTTP+SSE transport, even behind the middleware) or without a
// UserID is unauthenticated.
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
		if a, ok := ti.Extra[token.ExtraAttrs].(map[string]string); ok && len(a) != 0 {
			id.Principal.Attrs = maps.Clone(a)
		}
		if tok, ok := token.Bearer(extra.Header); ok {
			id.Credential = NewCredential(tok)
		}
		return id, nil
	})
}

// BearerTokens returns an Authenticator that reads "Authorization: Bearer
// <token>" from the request's HTTP headers (RFC 6750; the scheme is
// case-insensitive) and looks it up in t in constant time. Requests without
// headers (stdio, in memory, the go-sdk's HTTP+SSE transport) are
// unauthenticated. It authenticates each call, not the MCP session it
// arrives on: over stateful Streamable HTTP, wrap the handler with
// [token.Table.BindSessions], so that no principal can use (or end) a
// session another opened.
func BearerTokens(t *token.Table) Authenticator {
	return Bearer(tableTokens{t})
}

// tableTokens is a token table as a [TokenAuthenticator]: a token it does
// not hold is refused (Authenticate returns a nil principal).
type tableTokens struct{ t *token.Table }

func (a tableTokens) Authenticate(_ context.Context, tok string) (*policy.Principal, error) {
	return a.t.Lookup(tok), nil
}

// authRefusal is an authenticator's refusal, d, with the audit record's
// detail: mcpguard's own words for what the caller is not told (see
// [Guard.deny], which records no authenticator's message).
type authRefusal struct {
	d      *DenialError
	detail string
}

func (r *authRefusal) Error() string { return r.d.Error() }
func (r *authRefusal) Unwrap() error { return r.d }

// authDetail returns the audit record's detail of err, an authenticator's
// refusal: "" but for an [authRefusal].
func authDetail(err error) string {
	var r *authRefusal
	if errors.As(err, &r) {
		return r.detail
	}
	return ""
}

// refusedDetail is the audit record's detail of a bearer token refused
// with err: the reason the token package gives (its errors' texts, which
// never quote the token: "token: invalid JWT: wrong audience"), so that an
// operator can tell an audience, issuer, clock or key mistake apart; only
// "bearer token refused" for another authenticator's error, whose text may
// hold anything, and "unknown bearer token" for none.
func refusedDetail(err error) string {
	switch {
	case err == nil:
		return "unknown bearer token"
	case errors.Is(err, token.ErrInvalidJWT), errors.Is(err, token.ErrInvalidToken):
		return "bearer token refused: " + textsafe.Clean(err.Error(), 200)
	}
	return "bearer token refused"
}

// A TokenAuthenticator turns a bearer token into the principal it stands
// for: *token.JWT and *token.Introspector are ones. It returns an error
// for a token it refuses, one that unwraps to token.ErrIntrospectionFailed
// or token.ErrKeySetUnavailable when it could not judge the token (an
// Introspector's endpoint did not answer; a JWT's key set lacks the
// token's kid while the set cannot be fetched).
type TokenAuthenticator interface {
	Authenticate(ctx context.Context, tok string) (*policy.Principal, error)
}

// Bearer is [BearerTokens] for the tokens a verifies (a *token.JWT, a
// *token.Introspector): it reads "Authorization: Bearer <token>" from the
// request's HTTP headers and asks a. A request without a bearer token, or
// whose token a refuses, is unauthenticated; one whose token a could not
// judge (an error that unwraps to token.ErrIntrospectionFailed or
// token.ErrKeySetUnavailable) is refused UPSTREAM_UNAVAILABLE, which a
// client may retry. Over stateful Streamable
// HTTP, wrap the handler with token.BindSessions and a's Verifier.
func Bearer(a TokenAuthenticator) Authenticator {
	return AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*Identity, error) {
		extra := extraOf(req)
		if extra == nil || extra.Header == nil {
			return nil, unauthenticated("no bearer token")
		}
		tok, ok := token.Bearer(extra.Header)
		if !ok {
			return nil, unauthenticated("no bearer token")
		}
		pr, err := a.Authenticate(ctx, tok)
		switch {
		case (errors.Is(err, token.ErrIntrospectionFailed) || errors.Is(err, token.ErrKeySetUnavailable)) && ctx.Err() != nil:
			// Not the provider's failure: the caller stopped waiting.
			return nil, &authRefusal{Deny(CodeUpstreamUnavailable, "the bearer token could not be checked"),
				"the client went away (the call's context ended) before its token was checked"}
		case errors.Is(err, token.ErrIntrospectionFailed):
			return nil, &authRefusal{Deny(CodeUpstreamUnavailable, "the bearer token could not be checked"),
				"the identity provider did not answer"}
		case errors.Is(err, token.ErrKeySetUnavailable):
			return nil, &authRefusal{Deny(CodeUpstreamUnavailable, "the bearer token could not be checked"),
				"the token's key is not in the JWK Set, which could not be fetched"}
		case err != nil || pr == nil:
			return nil, &authRefusal{Deny(CodeUnauthenticated, "invalid bearer token"), refusedDetail(err)}
		}
		return &Identity{Principal: pr, Credential: NewCredential(tok)}, nil
	})
}

// FromEnv returns the Authenticator of a stdio server: the identity is the
// token in environment variable name, looked up in t once, now, at start.
// The MCP client's configuration sets the variable when it launches the
// server, so every call runs as that user. When the variable is unset or
// empty, or the token unknown, every call is refused as unauthenticated
// (there is no default identity), the refusal saying which. Requests that
// arrive over HTTP (with headers, or over the go-sdk's HTTP+SSE transport,
// whose calls carry none but run in an HTTP request's context, whichever
// HTTP server serves it) are refused too:
// the launching user's identity is not lent to a client over HTTP. A
// transport of the server's own that carries network clients otherwise (an
// mcp.IOTransport on a socket, or one connected with a context that is not
// the HTTP request's) cannot be told from stdio and gets that identity:
// serve FromEnv on stdio (or in memory) only.
func FromEnv(name string, t *token.Table) Authenticator {
	where := "environment variable " + name
	tok, set := os.LookupEnv(name)
	unset := where + " is not set"
	if set {
		unset = where + " is empty"
	}
	return fromToken(tok, t, unset, where+" holds an unknown token")
}

// FromToken is [FromEnv] for a token obtained elsewhere (a flag, a file, a
// secret manager): the identity of tok in t, resolved once, now. An empty
// or unknown tok makes every call unauthenticated, the refusal saying
// which (the token given to FromToken is empty, or unknown).
func FromToken(tok string, t *token.Table) Authenticator {
	return fromToken(tok, t, "the token given to FromToken is empty", "the token given to FromToken is not in the token table")
}

// fromToken resolves tok in t once; unset and unknown are the reasons
// of the refusals when tok is empty or unknown.
func fromToken(tok string, t *token.Table, unset, unknown string) Authenticator {
	var id *Identity
	var why error
	switch pr := t.Lookup(tok); {
	case tok == "":
		why = unauthenticated(unset)
	case pr == nil:
		why = unauthenticated(unknown)
	default:
		id = &Identity{Principal: pr, Credential: NewCredential(tok)}
	}
	return AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*Identity, error) {
		// Over the go-sdk's HTTP+SSE transport a call carries no headers,
		// but its context is an HTTP request's.
		extra := extraOf(req)
		if extra != nil && (extra.Header != nil || extra.TokenInfo != nil) || inHTTPRequest(ctx) {
			return nil, unauthenticated("the launching identity is not available over HTTP")
		}
		if why != nil {
			return nil, why
		}
		return id, nil
	})
}

// inHTTPRequest reports whether ctx is (or derives from) an HTTP request's
// context. net/http puts http.ServerContextKey in it, and
// http.LocalAddrContextKey after Server.ConnContext (which may start from a
// context of its own); quic-go's HTTP/3 server puts only the latter.
func inHTTPRequest(ctx context.Context) bool {
	return ctx.Value(http.ServerContextKey) != nil || ctx.Value(http.LocalAddrContextKey) != nil
}

// FromGatewayHeaders returns the Authenticator of a server that sits behind
// the mcpguard gateway and trusts it: the principal is the one named by the
// gateway's [token.HeaderSubject] and [token.HeaderRole] headers. A request
// without them gets anonymous (nil: it is unauthenticated), and so does
// every request over a transport that carries no headers (stdio, in memory,
// the go-sdk's HTTP+SSE transport: the gateway's identity never reaches
// such a call); malformed values are refused (not printable ASCII, or
// longer than [token.CheckPrincipal] lets the gateway send:
// token.MaxSubjectBytes, token.MaxRoleHeaderBytes). On its own this is sound only
// where nothing but the gateway can reach the server, since the gateway
// strips these headers from its clients and nothing else does. Elsewhere,
// give the gateway a signer (gateway.Options.Signer) and wrap the server's
// HTTP handler in [token.GatewaySigner.Verify] with the same key: then only
// requests the gateway signed, each once, reach this authenticator.
func FromGatewayHeaders(anonymous *policy.Principal) Authenticator {
	return AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*Identity, error) {
		extra := extraOf(req)
		var sub, role string
		if extra != nil && extra.Header != nil {
			sub, role = extra.Header.Get(token.HeaderSubject), extra.Header.Get(token.HeaderRole)
		}
		if sub == "" {
			if anonymous == nil {
				return nil, unauthenticated("no gateway identity")
			}
			return &Identity{Principal: anonymous}, nil
		}
		if len(sub) > token.MaxSubjectBytes || len(role) > token.MaxRoleHeaderBytes || !printable(sub) || !printable(role) {
			return nil, unauthenticated("malformed gateway identity headers")
		}
		var roles []string
		for r := range strings.SplitSeq(role, ",") {
			if r = strings.TrimSpace(r); r != "" {
				roles = append(roles, r)
			}
		}
		return &Identity{Principal: &policy.Principal{Subject: sub, Roles: roles}}, nil
	})
}

// printable reports whether s is printable ASCII.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

type identityKey struct{}

// NewContext returns ctx carrying id. The guard does this before the
// handler runs. Like context.WithValue, it panics on a nil ctx.
func NewContext(ctx context.Context, id *Identity) context.Context {
	if ctx == nil {
		panic("mcpguard: NewContext with a nil parent context") // as context.WithValue
	}
	return &identityCtx{Context: ctx, id: id}
}

// identityCtx is the context of [NewContext]: context.WithValue's, as a
// type the pipeline can keep in a call's memory instead of allocating it.
type identityCtx struct {
	context.Context
	id   *Identity
	call *call // the pipeline's call (its correlation id, see askClient), or nil
}

func (c *identityCtx) Value(key any) any {
	switch key {
	case identityKey{}:
		return c.id
	case corrKey{}:
		if c.call != nil {
			return c.call // correlationFrom reads its corr: no string boxed per lookup
		}
	case callKey{}:
		if c.call != nil {
			return c.call
		}
	}
	return c.Context.Value(key)
}

func (c *identityCtx) String() string { return fmt.Sprint(c.Context) + ".WithValue(mcpguard identity)" }

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

// noIdentity reports whether id, an Authenticator's answer, names no
// caller: nil, without a Principal, or with a Subject empty or only white
// space (which every caller with a blank header or claim would share).
func noIdentity(id *Identity) bool {
	return id == nil || id.Principal == nil || strings.TrimFunc(id.Principal.Subject, unicode.IsSpace) == ""
}

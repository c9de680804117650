package token

import (
	"context"
	"maps"
	"net/http"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// ExtraAttrs is the key of auth.TokenInfo's Extra under which the
// Verifiers of this package ([Table.Verifier], [JWT.Verifier],
// [Introspector.Verifier]) give the principal's Attrs, a
// map[string]string, when it has any; mcpguard.FromTokenInfo reads them
// back into the caller's Identity.
const ExtraAttrs = "mcpguard.attrs"

// withAttrs returns ti with pr's Attrs, a copy, in its Extra (see
// [ExtraAttrs]).
func withAttrs(ti *auth.TokenInfo, pr *policy.Principal) *auth.TokenInfo {
	if len(pr.Attrs) != 0 {
		ti.Extra = map[string]any{ExtraAttrs: maps.Clone(pr.Attrs)}
	}
	return ti
}

// Verifier returns a TokenVerifier over t for the go-sdk's
// auth.RequireBearerToken: a known token gives a TokenInfo whose UserID is
// its principal's subject, whose Scopes are its roles and whose Extra
// holds its Attrs ([ExtraAttrs]); any other is auth.ErrInvalidToken.
// Static tokens do not expire: use it with
// RequireBearerTokenOptions.AllowMissingExpiration, as [Table.BindSessions]
// does.
func (t *Table) Verifier() auth.TokenVerifier {
	return func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		pr := t.Lookup(tok)
		if pr == nil {
			return nil, auth.ErrInvalidToken
		}
		return withAttrs(&auth.TokenInfo{UserID: pr.Subject, Scopes: append([]string(nil), pr.Roles...)}, pr), nil
	}
}

// BindSessions wraps h, a go-sdk Streamable HTTP handler, so that each MCP
// session is bound to the principal that opened it. A request with a known
// bearer token ([Bearer], [Table.Lookup]) goes through auth.RequireBearerToken
// with [Table.Verifier]: the go-sdk records the subject as the session's
// user when the session opens, and answers 403 ("session user mismatch")
// to any request on the session that is not that user's, another
// principal's or one without a valid token, for calls, listings, streams
// and DELETE alike. Without it, anyone who learns a session id can use the
// session (its per-session budget, its audit session id) and end it.
//
// A request without a known token passes to h unchanged, with no
// TokenInfo, so that the guard inside refuses, and audits, its calls as
// unauthenticated, as it does without BindSessions; the go-sdk refuses it
// on any session bound to a user.
func (t *Table) BindSessions(h http.Handler) http.Handler {
	return BindSessions(t.Verifier(), h)
}

// BindSessions is [Table.BindSessions] for the tokens verify accepts (a
// [JWT.Verifier], an [Introspector.Verifier]): a request whose bearer
// token verify accepts goes through the go-sdk's auth.RequireBearerToken
// with the TokenInfo verify gave (the token is verified once), so that
// the MCP session it opens is bound to that UserID and the go-sdk answers
// 403 ("session user mismatch") to another's request on it; one without a
// bearer token, or with one verify refuses (or cannot judge), passes to h
// unchanged, with no TokenInfo, so that the guard inside refuses, and
// audits, its calls as unauthenticated. A TokenInfo without Expiration is
// taken as one that does not expire (a static table's); one that has
// expired is refused by the go-sdk (401).
func BindSessions(verify auth.TokenVerifier, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := Bearer(r.Header)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		ti, err := verify(r.Context(), tok, r)
		if err != nil || ti == nil {
			h.ServeHTTP(w, r)
			return
		}
		verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return ti, nil }
		auth.RequireBearerToken(verified, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h).ServeHTTP(w, r)
	})
}

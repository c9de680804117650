package token

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Verifier returns a TokenVerifier over t for the go-sdk's
// auth.RequireBearerToken: a known token gives a TokenInfo whose UserID is
// its principal's subject and whose Scopes are its roles; any other is
// auth.ErrInvalidToken. Static tokens do not expire: use it with
// RequireBearerTokenOptions.AllowMissingExpiration, as [Table.BindSessions]
// does.
func (t *Table) Verifier() auth.TokenVerifier {
	return func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		pr := t.Lookup(tok)
		if pr == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: pr.Subject, Scopes: append([]string(nil), pr.Roles...)}, nil
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
	strict := auth.RequireBearerToken(t.Verifier(), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := Bearer(r.Header); ok && t.Lookup(tok) != nil {
			strict.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

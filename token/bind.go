package token

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/mcpguard/mcpguard/internal/recheck"
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
// principal's or one without a token, for calls, listings, streams and
// DELETE alike. Without it, anyone who learns a session id can use the
// session (its per-session budget, its audit session id) and end it.
//
// A request without a known token passes to h unchanged, with no
// TokenInfo, so that the guard inside refuses, and audits, its calls as
// unauthenticated, as it does without BindSessions; the go-sdk refuses it
// on any session bound to a user: with an unknown bearer token (the
// user's own, revoked) as 401 with WWW-Authenticate: Bearer
// error="invalid_token" (RFC 6750), so that a client learns to get a new
// token, not that the session is another user's.
func (t *Table) BindSessions(h http.Handler) http.Handler {
	return BindSessions(t.Verifier(), h)
}

// BindSessions is [Table.BindSessions] for the tokens verify accepts (a
// [JWT.Verifier], an [Introspector.Verifier]): a request whose bearer
// token verify accepts goes through the go-sdk's auth.RequireBearerToken
// with the TokenInfo verify gave (the token is verified once), so that
// the MCP session it opens is bound to that UserID and the go-sdk answers
// 403 ("session user mismatch") to another's request on it. One without a
// bearer token, or with one verify refuses (or cannot judge), passes to h
// unchanged, with no TokenInfo, so that the guard inside refuses, and
// audits, its calls as unauthenticated. On a session bound to a user the
// go-sdk refuses it, and BindSessions answers for it what it is: a token
// verify refused (an error that unwraps to auth.ErrInvalidToken: expired,
// revoked, unknown) gets 401 with WWW-Authenticate: Bearer
// error="invalid_token" (RFC 6750) and the error's text, as the go-sdk's
// auth.RequireBearerToken answers it, so that a client whose token expired
// mid-session refreshes it, and one verify could not judge (any other
// error: the identity provider did not answer) gets 503, to be sent
// again (auth.ErrOAuth 400 and no TokenInfo without an error 500, as the
// go-sdk answers them); a request without a bearer token keeps the go-sdk's
// 403.
//
// A session's stream (its GET, which carries what the server sends the
// client, for as long as the client holds it) is verified again before
// each write: once verify refuses its token (expired, revoked: at an
// [Introspector], as its cache allows; an error that unwraps to
// auth.ErrInvalidToken), or gives another user, the stream ends, and the
// client's GET to resume it is refused 401. An error of another kind
// (verify could not judge the token now) leaves it open. A POST's answer
// (a call in flight, a subscriptions/listen stream of protocol
// 2026-07-28) goes on under the token it was sent with.
//
// A TokenInfo without Expiration is taken as one that does not expire (a
// static table's). verify judges the expiry, within its leeway
// ([JWTConfig.Leeway], [IntrospectionConfig.Leeway]): a TokenInfo that
// expired more than [MaxLeeway] ago, which no verifier of this package
// gives, is refused by the go-sdk (401).
func BindSessions(verify auth.TokenVerifier, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := Bearer(r.Header)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		ti, err := verify(r.Context(), tok, r)
		if err != nil || ti == nil {
			if r.Header.Get(headerSession) == "" {
				h.ServeHTTP(w, r) // no session to be refused on
				return
			}
			rw := &refusedOnSession{ResponseWriter: w, status: http.StatusServiceUnavailable}
			switch {
			case errors.Is(err, auth.ErrInvalidToken):
				rw.status, rw.reason = http.StatusUnauthorized, err.Error() // as the go-sdk's 401 gives it
			case errors.Is(err, auth.ErrOAuth):
				rw.status, rw.reason = http.StatusBadRequest, err.Error() // as the go-sdk answers it
			case err == nil:
				rw.status = http.StatusInternalServerError // verify gave neither: the go-sdk's 500
			}
			defer rw.finish()
			h.ServeHTTP(rw, r)
			return
		}
		verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return ti, nil }
		// verify accepted ti within its leeway: the go-sdk, which checks
		// the Expiration again, is to allow what any leeway may.
		opts := &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: MaxLeeway}
		if r.Method == http.MethodGet && r.Header.Get(headerSession) != "" {
			// A session's stream lives as long as its client holds it:
			// its token is verified again before each write, and a
			// refusal ends it (the client's GET to resume is refused).
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			r = r.WithContext(ctx)
			w = &recheck.Writer{ResponseWriter: w, Err: errTokenRefused, Check: func() bool {
				again, err := verify(ctx, tok, r)
				if err != nil && !errors.Is(err, auth.ErrInvalidToken) {
					return true // verify could not judge it now: not a refusal
				}
				ok := err == nil && again != nil && again.UserID == ti.UserID &&
					(again.Expiration.IsZero() || time.Now().Before(again.Expiration.Add(MaxLeeway)))
				if !ok {
					cancel() // the handler's request ends, and the stream with it
				}
				return ok
			}}
		}
		auth.RequireBearerToken(verified, opts)(h).ServeHTTP(w, r)
	})
}

// errTokenRefused ends a session's stream whose token verify refuses now
// (see [BindSessions]).
var errTokenRefused = errors.New("token: the stream's bearer token is refused now")

// userMismatch is the body of the go-sdk's 403 to a request on a session
// bound to another user (http.Error's, with its newline).
const userMismatch = "session user mismatch\n"

// refusedOnSession is the ResponseWriter of a request on a session whose
// bearer token verify refused (invalid) or could not judge: it answers
// the go-sdk's 403 "session user mismatch" as a refusal of the token (401,
// 503, or the go-sdk's 400 and 500), and passes every other answer on
// unchanged. A 403 is held until
// its body shows whether it is that one.
type refusedOnSession struct {
	http.ResponseWriter
	status  int    // the answer instead of the 403 (see BindSessions)
	reason  string // verify's error text, for a 401 or a 400
	held    bool   // a 403 not yet written
	swallow bool   // the refusal is written: drop the go-sdk's body
}

func (w *refusedOnSession) WriteHeader(code int) {
	if code == http.StatusForbidden && !w.held && !w.swallow {
		w.held = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusedOnSession) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	if w.held {
		w.held = false
		if string(p) == userMismatch {
			w.swallow = true
			msg := w.reason
			switch w.status {
			case http.StatusUnauthorized:
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			case http.StatusServiceUnavailable:
				msg = "the bearer token could not be verified now"
			case http.StatusInternalServerError:
				msg = "token validation failed"
			}
			w.ResponseWriter.WriteHeader(w.status)
			_, err := io.WriteString(w.ResponseWriter, msg+"\n")
			return len(p), err
		}
		w.ResponseWriter.WriteHeader(http.StatusForbidden)
	}
	return w.ResponseWriter.Write(p)
}

// Flush writes a held 403 and flushes.
func (w *refusedOnSession) Flush() {
	w.finish()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap is for http.ResponseController.
func (w *refusedOnSession) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a 403 held and never followed by a body.
func (w *refusedOnSession) finish() {
	if w.held {
		w.held = false
		w.ResponseWriter.WriteHeader(http.StatusForbidden)
	}
}

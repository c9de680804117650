package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionEnv holds the caller's RoboShop session for a stdio server; the
// MCP client's configuration sets it when it launches the server.
const sessionEnv = "SHOP_MCP_SESSION"

// authDeadline bounds the session check of one call, its retry included.
const authDeadline = 3 * time.Second

// sessionAuth is the shop's [mcpguard.Authenticator]: session passthrough.
// The caller's own RoboShop session (the bearer token over HTTP; the
// launching environment's over stdio) is checked with GET /api/auth/me on
// every call and every listing, with no cache, so an expired or revoked
// session fails on its next call; the gateway names the user and roles.
// The identity carries the session as its credential, which the tool
// handler forwards as the rs_auth cookie. It is safe for concurrent use.
type sessionAuth struct {
	gw *gatewayClient
	// stdio: the identity is the launching session, and requests that
	// come with HTTP headers are refused (it is never lent to a network
	// caller). Otherwise it is the request's bearer token.
	stdio  bool
	launch string
	// lim is the shop's limiter: each session check takes a slot of its
	// global in-flight cap while it asks the gateway, so that the checks
	// (of calls refused later, of hidden tools, of tools/list) count
	// against the cap that protects the shared gateway. Nil means none.
	lim *limiter.Limiter
	// checks caps each session's requests, of any kind, before their
	// check leaves for the gateway: its limits are for the tool
	// sessionCheck and the session's key (sessionKey). The per-user rate
	// counts only calls the guard admits, and a call refused before
	// (arguments, a hidden tool) or a listing still costs the gateway a
	// session check. Nil means none.
	checks *limiter.Limiter
	// strangers is the budget of session checks the gateway refuses, over
	// the whole server (one global limit for the tool strangerCheck): the
	// per-session cap is keyed by the session, so made-up sessions, a new
	// one per request, would each pass it. A session not seen valid lately
	// (known) takes a unit before its check leaves, and gives it back when
	// the gateway accepts it or cannot answer. Nil means none.
	strangers *limiter.Limiter
	known     *knownSessions   // sessions seen valid lately; nil means none
	now       func() time.Time // nil means time.Now
	// log receives a warning for each check the gateway did not complete
	// or answered unexpectedly, with the cause (never the session): the
	// caller is told only that the check failed. Nil means none.
	log *slog.Logger
}

// strangerCheck is the limiter's tool name for the check of a session not
// seen valid lately; no tool has it.
const strangerCheck = "GET /api/auth/me (unknown session)"

// sessionCheck is the limiter's tool name for a session check; no tool has
// it. In the shop's limiter only limits for every tool apply to it, and it
// counts no call against their rates (the call it checks is counted by the
// guard); the session-check limiter counts each check.
const sessionCheck = "GET /api/auth/me"

// sessionKey is the limiters' key of a session: a hash, so that the
// session itself is never a key in memory or on Redis.
func sessionKey(session string) string {
	h := sha256.Sum256([]byte(session))
	return hex.EncodeToString(h[:16])
}

func unauthenticated(msg string) error { return mcpguard.Deny(mcpguard.CodeUnauthenticated, msg) }

// unavailable is the refusal of a call whose session could not be checked
// (the gateway did not answer or failed): UPSTREAM_UNAVAILABLE, which the
// caller may retry; not UNAUTHENTICATED, which would tell it to sign in
// again.
func unavailable(msg string) error { return mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, msg) }

// Authenticate implements [mcpguard.Authenticator].
func (a *sessionAuth) Authenticate(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
	var refused bool // the gateway refused the session
	var extra *mcp.RequestExtra
	if req != nil {
		extra = req.GetExtra()
	}
	var session string
	switch {
	case a.stdio && extra != nil && (extra.Header != nil || extra.TokenInfo != nil):
		return nil, unauthenticated("the launching session is not available over HTTP")
	case a.stdio:
		if a.launch == "" {
			return nil, unauthenticated(sessionEnv + " is not set")
		}
		session = a.launch
	default:
		if extra == nil || extra.Header == nil {
			return nil, unauthenticated("no bearer session")
		}
		tok, ok := token.Bearer(extra.Header)
		if !ok {
			return nil, unauthenticated("no bearer session")
		}
		session = tok
	}
	if !token.IsToken68(session) {
		if a.stdio {
			return nil, unauthenticated(sessionEnv + " is not a session (the value of the gateway's rs_auth cookie alone)")
		}
		return nil, unauthenticated("malformed session")
	}
	now := time.Now
	if a.now != nil {
		now = a.now
	}
	key := sessionKey(session)
	if a.checks != nil {
		d := a.checks.AllowAt(ctx, now(), limiter.Request{Session: key, Tool: sessionCheck, Calls: 1})
		if !d.Allowed {
			return nil, rateRefusal(d, "this session has made too many requests; try again later")
		}
		a.checks.Release(d) // a rate holds no slot
	}
	var known, stale bool
	if a.strangers != nil {
		known, stale = a.known.has(ctx, key, now())
	}
	if a.strangers != nil && !known {
		d := a.strangers.AllowAt(ctx, now(), limiter.Request{Tool: strangerCheck, Calls: 1})
		if !d.Allowed {
			return nil, rateRefusal(d, "too many requests with sessions the gateway refused; try again later")
		}
		a.strangers.Release(d) // a rate holds no slot
		defer func() {
			// Only a session the gateway refused keeps its unit.
			if !refused {
				_ = a.strangers.Refund(context.WithoutCancel(ctx), now(), d)
			}
		}()
	}
	if a.lim != nil {
		d := a.lim.AllowAt(ctx, now(), limiter.Request{Tool: sessionCheck, Calls: 0})
		if !d.Allowed {
			if d.Err != nil && d.Limit.Kind == 0 { // the limiter failed, no limit refused
				return nil, limiterUnavailable()
			}
			// The server's in-flight cap, as the guard's own limit step
			// would refuse it.
			return nil, mcpguard.Deny(mcpguard.CodeConcurrencyLimitExceeded, "the server has too many calls in flight; try again shortly")
		}
		defer a.lim.Release(d)
	}
	pr, err := a.me(ctx, session)
	if err != nil {
		if refused = errors.Is(err, mcpguard.ErrUnauthenticated); refused {
			a.known.drop(ctx, key)
		}
		return nil, err
	}
	if !known || stale {
		// Remembered for knownTTL, again once half of it has passed: a
		// session in use stays known, with one write per half TTL.
		a.known.add(ctx, key, now())
	}
	return &mcpguard.Identity{Principal: pr, Credential: mcpguard.NewCredential(session)}, nil
}

// me asks the gateway who session belongs to, within authDeadline,
// retrying once on a transient failure. A session the gateway refuses (401,
// 403) is UNAUTHENTICATED, and so is an answer that is not exactly one JSON
// value without a key twice or names no valid user; a check that could
// not be completed (no answer, timeout, 5xx, 429) is UPSTREAM_UNAVAILABLE.
func (a *sessionAuth) me(ctx context.Context, session string) (*policy.Principal, error) {
	ctx, cancel := context.WithTimeout(ctx, authDeadline)
	defer cancel()
	var resp *gatewayResponse
	var err error
	for try := 0; try < 2; try++ {
		resp, err = a.gw.do(ctx, session, gatewayRequest{method: "GET", path: "/api/auth/me"})
		if (err == nil && !transientStatus(resp.status)) || ctx.Err() != nil {
			break
		}
	}
	if err != nil || resp.status >= 500 || resp.status == http.StatusTooManyRequests {
		switch {
		case err == nil:
			a.warn("shop: session check failed: the gateway is unavailable", "status", resp.status)
		case errors.Is(err, context.DeadlineExceeded):
			a.warn("shop: session check failed: the gateway is unavailable", "why", "no answer within "+authDeadline.String())
		case !errors.Is(err, context.Canceled): // not a caller that went away
			// The request's URL (no user info, no query) and the cause; no
			// header, so never the session.
			a.warn("shop: session check failed: the gateway is unavailable", "why", err.Error())
		}
		return nil, unavailable("the session could not be checked: the gateway is unavailable; try again")
	}
	if resp.status == http.StatusUnauthorized || resp.status == http.StatusForbidden {
		return nil, unauthenticated("the RoboShop session is invalid, expired or revoked")
	}
	var me struct {
		User struct {
			ID    string   `json:"id"`
			Roles []string `json:"roles"`
		} `json:"user"`
	}
	// As strict as a tool's answer (decodeAnswer): one JSON value, no key
	// twice, or readers disagree on who the user is. Keys are compared in
	// any letter case: encoding/json matches the struct's fields so
	// ("User" is read as "user").
	if resp.status != http.StatusOK || resp.tooLarge || duplicateKeyFolded(resp.body) || json.Unmarshal(resp.body, &me) != nil {
		a.warn("shop: session check answered unexpectedly (is --gateway the gateway's base URL?)",
			"status", resp.status, "too_large", resp.tooLarge)
		return nil, unauthenticated("the gateway's session check answered unexpectedly")
	}
	pr := &policy.Principal{Subject: me.User.ID, Roles: me.User.Roles}
	if me.User.ID == "" || token.CheckPrincipal(pr) != nil {
		a.warn("shop: session check named no valid user")
		return nil, unauthenticated("the gateway's session check named no valid user")
	}
	return pr, nil
}

// warn logs msg with args on a's logger, if any.
func (a *sessionAuth) warn(msg string, args ...any) {
	if a.log != nil {
		a.log.Warn(msg, args...)
	}
}

// limiterUnavailable is the refusal of a call whose session check the
// limiter could not admit (its Redis did not answer: it fails closed). It
// is the guard's own answer to a limiter that failed, so that a call is
// refused alike whichever of the two asked first: RATE_LIMIT_EXCEEDED,
// retry in one second.
func limiterUnavailable() error {
	d := mcpguard.Deny(mcpguard.CodeRateLimitExceeded, "the rate limiter is unavailable; try again shortly")
	d.RetryAfter = time.Second
	return d
}

// rateRefusal is the refusal of a session check that a rate limit did not
// allow (d): RATE_LIMIT_EXCEEDED with msg and the wait, or as
// limiterUnavailable when the limiter failed and no limit refused.
func rateRefusal(d limiter.Decision, msg string) error {
	if d.Err != nil && d.Limit.Kind == 0 {
		return limiterUnavailable()
	}
	den := mcpguard.Deny(mcpguard.CodeRateLimitExceeded, msg)
	den.RetryAfter = d.RetryAfter
	return den
}

var _ mcpguard.Authenticator = (*sessionAuth)(nil)

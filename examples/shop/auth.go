package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpguard/mcpguard"
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
}

func unauthenticated(msg string) error { return mcpguard.Deny(mcpguard.CodeUnauthenticated, msg) }

// Authenticate implements [mcpguard.Authenticator].
func (a *sessionAuth) Authenticate(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
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
		return nil, unauthenticated("malformed session")
	}
	pr, err := a.me(ctx, session)
	if err != nil {
		return nil, err
	}
	return &mcpguard.Identity{Principal: pr, Credential: mcpguard.NewCredential(session)}, nil
}

// me asks the gateway who session belongs to, within authDeadline,
// retrying once on a transient failure.
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
	if err != nil || transientStatus(resp.status) {
		return nil, unauthenticated("the session could not be checked: the gateway is unavailable; try again")
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
	if resp.status != http.StatusOK || json.Unmarshal(resp.body, &me) != nil {
		return nil, unauthenticated("the gateway's session check answered unexpectedly")
	}
	pr := &policy.Principal{Subject: me.User.ID, Roles: me.User.Roles}
	if me.User.ID == "" || token.CheckPrincipal(pr) != nil {
		return nil, unauthenticated("the gateway's session check named no valid user")
	}
	return pr, nil
}

var _ mcpguard.Authenticator = (*sessionAuth)(nil)

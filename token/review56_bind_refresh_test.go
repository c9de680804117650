package token_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview56BindSessionsTellsToRefresh: behind BindSessions, a request on
// a session its user opened, carrying the user's token once it had expired
// (or been revoked), was answered 403 "session user mismatch", the answer
// to another user's request: a client whose token expired mid-session was
// told the session is someone else's, never to get a new token (MCP
// clients refresh on 401 with WWW-Authenticate). One whose token the
// identity provider could not judge got the same 403, not a "try again".
// Now the go-sdk's 403 to a request whose token verify refused is 401 with
// WWW-Authenticate: Bearer error="invalid_token", and to one it could not
// judge 503. Every other answer is the go-sdk's: 403 without a token, 403
// to a Host the go-sdk refuses, and a session bound to no one still serves
// a refused token's request (the guard refuses and audits its calls).
func TestReview56BindSessionsTellsToRefresh(t *testing.T) {
	k := newTestKeys(t)
	var skew atomic.Int64 // the verifier's clock, ahead of the real one
	v := newJWT(t, token.JWTConfig{Keys: k.public(), Now: func() time.Time {
		return time.Now().Add(time.Duration(skew.Load()))
	}})
	now := time.Now()
	tok := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) {
		c["iat"], c["exp"] = now.Unix(), now.Add(time.Hour).Unix()
	}))
	var down atomic.Bool // the identity provider does not answer
	verify := func(ctx context.Context, tok string, r *http.Request) (*auth.TokenInfo, error) {
		if down.Load() {
			return nil, errors.New("the identity provider did not answer")
		}
		return v.Verifier()(ctx, tok, r)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ping", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(token.BindSessions(verify, h))
	t.Cleanup(srv.Close) // after the sessions' Close, registered later

	open := func(tok string) string {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}},
		}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs.ID()
	}
	var lastBody string
	send := func(method, sid, tok string, edit ...func(*http.Request)) *http.Response {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ping","arguments":{}}}`)
		} else {
			body = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, srv.URL, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		for _, e := range edit {
			e(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lastBody = string(b)
		return resp
	}

	sid := open(tok)
	if resp := send(http.MethodPost, sid, tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("the owner's call on her session: %d", resp.StatusCode)
	}

	skew.Store(int64(2 * time.Hour)) // the token has expired
	resp := send(http.MethodPost, sid, tok)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("the owner's expired token on her session: %d, WWW-Authenticate %q; want 401 with error=\"invalid_token\"",
			resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if want := "token: invalid JWT: expired\n"; lastBody != want {
		t.Errorf("the 401's body %q, want the verifier's reason %q, as the go-sdk gives it", lastBody, want)
	}
	evilHost := func(r *http.Request) { r.Host = "evil.example" }
	if resp := send(http.MethodPost, sid, tok, evilHost); resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("an expired token under a Host the go-sdk refuses: %d, WWW-Authenticate %q; want the go-sdk's 403",
			resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	skew.Store(0)

	down.Store(true)
	if resp := send(http.MethodPost, sid, tok); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a token the identity provider could not judge, on a session: %d, want 503", resp.StatusCode)
	}
	down.Store(false)
	if resp := send(http.MethodPost, sid, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("no token on her session: %d, want the go-sdk's 403", resp.StatusCode)
	}
	if resp := send(http.MethodPost, sid, tok); resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's call with her token valid again: %d, want 200", resp.StatusCode)
	}

	// A session opened without a token is bound to no one: a refused
	// token's request reaches it (the guard inside refuses and audits).
	anon := open("")
	if resp := send(http.MethodPost, anon, "not-a-token"); resp.StatusCode != http.StatusOK {
		t.Errorf("a refused token on a session bound to no one: %d, want 200 (passed to the handler)", resp.StatusCode)
	}
}

// TestReview56BindSessionsOtherVerifyErrors: on a session bound to a user,
// a verifier's auth.ErrOAuth and its (nil, nil) were answered 503, which
// invites a retry that cannot succeed; they get the go-sdk's own answers
// to them, 400 and 500.
func TestReview56BindSessionsOtherVerifyErrors(t *testing.T) {
	var mode atomic.Int64 // 0: accept; 1: ErrOAuth; 2: (nil, nil)
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		switch mode.Load() {
		case 1:
			return nil, fmt.Errorf("%w: the request is malformed", auth.ErrOAuth)
		case 2:
			return nil, nil
		}
		return &auth.TokenInfo{UserID: tok, Expiration: time.Now().Add(time.Hour)}, nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	srv := httptest.NewServer(token.BindSessions(verify, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{"ann", http.DefaultTransport}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for m, want := range map[int64]int{1: http.StatusBadRequest, 2: http.StatusInternalServerError} {
		mode.Store(m)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer ann")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("verify mode %d on the owner's session: %d, want %d", m, resp.StatusCode, want)
		}
	}
	mode.Store(0)
}

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

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview64jBindSessionsStreamOutlivesToken: behind BindSessions, the
// go-sdk client's stream of its session (the GET, which carries "the
// notifications and questions the server sends its client", as the root
// package's doc says) stays open once the token that opened it has
// expired, or been revoked at an Introspector's endpoint (with no cache:
// IntrospectionConfig.CacheTTL negative, whose doc bounds how long a
// revoked token is accepted by the cache's lifetime): every later request
// with that token is refused 401, but the stream goes on delivering what
// the server sends the session, for as long as the client keeps the
// connection. Not even the token's expiry, known to BindSessions (the
// TokenInfo's Expiration), ends it. No doc says a session's stream
// outlives its token.
func TestReview64jBindSessionsStreamOutlivesToken(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		exp := time.Now().Add(500 * time.Millisecond)
		verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
			if tok != "tok-ann" || !time.Now().Before(exp) {
				return nil, errors.Join(auth.ErrInvalidToken, errors.New("expired"))
			}
			return &auth.TokenInfo{UserID: "ann", Expiration: exp}, nil
		}
		r64jStreamAfter(t, verify, func() { time.Sleep(time.Until(exp) + 50*time.Millisecond) })
	})
	t.Run("revoked", func(t *testing.T) {
		var revoked atomic.Bool
		as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if revoked.Load() {
				io.WriteString(w, `{"active":false}`)
				return
			}
			exp := time.Now().Add(time.Hour).Unix()
			fmt.Fprintf(w, `{"active":true,"sub":"ann","aud":"mcp","exp":%d}`, exp)
		}))
		t.Cleanup(as.Close)
		in, err := token.NewIntrospector(token.IntrospectionConfig{
			Endpoint: as.URL, Audience: "mcp", CacheTTL: -1, NegativeCacheTTL: -1,
			ErrorHandler: func(error) {},
		})
		if err != nil {
			t.Fatal(err)
		}
		r64jStreamAfter(t, in.Verifier(), func() { revoked.Store(true) })
	})
}

// r64jStreamAfter opens a session as the holder of "tok-ann" behind
// BindSessions(verify), checks that its stream delivers, runs end (the
// token expires or is revoked), checks that a request with the token is
// refused 401, and fails the test if the stream still delivers.
func r64jStreamAfter(t *testing.T, verify auth.TokenVerifier, end func()) {
	t.Helper()
	srv, cs, tool, told := r64jOpenStream(t, verify)
	// The token expires, or is revoked: a request with it is refused.
	end()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer tok-ann")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request with the token on the session: %d, want 401", resp.StatusCode)
	}
	tool("late")
	select {
	case <-told:
		t.Errorf("the session's stream, opened with a token refused since, still delivers what the server sends (tools/list_changed)")
	case <-time.After(500 * time.Millisecond):
	}
}

// r64jOpenStream opens a session as the holder of "tok-ann" behind
// BindSessions(verify) over a server with a tool "ping", and returns once
// its stream delivers: tool adds a tool, whose tools/list_changed told
// receives on the session's stream.
func r64jOpenStream(t *testing.T, verify auth.TokenVerifier) (*httptest.Server, *mcp.ClientSession, func(string), chan struct{}) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	tool := func(name string) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	tool("ping")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(token.BindSessions(verify, h))
	t.Cleanup(srv.Close)

	told := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { told <- struct{}{} },
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{"tok-ann", http.DefaultTransport}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// The session's stream works while the token is valid: a tool added
	// is told on it. (Retried until the client's GET is open.)
	deadline := time.After(3 * time.Second)
	for n := 0; ; n++ {
		tool("early" + strings.Repeat("x", n))
		select {
		case <-told:
		case <-time.After(50 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("no notification on the session's stream while the token was valid")
		}
		break
	}
	time.Sleep(100 * time.Millisecond) // a retry's notice comes now, not later
	for len(told) > 0 {
		<-told
	}
	return srv, cs, tool, told
}

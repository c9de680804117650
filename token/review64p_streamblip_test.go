package token_test

import (
	"context"
	"errors"
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

// TestReview64pStreamSurvivesVerifierBlip: BindSessions' doc says a
// session's GET stream ends "once verify refuses its token (expired,
// revoked ...), or gives another user", and it tells a refusal (an error
// that unwraps to auth.ErrInvalidToken: 401) from a verify that could not
// judge the token (any other error, "the identity provider did not
// answer": 503, to be sent again). The recheck before each write of the
// stream takes any error as a refusal: one failed lookup at the identity
// provider (a single blip, the token still valid) ends the stream, and the
// notification being written then is lost (no EventStore: nothing
// replays it); the client is never told the server's tools changed.
func TestReview64pStreamSurvivesVerifierBlip(t *testing.T) {
	var blip, blipped atomic.Bool
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != "tok-ann" {
			return nil, auth.ErrInvalidToken
		}
		if blip.CompareAndSwap(true, false) {
			blipped.Store(true)
			return nil, errors.New("introspection endpoint: 502 Bad Gateway") // not a refusal
		}
		return &auth.TokenInfo{UserID: "ann", Expiration: time.Now().Add(time.Hour)}, nil
	}
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

	// The stream delivers (retried until the client's GET is open).
	deadline := time.After(3 * time.Second)
	for n := 0; ; n++ {
		tool("early" + strings.Repeat("x", n))
		select {
		case <-told:
		case <-time.After(50 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("no notification on the session's stream")
		}
		break
	}
	time.Sleep(100 * time.Millisecond)
	for len(told) > 0 {
		<-told
	}

	// One lookup fails (the identity provider blips), then all is well.
	blip.Store(true)
	tool("during")
	select {
	case <-told:
	case <-time.After(2 * time.Second):
		t.Fatalf("a tools/list_changed sent while verify failed once (not a refusal; blipped=%v) "+
			"never reached the client: the stream ended and the notification was lost", blipped.Load())
	}
}

package mcpguard

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64StalledClientReleasesCall (64i's lead): a caller over
// Streamable HTTP that sends a tools/call with a progress token and then
// stops reading (its receive window full) held the call for as long as it
// kept its connection: the handler's progress notifications are written
// by the go-sdk on the handler's goroutine, and that write does not end.
// Its in-flight slot was held (every other call of the user refused
// CONCURRENCY_LIMIT_EXCEEDED), its record never written, and Wait never
// returned. The guard now waits notifyWait for a notification, then lets
// the handler go on: the call ends, its slot is given back, Wait returns.
func TestReview64StalledClientReleasesCall(t *testing.T) {
	defer func(d time.Duration) { notifyWait = d }(notifyWait)
	notifyWait = 200 * time.Millisecond

	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "chatty", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) {
		return &Identity{Principal: &policy.Principal{Subject: "ann"}}, nil
	})
	g, err := New(pol, auth, &Options{Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	big := strings.Repeat("x", 64<<10)
	ended := make(chan struct{})
	srv.AddTool(&mcp.Tool{Name: "chatty", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			defer close(ended)
			// 32 MiB of progress: more than any socket buffers hold.
			for i := range 512 {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: big})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)

	// A client that sends the call and never reads.
	conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chatty","arguments":{},"_meta":{"progressToken":"p"}}}`
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
		strings.TrimPrefix(hs.URL, "http://"), len(body), body)

	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler is still held in a notification to a client that does not read")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v: the call is still under way", err)
	}
	// The user's slot is free: another call of ann's is admitted.
	d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "ann", Tool: "chatty", Calls: 1})
	if !d.Allowed {
		t.Fatalf("another call of the user: %+v, want admitted (the stalled call's slot given back)", d)
	}
	lim.Release(d)
}

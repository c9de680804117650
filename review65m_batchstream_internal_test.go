package mcpguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65mBatchSharesStream: Guard.Wait's doc (65b) says that past
// the wait "the later notifications to the same stream fail at once until
// it ends (over stateful Streamable HTTP the call's own response stream
// ...)". A client on protocol 2025-03-26 may send two calls in one POST
// (a JSON-RPC batch): go-sdk v1.8.0 writes both calls' messages to that
// POST's one response stream. The guard keys a stream by the call's
// request, so once the flood's write to the stream stalls, the other
// call's first notification to the same stream is not failed at once
// (errEarlierPending): it waits out notifyWait again (errNotReading).
func TestReview65mBatchSharesStream(t *testing.T) {
	defer func(d time.Duration) { notifyWait = d }(notifyWait)
	notifyWait = 300 * time.Millisecond

	g := annGuard(t, "flood", "tick")
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	big := strings.Repeat("x", 64<<10)
	stalled := make(chan error, 1)
	stalledSeen := make(chan struct{})
	tickErr := make(chan error, 1)
	release := make(chan struct{})
	var handlers sync.WaitGroup
	srv.AddTool(&mcp.Tool{Name: "flood", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			handlers.Add(1)
			defer handlers.Done()
			for i := range 512 {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: "a", Progress: float64(i), Message: big})
				if err != nil {
					stalled <- err
					break
				}
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "tick", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			handlers.Add(1)
			defer handlers.Done()
			select {
			case <-stalledSeen:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			tickErr <- req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: "b", Progress: 1})
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-03-26"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	host := strings.TrimPrefix(hs.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		conn.Close()
		close(release)
		handlers.Wait()
	}()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `[{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{"progressToken":"a"}}},` +
		`{"jsonrpc":"2.0","id":"x2","method":"tools/call","params":{"name":"tick","arguments":{},"_meta":{"progressToken":"b"}}}]`
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-03-26\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", host, cs.ID(), len(body), body)

	select {
	case err := <-stalled:
		if err != errNotReading {
			t.Fatalf("the flood's notification failed with %v, want errNotReading", err)
		}
	case <-ctx.Done():
		t.Fatal("the flood's notifications were never stalled")
	}
	close(stalledSeen)
	select {
	case err := <-tickErr:
		if err != errEarlierPending {
			t.Errorf("the batch's other call's notification to the same stalled stream: %v; "+
				"want errEarlierPending (failed at once)", err)
		}
	case <-ctx.Done():
		t.Fatal("the tick's notification never returned")
	}
}

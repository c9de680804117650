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

// TestReview65bStalledStreamSparesOthers: over stateful Streamable HTTP a
// session has a stream per POST (its call's progress goes there: go-sdk
// v1.8.0 routes a message sent with the call's context to its request's
// stream, streamable.go:1847-1863) and the standalone GET stream (where one
// sent with a detached context goes), each written apart (a stream's own
// lock, streamable.go:1899). A client that stopped reading one of them
// (one call's POST, or its GET) stalls the writes to that stream only; yet
// the guard marked the whole session stalled, and the progress of a call
// on another, healthy stream failed at once (errEarlierPending): its
// client, reading, got none of it.
func TestReview65bStalledStreamSparesOthers(t *testing.T) {
	for _, stuck := range []string{"post", "get"} {
		t.Run(stuck, func(t *testing.T) { review65bStalledStream(t, stuck) })
	}
}

func review65bStalledStream(t *testing.T, stuck string) {
	defer func(d time.Duration) { notifyWait = d }(notifyWait)
	notifyWait = 200 * time.Millisecond

	g := annGuard(t, "flood", "tick")
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	big := strings.Repeat("x", 64<<10)
	stalled := make(chan error, 1) // the flood's first failed notification
	release := make(chan struct{})
	var floods sync.WaitGroup
	srv.AddTool(&mcp.Tool{Name: "flood", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			floods.Add(1)
			defer floods.Done()
			nctx := ctx // to the call's POST stream
			if stuck == "get" {
				nctx = context.Background() // to the session's GET stream
			}
			// 32 MiB of progress: more than any socket buffers hold.
			for i := range 512 {
				err := req.Session.NotifyProgress(nctx, &mcp.ProgressNotificationParams{
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
			var errs []string
			for i := range 3 {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i)}); err != nil {
					errs = append(errs, err.Error())
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(errs, "; ")}}}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	// A healthy client, reading everything it is sent.
	var mu sync.Mutex
	got := 0
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if r.Params.ProgressToken == "b" {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL,
		DisableStandaloneSSE: stuck == "get"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// Another connection of the session's client stops reading: the
	// response stream of one call (post), or the session's GET stream (get).
	host := strings.TrimPrefix(hs.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // the flood's call ends before its session is closed
		conn.Close()
		close(release)
		floods.Wait()
	}()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	hdr := fmt.Sprintf("Host: %s\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n", host, cs.ID(), cs.InitializeResult().ProtocolVersion)
	post := func(w net.Conn, body string) {
		fmt.Fprintf(w, "POST / HTTP/1.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			hdr, len(body), body)
	}
	if stuck == "get" {
		fmt.Fprintf(conn, "GET / HTTP/1.1\r\n%s\r\n", hdr)
		time.Sleep(50 * time.Millisecond) // the GET claims the stream
		// The flood's call itself, from the healthy client.
		go cs.CallTool(ctx, &mcp.CallToolParams{Name: "flood", Arguments: map[string]any{}})
	} else {
		post(conn, `{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{"progressToken":"a"}}}`)
	}
	select {
	case err := <-stalled:
		if err != errNotReading {
			t.Fatalf("the flood's notification failed with %v, want errNotReading", err)
		}
	case <-ctx.Done():
		t.Fatal("the flood's notifications were never stalled")
	}

	// A call on a healthy stream of the same session sends progress.
	p := &mcp.CallToolParams{Name: "tick", Arguments: map[string]any{}}
	p.SetProgressToken("b")
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	time.Sleep(50 * time.Millisecond) // the last progress is handled
	mu.Lock()
	n := got
	mu.Unlock()
	if text != "" || n != 3 {
		t.Errorf("a call on a healthy stream while another stream (%s) of its session is stalled: "+
			"its progress failed (%q), its client got %d of 3 progress notifications; want all "+
			"sent (the stalled writes block their own stream only)", stuck, text, n)
	}
}

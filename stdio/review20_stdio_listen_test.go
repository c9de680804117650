//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stdio

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview20StopEndsListen: the go-sdk's client speaks 2026-07-28 over
// stdio by default and, when it handles tools/list_changed and the server
// announces it (the SDK's servers with tools do), opens a
// subscriptions/listen call that the server holds until it is cancelled.
// At the stop the transport waited for that call like any other: every
// graceful stop took the whole DrainTimeout and logged requests
// unanswered, then the SDK dropped the listen's answer. The transport now
// cancels the listen calls in flight when it starts to drain (as the
// client would, with notifications/cancelled), so the stop ends as soon as
// the real calls are answered, and the client reads the listen's end. The
// same holds at the end of input (a client gone without cancelling it).
func TestReview20StopEndsListen(t *testing.T) {
	for _, how := range []string{"stop", "end_of_input"} {
		t.Run(how, func(t *testing.T) { testDrainEndsListen(t, how) })
	}
}

func testDrainEndsListen(t *testing.T, how string) {
	const drain = 4 * time.Second
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	logf := logFile(t)
	stop := make(chan struct{})
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logf, DrainTimeout: drain, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil
		})
	ran := make(chan error, 1)
	go func() { ran <- server.Run(context.Background(), tr) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	s := tr.Reader.(*reader).s
	listening := false
	for deadline := time.Now().Add(5 * time.Second); !listening && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n, _ := s.unanswered()
		listening = n == 1
	}
	if !listening {
		t.Fatal("no subscriptions/listen call in flight: the client did not open one")
	}

	start := time.Now()
	if how == "stop" {
		close(stop)
	} else {
		inW.Close() // no notifications/cancelled from the client
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(drain + 3*time.Second):
		t.Fatalf("server.Run did not return after the %s", how)
	}
	if took := time.Since(start); took > drain/2 {
		t.Errorf("the %s took %v to end the session with no call under way but the listen, want well under the DrainTimeout %v", how, took.Round(time.Millisecond), drain)
	}
	logs, _ := os.ReadFile(logf.Name())
	if strings.Contains(string(logs), "unanswered") {
		t.Errorf("the %s logged requests unanswered:\n%s", how, logs)
	}
}

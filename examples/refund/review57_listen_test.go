package main

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview57HTTPStopEndsListens: a go-sdk client on protocol 2026-07-28
// that handles list changes holds a subscriptions/listen request open, which
// the go-sdk ends only when the request's context ends. SIGTERM in HTTP
// mode waited the whole 10 s grace for it, then logged the stop as a
// failure ("HTTP connections still open 10 s after the stop"): every stop
// with such a client connected. The stop ends the listens at once, and the
// server exits 0 promptly.
func TestReview57HTTPStopEndsListens(t *testing.T) {
	cmd := exec.Command(bin, "-http", "127.0.0.1:0")
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no address; stderr:\n%s", &logs)
		}
		s := logs.String()
		if i := strings.Index(s, "url=http://"); i >= 0 {
			if j := strings.Index(s[i:], "/mcp"); j >= 0 {
				base = s[i+len("url=") : i+j]
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"}); we != nil {
		t.Fatal(we)
	}
	// The listen has reached the server.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		listening := false
		for _, r := range received(t, base) {
			listening = listening || r.Method == "subscriptions/listen"
		}
		if listening {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client opened no subscriptions/listen: the test proves nothing; received %+v", received(t, base))
		}
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v; stderr:\n%s", err, &logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGTERM; stderr:\n%s", &logs)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %v with a client listening, want well under the 10 s grace", took)
	}
	if strings.Contains(logs.String(), "still open") {
		t.Errorf("the stop is logged as a failure:\n%s", &logs)
	}
}

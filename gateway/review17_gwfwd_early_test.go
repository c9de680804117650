//go:build unix

package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

// smallBuffers sets a socket's send and receive buffers to their least,
// so that a body of a few MiB fills them long before it is written, as it
// does on a network.
func smallBuffers(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		if err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096); err == nil {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096)
		}
	}); cerr != nil {
		return cerr
	}
	return err
}

// TestReview17EarlyAnswerRelayed checks the gateway's own client against a
// downstream that answers before it has read the request's body and then
// stops reading it: a go-sdk server (http.MaxBytesReader under
// MaxRequestBodyBytes) or any server whose body limit is below the
// gateway's MaxBodyBytes answers 413 and closes, and the client's write of
// the rest fails. The downstream's answer is relayed, as net/http's
// Transport relays it, not replaced by a 502 for the failed write.
func TestReview17EarlyAnswerRelayed(t *testing.T) {
	ln, err := (&net.ListenConfig{Control: smallBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "downstream: body too large", http.StatusRequestEntityTooLarge)
			return
		}
		io.WriteString(w, "read")
	}))
	down.Listener = ln
	down.Start()
	t.Cleanup(down.Close)
	client := func() *upstreamClient {
		c := newUpstreamClient()
		c.dialer.Control = smallBuffers
		return c
	}
	t.Run("upstream_client", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, down.URL+"/mcp", strings.NewReader(strings.Repeat("a", 3<<20)))
		resp, err := client().RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip: %v; want the downstream's 413", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "body too large") {
			t.Errorf("answer %d %q, want the downstream's 413", resp.StatusCode, b)
		}
	})
	t.Run("through_gateway", func(t *testing.T) {
		g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Transport: client(), Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		gw := newServer(t, g)
		status, body, err := readAnswer(t, gw.URL+"/mcp", http.MethodPost, call(`1`, "echo", `{"x":"`+strings.Repeat("a", 3<<20)+`"}`))
		if err != nil || status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "body too large") {
			t.Errorf("answer %d %q (%v), want the downstream's 413", status, body, err)
		}
	})
}

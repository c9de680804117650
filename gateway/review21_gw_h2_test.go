//go:build unix

package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReview21H2StalledStream checks the write guard over HTTP/2: a
// client (Go's, its window per stream 64 KiB) that sends a call and never
// reads the answer's body stalls the stream by flow control, not the
// connection. A write that does not complete within the timeout resets
// the stream (http2's SetWriteDeadline), and the handler returns, for the
// relayed answers and for the gateway's own.
func TestReview21H2StalledStream(t *testing.T) {
	for _, mode := range []string{"plain_json", "plain_sse", "pins_json", "filter_json", "batch_json", "batch_sse", "own"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sse := strings.HasSuffix(mode, "_sse")
			size := 512 << 10
			o := Options{Timeout: 300 * time.Millisecond, Logger: discardLogger()}
			body := inMode(&o, strings.TrimSuffix(strings.TrimSuffix(mode, "_json"), "_sse"))
			switch mode {
			case "batch_json", "batch_sse":
				body = "[" + call(`1`, "echo", "") + "," + call(`2`, "echo", "") + "]"
			case "own":
				body = call(`"`+strings.Repeat("i", size)+`"`, "admin_delete", "") // 403 for the viewer
			}
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				msg := `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"pad":"` + strings.Repeat("a", size) + `"}}`
				if sse {
					w.Header().Set("Content-Type", "text/event-stream")
					msg = "event: message\ndata: " + msg + "\n\n"
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				io.WriteString(w, msg)
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &o)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{}, 1)
			gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { done <- struct{}{} }()
				if r.ProtoMajor != 2 {
					t.Errorf("the gateway's request is %s, want HTTP/2", r.Proto)
				}
				g.ServeHTTP(w, r)
			}))
			gw.Config.Protocols = new(http.Protocols)
			gw.Config.Protocols.SetUnencryptedHTTP2(true)
			gw.Start()
			t.Cleanup(gw.Close)
			tr := &http.Transport{Protocols: new(http.Protocols), HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}}
			tr.Protocols.SetUnencryptedHTTP2(true)
			t.Cleanup(tr.CloseIdleConnections)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", admin)
			if mode == "own" {
				req.Header.Set("Authorization", viewer)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() }) // and read nothing
			select {
			case <-done:
			case <-time.After(8 * time.Second): // a busy machine under -race
				t.Fatalf("HTTP/2: the gateway's handler still runs 8 s after a client stopped reading (timeout 300 ms)")
			}
		})
	}
}

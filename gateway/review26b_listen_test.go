package gateway

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// silentStream is a downstream whose every answer is an event stream that
// stays silent until its request ends; open counts the requests it holds.
func silentStream(open *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open.Add(1)
		defer open.Add(-1)
		io.Copy(io.Discard, r.Body) // so that net/http watches the connection
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// waitZero waits up to d for n to be 0.
func waitZero(t *testing.T, n *atomic.Int64, d time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for n.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d still open %v after the client closed its connection", what, n.Load(), d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReview26bStreamWithBodyEndsWithItsClient: a GET stream ends with its
// client (package doc). A GET that carries a body the gateway never read
// did not: net/http watches an HTTP/1 connection for its client's leaving
// only once the request's body has been read to its end, so the handler,
// the downstream's stream (at a go-sdk downstream, the session's one
// standalone stream: the client's next GET got 409) and its connection
// were held for good once the client closed its connection.
func TestReview26bStreamWithBodyEndsWithItsClient(t *testing.T) {
	for _, pins := range []bool{false, true} {
		// net/http itself discards a body of less than 256 KiB that the
		// handler left unread as the answer's header is written.
		big := "Content-Length: 300000\r\n\r\n" + strings.Repeat(" ", 300000)
		for _, body := range []string{"Content-Length: 2\r\n\r\n{}", big} {
			name := "plain"
			if pins {
				name = "pins"
			}
			if len(body) > 1000 {
				name += "_big"
			}
			t.Run(name, func(t *testing.T) {
				var down, handlers atomic.Int64
				ds := newServer(t, silentStream(&down))
				o := &Options{Timeout: 20 * time.Second, Logger: discardLogger()}
				if pins {
					o.Pins = TrustOnFirstUse()
				}
				g, err := New(ds.URL, DemoTokens(), o)
				if err != nil {
					t.Fatal(err)
				}
				gw := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					handlers.Add(1)
					defer handlers.Add(-1)
					g.ServeHTTP(w, r)
				}))
				// Run first: a handler left waiting on the downstream
				// would hold gw's Close for good.
				t.Cleanup(ds.CloseClientConnections)
				conn, err := net.Dial("tcp", gw.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				req := "GET /mcp HTTP/1.1\r\nHost: " + gw.Listener.Addr().String() + "\r\nAuthorization: Bearer viewer-token\r\nAccept: text/event-stream\r\n" + body
				// The body may not fit the sockets' buffers: the gateway
				// need not read it.
				go conn.Write([]byte(req))
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want 200", resp.StatusCode)
				}
				time.Sleep(200 * time.Millisecond)
				if h, d := handlers.Load(), down.Load(); h != 1 || d != 1 {
					t.Fatalf("%d handlers, %d downstream streams, want 1 each", h, d)
				}
				conn.Close()
				waitZero(t, &handlers, 3*time.Second, "gateway handlers")
				waitZero(t, &down, 3*time.Second, "downstream streams")
			})
		}
	}
}

// TestReview26bStreamBodyOverLimit: the body of a GET, read and dropped,
// is bounded by MaxBodyBytes as a POST's is, and one over it is refused
// unforwarded.
func TestReview26bStreamBodyOverLimit(t *testing.T) {
	var down atomic.Int64
	ds := newServer(t, silentStream(&down))
	g, err := New(ds.URL, DemoTokens(), &Options{MaxBodyBytes: 1000, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(strings.Repeat(" ", 2000))
		if chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		req, err := http.NewRequest(http.MethodGet, gw.URL+"/mcp", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", viewer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked %v: status %d, want 413", chunked, resp.StatusCode)
		}
	}
	if n := down.Load(); n != 0 {
		t.Fatalf("%d requests forwarded", n)
	}
}

// TestReview26bListenClientGoneLogged: a subscriptions/listen stream ends
// with its client, as a GET's does, and is logged so: its client's leaving
// before the downstream's header came was logged as the downstream's
// failure ("upstream error", at Warn), and after it as a relay that failed
// with its client still there (client_gone false).
func TestReview26bListenClientGoneLogged(t *testing.T) {
	listen := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`
	for _, early := range []bool{true, false} {
		name := "after_header"
		if early {
			name = "before_header"
		}
		t.Run(name, func(t *testing.T) {
			var down atomic.Int64
			h := silentStream(&down)
			if early {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					down.Add(1)
					defer down.Add(-1)
					io.Copy(io.Discard, r.Body)
					<-r.Context().Done() // no header
				})
			}
			ds := newServer(t, h)
			var logs lockedLog
			g, err := New(ds.URL, DemoTokens(), &Options{Timeout: 20 * time.Second, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			var handlers atomic.Int64
			gw := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				handlers.Add(1)
				defer handlers.Add(-1)
				g.ServeHTTP(w, r)
			}))
			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(listen))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			time.AfterFunc(300*time.Millisecond, cancel)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body) // until the cancel
				resp.Body.Close()
			}
			waitZero(t, &handlers, 3*time.Second, "gateway handlers")
			waitZero(t, &down, 3*time.Second, "downstream streams")
			out := logs.String()
			if strings.Contains(out, `"upstream error"`) || strings.Contains(out, `"client_gone":false`) {
				t.Fatalf("a listen its client ended was logged as the downstream's failure:\n%s", out)
			}
		})
	}
}

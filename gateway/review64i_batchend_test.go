package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// r64iTicking is a downstream whose every request is answered with an
// event stream that sends a notification every 50 ms until its request
// ends; open counts the streams it holds.
func r64iTicking(open *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		open.Add(1)
		defer open.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
				if _, err := io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","+
					"\"params\":{\"level\":\"info\",\"data\":\"tick\"}}\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	})
}

// TestReview64iEndStreamsBatchListen: EndStreams ends "the event streams
// the gateway relays (GET streams and subscriptions/listen ones)", for a
// server's shutdown, so that http.Server.Shutdown waits for the calls only.
// A subscriptions/listen sent as a batch member (now counted against
// MaxStreams as a single one is) was not ended: its downstream stream,
// kept alive by events each within Timeout, held the batch's answer, its
// downstream connection and its stream place open after EndStreams, so
// Shutdown waited for it until its own deadline and then cut every call.
func TestReview64iEndStreamsBatchListen(t *testing.T) {
	for _, accept := range []string{"application/json", "application/json, text/event-stream"} {
		t.Run(accept, func(t *testing.T) {
			var open atomic.Int64
			g, base := r27Gateway(t, r64iTicking(&open), Options{Timeout: 3 * time.Second}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan string, 1)
			go func() { done <- r64iBatch(ctx, base, accept) }()
			for deadline := time.Now().Add(3 * time.Second); open.Load() == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the batch's listen did not reach the downstream")
				}
			}
			g.EndStreams()
			select {
			case body := <-done:
				if !strings.Contains(body, `"id":"l-1"`) || !strings.Contains(body, "shutting down") {
					t.Errorf("answer %q, want the listen's id and the shutdown's reason", body)
				}
			case <-time.After(2 * time.Second):
				t.Errorf("the batch's subscriptions/listen stream still open 2 s after EndStreams "+
					"(downstream streams open: %d, stream places held: %d)", open.Load(), r27Counted(g))
				cancel()
				<-done
			}
			waitZero(t, &open, 4*time.Second, "downstream streams")
			r27WaitCounted(t, g, 0, "after EndStreams")
			// One sent after EndStreams is answered so, never forwarded.
			body := r64iBatch(context.Background(), base, accept)
			if !strings.Contains(body, `"id":"l-1"`) || !strings.Contains(body, "shutting down") {
				t.Errorf("answer after EndStreams %q, want the listen's id and the shutdown's reason", body)
			}
			if n := open.Load(); n != 0 {
				t.Errorf("%d listens forwarded after EndStreams", n)
			}
		})
	}
}

// r64iBatch sends a batch of one subscriptions/listen to the gateway base,
// accepting accept, and returns its answer's body (or the error).
func r64iBatch(ctx context.Context, base, accept string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader("["+r27Listen+"]"))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Accept", accept)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return string(b) + " (" + err.Error() + ")"
	}
	return string(b)
}

// r64iFlood is a downstream whose every request is answered with an event
// stream of 32 KiB events, sent as fast as its client takes them, until
// its request ends.
func r64iFlood() http.Handler {
	ev := []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"" +
		strings.Repeat("x", 32<<10) + "\"}}\n\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil {
			if _, err := w.Write(ev); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
}

// TestReview64iEndStreamsStalledReader: the examples/gateway README says
// that at a shutdown the gateway ends the GET and subscriptions/listen
// streams it relays and "a shutdown with no call under way is
// immediate" (EndStreams, registered with RegisterOnShutdown, is what
// lets Shutdown wait for the calls only). A stream whose client stopped
// reading (its receive window full) was not ended by EndStreams: its
// handler, blocked in a write, went on until the write guard ended the
// write, up to Timeout (30 s by default) after it began, and Shutdown
// waited for it that long.
func TestReview64iEndStreamsStalledReader(t *testing.T) {
	for _, pins := range []bool{false, true} {
		for _, listen := range []bool{false, true} {
			name := map[bool]string{false: "get", true: "listen"}[listen] + map[bool]string{false: "", true: "_pins"}[pins]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r64iStalledReader(t, pins, listen)
			})
		}
	}
}

func r64iStalledReader(t *testing.T, pins, listen bool) {
	var active atomic.Int64
	ds := newServer(t, r64iFlood())
	t.Cleanup(ds.CloseClientConnections)
	o := &Options{Timeout: 10 * time.Second, Logger: discardLogger()}
	if pins {
		o.Pins = TrustOnFirstUse()
	}
	g, err := New(ds.URL+"/mcp", DemoTokens(), o)
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		g.ServeHTTP(w, r)
	}))
	addr := strings.TrimPrefix(gw.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	req := "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: " + viewer + "\r\nAccept: text/event-stream\r\n\r\n"
	if listen {
		req = "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: " + viewer +
			"\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json" +
			"\r\nMcp-Protocol-Version: 2026-07-28\r\nContent-Length: " + strconv.Itoa(len(r27Listen)) + "\r\n\r\n" + r27Listen
	}
	io.WriteString(conn, req)
	// The client reads the header and stops reading; the gateway's writes
	// fill its window and block.
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if active.Load() != 1 {
		t.Fatalf("%d handlers active, want the stream's", active.Load())
	}
	start := time.Now()
	g.EndStreams()
	for active.Load() != 0 {
		if time.Since(start) > 2500*time.Millisecond {
			t.Errorf("the stream of a client that stopped reading still relayed 2.5 s after EndStreams (Timeout 10 s)")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn.Close()
}

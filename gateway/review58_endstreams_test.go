package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// r58Listen is a subscriptions/listen request.
const r58Listen = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`

// r58Streams is a downstream whose every GET and subscriptions/listen is an
// event stream: first, the bytes of first, then silence until its request
// ends; open counts the streams it holds, seen the requests it got. A
// tools/call is answered after a second, in JSON.
func r58Streams(first string, open, seen *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"tools/call"`) {
			time.Sleep(time.Second)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
			return
		}
		open.Add(1)
		defer open.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// r58Open opens a stream through gw: a GET, or a subscriptions/listen.
func r58Open(t *testing.T, gw string, listen bool) *http.Response {
	t.Helper()
	method, body := http.MethodGet, ""
	if listen {
		method, body = http.MethodPost, r58Listen
	}
	req, err := http.NewRequest(method, gw+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if listen {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// r58Rest reads the rest of body within 3 s.
func r58Rest(t *testing.T, body io.Reader) (string, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(body)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return string(r.b), r.err
	case <-time.After(3 * time.Second):
		t.Fatal("the stream did not end within 3 s")
		return "", nil
	}
}

// TestReview58EndStreams: EndStreams ends the GET and subscriptions/listen
// streams the gateway relays, cleanly (the client reads the events relayed
// and then the answer's end, not an error), and the downstream's requests
// end; through the gateway's own client and net/http's Transport, with and
// without pins (whose relay checks each event).
func TestReview58EndStreams(t *testing.T) {
	for _, pins := range []bool{false, true} {
		for _, std := range []bool{false, true} {
			for _, listen := range []bool{false, true} {
				name := map[bool]string{false: "get", true: "listen"}[listen] +
					map[bool]string{false: "", true: "_pins"}[pins] + map[bool]string{false: "", true: "_std"}[std]
				t.Run(name, func(t *testing.T) {
					var open, seen atomic.Int64
					const first = "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"
					ds := newServer(t, r58Streams(first, &open, &seen))
					o := &Options{Timeout: 20 * time.Second, Logger: discardLogger()}
					if pins {
						o.Pins = TrustOnFirstUse()
					}
					if std {
						o.Transport = NewTransport()
					}
					g, err := New(ds.URL, DemoTokens(), o)
					if err != nil {
						t.Fatal(err)
					}
					gw := newServer(t, g)
					t.Cleanup(ds.CloseClientConnections)
					resp := r58Open(t, gw.URL, listen)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("status %d", resp.StatusCode)
					}
					br := bufio.NewReader(resp.Body)
					line, err := br.ReadString('\n')
					if err != nil || line != "id: 1\n" {
						t.Fatalf("first line %q, %v", line, err)
					}
					g.EndStreams()
					rest, err := r58Rest(t, br)
					if err != nil {
						t.Fatalf("stream ended with %v after %q, want a clean end", err, rest)
					}
					if !strings.HasSuffix(rest, "\n\n") {
						t.Errorf("rest of the stream %q, want the first event's end", rest)
					}
					waitZero(t, &open, 3*time.Second, "downstream streams")
				})
			}
		}
	}
}

// TestReview58EndStreamsInsideAnEvent: a stream whose downstream stopped
// inside an event when EndStreams ended it is cut as a broken stream is
// (the client reads an error): a clean end there would have a go-sdk
// client dispatch the cut event and fail its session.
func TestReview58EndStreamsInsideAnEvent(t *testing.T) {
	var open, seen atomic.Int64
	ds := newServer(t, r58Streams("id: 1\ndata: {\"jsonrpc\":", &open, &seen))
	g, err := New(ds.URL, DemoTokens(), &Options{Timeout: 20 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	t.Cleanup(ds.CloseClientConnections)
	resp := r58Open(t, gw.URL, false)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "id: 1\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	for open.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	g.EndStreams()
	if rest, err := r58Rest(t, br); err == nil {
		t.Fatalf("stream cut inside an event ended cleanly after %q", rest)
	}
	waitZero(t, &open, 3*time.Second, "downstream streams")
}

// TestReview58StreamsAfterEndStreams: once EndStreams has run, a GET is
// answered with an event stream that ends at once, asking for a
// reconnection, and a subscriptions/listen is refused 503 -32003; neither
// is forwarded. A tools/call is forwarded as before.
func TestReview58StreamsAfterEndStreams(t *testing.T) {
	var open, seen atomic.Int64
	ds := newServer(t, r58Streams("", &open, &seen))
	g, err := New(ds.URL, DemoTokens(), &Options{Timeout: 20 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	g.EndStreams()
	g.EndStreams() // twice is fine

	resp := r58Open(t, gw.URL, false)
	rest, err := r58Rest(t, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		!strings.Contains(rest, "\nretry: ") || !strings.Contains(rest, "shutting down") {
		t.Errorf("GET after EndStreams: %d %q %q %v; want a stream that ends at once with a retry", resp.StatusCode, resp.Header.Get("Content-Type"), rest, err)
	}
	resp = r58Open(t, gw.URL, true)
	rest, err = r58Rest(t, resp.Body)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(rest, `"code":-32003`) || !strings.Contains(rest, `"id":1`) {
		t.Errorf("listen after EndStreams: %d %q %v; want 503 with -32003 and the request's id", resp.StatusCode, rest, err)
	}
	if n := seen.Load(); n != 0 {
		t.Fatalf("%d streams forwarded after EndStreams", n)
	}
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lookup","arguments":{}}}`))
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	cr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(cr.Body)
	cr.Body.Close()
	if cr.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) {
		t.Errorf("tools/call after EndStreams: %d %s", cr.StatusCode, b)
	}
}

// TestReview58ShutdownWaitsForCallsNotStreams: with EndStreams registered
// on the server's shutdown, Shutdown returns as soon as the calls under
// way are answered, though a client held a GET stream open, and the
// call's client gets its answer. Without it, the stream held Shutdown
// until its context ran out.
func TestReview58ShutdownWaitsForCallsNotStreams(t *testing.T) {
	var open, seen atomic.Int64
	ds := newServer(t, r58Streams("", &open, &seen))
	t.Cleanup(ds.CloseClientConnections)
	g, err := New(ds.URL, DemoTokens(), &Options{Timeout: 20 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewUnstartedServer(g)
	gw.Config.RegisterOnShutdown(g.EndStreams)
	gw.Start()
	t.Cleanup(gw.Close)

	stream := r58Open(t, gw.URL, false)
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", stream.StatusCode)
	}
	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lookup","arguments":{}}}`))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- answer{resp.StatusCode, string(b), err}
	}()
	for seen.Load() < 2 { // the GET and the call reached the downstream
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := gw.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Shutdown took %v with one call of a second under way", d)
	}
	a := <-answered
	if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) {
		t.Errorf("the call under way at shutdown: %d %q %v; want its answer", a.status, a.body, a.err)
	}
	if _, err := r58Rest(t, stream.Body); err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("the GET stream ended with %v, want a clean end", err)
	}
}

// TestReview58EndStreamsBeforeTheHeader: a stream EndStreams ends while the
// gateway still waits for the downstream's header was taken for a client
// gone: nothing was written, and net/http answered 200 with an empty body
// and no Content-Type. It is answered as a stream asked for after
// EndStreams: an event stream that ends at once, asking to reconnect.
func TestReview58EndStreamsBeforeTheHeader(t *testing.T) {
	var waiting atomic.Int64
	ds := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waiting.Add(1)
		<-r.Context().Done() // no header
	}))
	t.Cleanup(ds.CloseClientConnections)
	g, err := New(ds.URL, DemoTokens(), &Options{Timeout: 20 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	got := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, gw.URL+"/mcp", nil)
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			resp = nil
		}
		got <- resp
	}()
	for waiting.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	g.EndStreams()
	resp := <-got
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	rest, err := r58Rest(t, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(rest, "\nretry: ") {
		t.Errorf("GET ended before its header: %d %q %q %v; want an event stream asking to reconnect", resp.StatusCode, resp.Header.Get("Content-Type"), rest, err)
	}
}

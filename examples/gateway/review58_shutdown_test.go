package main

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReview58ShutdownKeepsACallsAnswer: a call under way at shutdown
// whose downstream answers within --timeout keeps its answer, though a
// client holds a GET event stream open. The gateway gave requests a fixed
// 5 s (here 200 ms), which every client's GET stream used up, and then
// closed the connections left: the call's client lost its answer (a refund
// that ran, answered to no one), and every shutdown took the full grace.
// Now the streams end at once and the calls get --timeout.
func TestReview58ShutdownKeepsACallsAnswer(t *testing.T) {
	oldArgs, oldFlags, oldGrace := os.Args, flag.CommandLine, shutdownGrace
	t.Cleanup(func() { os.Args, flag.CommandLine, shutdownGrace = oldArgs, oldFlags, oldGrace })
	shutdownGrace = 200 * time.Millisecond

	var seen atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen.Add(1)
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		if strings.Contains(string(body), `"tools/call"`) {
			time.Sleep(time.Second) // past the old grace, within --timeout
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	t.Cleanup(down.Close)
	t.Cleanup(down.CloseClientConnections)
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--timeout", "5")
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer viewer-token")
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}}`))
		req.Header.Set("Authorization", "Bearer viewer-token")
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
	for seen.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	stop()
	took := time.Since(start)
	a := <-answered
	if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) {
		t.Errorf("the call under way at shutdown: %d %q %v; want its answer\nlogs:\n%s", a.status, a.body, a.err, logs)
	}
	if took > 4*time.Second {
		t.Errorf("shutdown took %v with a call of one second under way", took)
	}
	if _, err := io.ReadAll(stream.Body); err != nil {
		t.Errorf("the GET stream ended with %v, want a clean end", err)
	}
}

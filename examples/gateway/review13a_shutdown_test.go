package main

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShutdownEndsAnEndlessAnswer: at shutdown, the connections left after
// the grace are closed, and a forwarded POST's answer is read on (6c1428a)
// for its outcome record. An answer that never ends (progress events, each
// within --timeout of the last) was read on past run's wait of --timeout
// and 5 s: run returned with the call still running and its outcome event
// lost. Once the client's connection is gone, the answer is read for at
// most --timeout more, so its outcome is recorded within the wait.
func TestShutdownEndsAnEndlessAnswer(t *testing.T) {
	oldArgs, oldFlags, oldGrace := os.Args, flag.CommandLine, shutdownGrace
	t.Cleanup(func() { os.Args, flag.CommandLine, shutdownGrace = oldArgs, oldFlags, oldGrace })
	shutdownGrace = 200 * time.Millisecond

	entered := make(chan struct{}, 1)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		entered <- struct{}{}
		for {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(down.Close)
	t.Cleanup(down.CloseClientConnections) // first: a call still read would keep Close waiting
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--audit", auditPath, "--timeout", "1")
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}}`))
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-entered
	start := time.Now()
	stop() // returns when run has returned: in the binary, the process exits here
	b, _ := os.ReadFile(auditPath)
	if !strings.Contains(string(b), `"outcome"`) {
		t.Errorf("no outcome event in the audit file when run returned (after %v):\n%s\nlogs:\n%s", time.Since(start).Round(time.Millisecond), b, logs)
	}
}

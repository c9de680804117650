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

// TestShutdownPastTheGraceKeepsTheOutcome: a forwarded call still running
// when the shutdown grace runs out (the downstream may take up to
// --timeout) lost its outcome event: run returned, its deferred Close shut
// the audit sink, and the handler's event met a closed sink (in the binary,
// the process exited under it). run now closes the connections left after
// the grace and waits for their handlers, which record their outcome.
func TestShutdownPastTheGraceKeepsTheOutcome(t *testing.T) {
	oldArgs, oldFlags, oldGrace := os.Args, flag.CommandLine, shutdownGrace
	t.Cleanup(func() { os.Args, flag.CommandLine, shutdownGrace = oldArgs, oldFlags, oldGrace })
	shutdownGrace = 200 * time.Millisecond

	entered := make(chan struct{})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		close(entered)
		select { // past the grace, within --timeout
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	t.Cleanup(down.Close)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--audit", auditPath, "--timeout", "5")
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
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	}()
	<-entered
	stop() // returns when run has returned: in the binary, the process exits here
	b, _ := os.ReadFile(auditPath)
	if !strings.Contains(string(b), `"outcome"`) {
		t.Errorf("no outcome event in the audit file when run returned:\n%s\nlogs:\n%s", b, logs)
	}
}

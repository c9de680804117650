//go:build unix

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReview22SignalDuringPinCheck stops the gateway binary with SIGTERM
// while its start-up pin check waits for a downstream's second page of
// tools: the first page's tool, which --tool-pins does not approve, has
// been recorded as withheld by then. The gateway must exit 0 at once, with
// that record in its --audit file. Before, the signal had its default
// action during the start-up checks (up to 10 s): the process died with
// status 143 and the buffered record was lost.
func TestReview22SignalDuringPinCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary; skipped with -short")
	}
	gwBin, _ := buildBinaries(t)
	var secondPage atomic.Bool
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &msg); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var result string
		switch {
		case msg.ID == nil:
			w.WriteHeader(http.StatusAccepted)
			return
		case msg.Method == "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"1"}}`
		case msg.Method == "tools/list" && msg.Params.Cursor == "":
			result = `{"tools":[{"name":"unpinned_tool","inputSchema":{"type":"object"}}],"nextCursor":"2"}`
		case msg.Method == "tools/list":
			secondPage.Store(true)
			<-r.Context().Done() // never answered
			return
		default:
			result = `{}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+result+`}`)
	}))
	defer down.Close()

	dir := t.TempDir()
	pinsPath := filepath.Join(dir, "pins.json")
	if err := os.WriteFile(pinsPath, []byte(`{"other_tool":"`+strings.Repeat("0", 64)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.jsonl")
	p := startGateway(t, gwBin, 0, "--port", loopbackPort(t), "--upstream", down.URL+"/mcp",
		"--tool-pins", pinsPath, "--audit", auditPath, "--timeout", "30")
	for deadline := time.Now().Add(20 * time.Second); !secondPage.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pin check did not ask for the second page; stderr:\n%s", p.stderr)
		}
	}
	time.Sleep(100 * time.Millisecond) // the first page's record is in the sink's buffer
	if code := p.stopAndWait(t, syscall.SIGTERM, 5*time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM during the start-up pin check, want 0; stderr:\n%s", code, p.stderr)
	}
	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "unpinned_tool") || !strings.Contains(string(data), "TOOL_NOT_PINNED") {
		t.Errorf("the audit file lacks the withheld tool's record written before the signal:\n%s\nstderr:\n%s", data, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "gateway listening") {
		t.Errorf("the gateway listened after a signal during its start-up; stderr:\n%s", p.stderr)
	}
}

// TestReview22SignalDuringKeyFetch stops the gateway binary with SIGTERM
// while the first fetch of its --jwt-jwks waits on a JWK Set server that
// does not answer: it exits 0 at once, saying so, and never listens.
// Before, the signal killed it (its default action).
func TestReview22SignalDuringKeyFetch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary; skipped with -short")
	}
	gwBin, _ := buildBinaries(t)
	var asked atomic.Bool
	hang := make(chan struct{})
	keys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(true)
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer keys.Close()
	defer close(hang)
	p := startGateway(t, gwBin, 0, "--port", loopbackPort(t), "--upstream", "http://127.0.0.1:9/mcp",
		"--jwt-jwks", keys.URL+"/jwks.json", "--jwt-issuer", "https://issuer.example", "--jwt-audience", "mcp-gateway")
	for deadline := time.Now().Add(20 * time.Second); !asked.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not fetch its JWK Set; stderr:\n%s", p.stderr)
		}
	}
	if code := p.stopAndWait(t, syscall.SIGTERM, 5*time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM during the JWK Set's first fetch, want 0; stderr:\n%s", code, p.stderr)
	}
	if s := p.stderr.String(); !strings.Contains(s, "stopped by a signal before serving") || strings.Contains(s, "gateway listening") {
		t.Errorf("stderr does not say the start was stopped, or says the gateway listened:\n%s", s)
	}
}

//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReview18HTTPSignalDuringWrite: SIGTERM to the HTTP server while an
// update_cart waits on the gateway. The write is answered with its result
// once the gateway answers, both of its audit records (intent, outcome)
// are in the --audit file, the server exits 0 and the stop is no error in
// the log.
func TestReview18HTTPSignalDuringWrite(t *testing.T) {
	gw, gwURL := startGateway(t)
	h := gw.hold("POST", "/api/cart")
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(bin, "--transport", "http", "--addr", "127.0.0.1:0", "--gateway", gwURL, "--audit", auditPath)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHOP_") && !strings.HasPrefix(kv, "MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr := &syncBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One Wait for the test and its cleanup: two at once (the test
	// failing while its own wait runs) race.
	wait := sync.OnceValue(cmd.Wait)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = wait()
		pw.Close()
	})
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`url=(http://\S+/mcp)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	url := recv(t, urls, "the server's URL on stderr")

	type reply struct {
		status int
		body   string
		err    error
	}
	replies := make(chan reply, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"update_cart","arguments":{"sku":"RB-100","quantity":2}}}`
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+sessionCustomer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			replies <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		replies <- reply{resp.StatusCode, string(b), err}
	}()
	recv(t, h.arrived, "the held write at the gateway")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the stop begins while the write waits
	close(h.release)
	r := recv(t, replies, "the answer to the write under way")
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("update_cart under way at SIGTERM: status %d, err %v, body %q; want 200 and its result; stderr:\n%s", r.status, r.err, r.body, stderr)
	}
	var a struct {
		Result *struct {
			IsError           bool
			StructuredContent map[string]any
		}
	}
	if err := json.Unmarshal([]byte(r.body), &a); err != nil || a.Result == nil || a.Result.IsError {
		t.Errorf("update_cart under way at SIGTERM answered %q, want its result", r.body)
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want 0; stderr:\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not exit after SIGTERM; stderr:\n%s", stderr)
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("after SIGTERM the log has an error:\n%s", stderr)
	}
	phases := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, auditPath)), "\n") {
		var e struct {
			Tool, Phase string
			Allowed     bool
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if e.Tool == "update_cart" && e.Allowed {
			phases[e.Phase]++
		}
	}
	if phases["intent"] != 1 || phases["outcome"] != 1 {
		t.Errorf("audit records of the write under way at SIGTERM: %v, want one intent and one outcome", phases)
	}
}

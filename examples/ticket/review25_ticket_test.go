package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeHTTPSurvivesClosedLogPipe runs serve-http with stdout and stderr on a pipe whose
// reader goes away after the first line (`ticket serve-http 2>&1 | head -1`, or a log
// collector that died). A dry-run create_ticket then logs its [DRY RUN] line to that
// broken stderr. Before, the write raised SIGPIPE and the process died mid-call: the
// caller got no answer and the call had no record in audit.jsonl or audit.db.
func TestServeHTTPSurvivesClosedLogPipe(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "server.yaml")
	yaml := `dry_run: true
allowed_write_tools: [create_ticket]
rate_limit: {calls_per_min: 100, cost_per_session: 1000, window_seconds: 60}
tools:
  search_docs: {read_only: true, cost_units: 1}
  create_ticket: {read_only: false, cost_units: 5}
  list_tools: {read_only: true, cost_units: 0}
`
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	auditDir := filepath.Join(dir, "audit")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ticketBinary(t), "--config", cfgPath, "serve-http", "--port", "0", "--audit-dir", auditDir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader goes away
	base := strings.Fields(strings.TrimPrefix(line, "ticket: serving "))[0]

	req, _ := http.NewRequest("POST", base+"/tools/create_ticket/call",
		strings.NewReader(`{"arguments":{"title":"Broken build","body":"CI red"}}`))
	req.Header.Set("Authorization", "Bearer token-alice")
	req.Header.Set("X-Session-Id", "pipe-1")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("dry-run call with the log pipe closed: %v (the server died?)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	select {
	case err := <-done:
		t.Fatalf("server exited after the call: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit after SIGINT")
	}
	done <- nil // for the cleanup
	b, err := os.ReadFile(filepath.Join(auditDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"tool":"create_ticket"`) || !strings.Contains(string(b), `"dry_run":true`) {
		t.Fatalf("audit.jsonl has no record of the dry run:\n%s", b)
	}
}

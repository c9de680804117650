package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// rawStdio is `ticket serve-stdio` driven with hand-written JSON-RPC lines
// over pipes the test holds, so that it can close them as a client that
// goes away does.
type rawStdio struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr io.ReadCloser
	out            *bufio.Reader
	waited         bool
}

func startRawStdio(t *testing.T, tok, auditDir string) *rawStdio {
	t.Helper()
	cmd := exec.Command(ticketBinary(t), "serve-stdio", "--audit-dir", auditDir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tokenEnv + "=" + tok}
	r := &rawStdio{cmd: cmd}
	var err error
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if r.stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if r.stderr, err = cmd.StderrPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !r.waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	r.out = bufio.NewReader(r.stdout)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	r.answer(t, 1)
	return r
}

func (r *rawStdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// answer reads the next stdout line, which must answer request id.
func (r *rawStdio) answer(t *testing.T, id int) string {
	t.Helper()
	line, err := r.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, id)) {
		t.Fatalf("answer to %d: %q, %v", id, line, err)
	}
	return line
}

// wait returns how the process ended, failing the test after 30 s.
func (r *rawStdio) wait(t *testing.T) error {
	t.Helper()
	r.waited = true
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		<-done
		t.Fatal("serve-stdio did not end")
		return nil
	}
}

func searchLine(id int, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":""}%s}}`, id, meta)
}

// TestReview15ClientGoneKeepsTheAuditTrail: a client that goes away (killed,
// say) closes the server's stdout and stderr with its stdin. The server
// died of SIGPIPE at its first log line to the closed stderr ("server
// session ended with error"), before run's deferred Close flushed the
// JSONL buffer: the calls it had served had no record in audit.jsonl. It
// now ends through its own code (exit 1, the channel broke) with every
// call's record in both trails.
func TestReview15ClientGoneKeepsTheAuditTrail(t *testing.T) {
	dir := t.TempDir()
	r := startRawStdio(t, "token-alice", dir)
	r.send(t, searchLine(2, ""))
	r.answer(t, 2)

	r.stdout.Close()
	r.stderr.Close()
	r.send(t, searchLine(3, "")) // served, its answer cannot be written
	r.stdin.Close()
	err := r.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("serve-stdio ended with %v, want exit status 1", err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("serve-stdio killed by %v when its client went away", ws.Signal())
	}
	if code := exit.ExitCode(); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}

	jsonl, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{Tool: "search_docs"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := audit.OpenSQLite(filepath.Join(dir, auditSQLite))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{Tool: "search_docs"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jsonl) != 2 || len(rows) != 2 {
		t.Errorf("records of the 2 calls: %d in audit.jsonl, %d in audit.db, want 2 and 2", len(jsonl), len(rows))
	}
}

// TestReview15StdioIdentityIsTheLaunchers: nothing a stdio client sends
// changes who it is. A bearer header or token in the request's _meta, or
// in the arguments, is not a credential: the call runs as the user of
// TICKET_MCP_TOKEN (alice: engineering docs), and every record says so.
func TestReview15StdioIdentityIsTheLaunchers(t *testing.T) {
	dir := t.TempDir()
	r := startRawStdio(t, "token-alice", dir)
	r.send(t, searchLine(2, `,"_meta":{"Authorization":"Bearer token-bob","token":"token-bob"}`))
	if a := r.answer(t, 2); !strings.Contains(a, "eng-001") || strings.Contains(a, "sales-001") {
		t.Errorf("search_docs with bob's token in _meta: %s\nwant alice's docs", a)
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"","token":"token-bob"}}}`)
	if a := r.answer(t, 3); !strings.Contains(a, "INVALID_ARGUMENTS") {
		t.Errorf("search_docs with a token argument: %s\nwant INVALID_ARGUMENTS", a)
	}
	r.stdin.Close()
	if err := r.wait(t); err != nil {
		t.Fatalf("serve-stdio: %v", err)
	}
	evs, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d records, want 2", len(evs))
	}
	for _, e := range evs {
		if e.Subject != "alice" {
			t.Errorf("record of %s %s: subject %q, want alice", e.Tool, e.Code, e.Subject)
		}
	}
}

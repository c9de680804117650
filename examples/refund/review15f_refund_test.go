package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview15ClientGoneKeepsAudit is the README's promise for a client
// that goes away: it closes the server's stdout and stderr along with its
// stdin while a refund is running (the handler prints a stray line, too).
// SIGPIPE must not kill the server: it ends through its own shutdown, and
// the refund it ran has its intent and its outcome in the -audit file.
func TestReview15ClientGoneKeepsAudit(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(bin, "-audit", auditPath, "-demo-stray-prints")
	cmd.Env = append(os.Environ(), alice)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	go io.Copy(io.Discard, errR) // until the client goes away
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	buf := make([]byte, 4096)
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := outR.Read(buf); err != nil { // the initialize answer
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":19.99,"reason":"late delivery refund"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	// The client goes away before reading the refund's answer.
	outR.Close()
	errR.Close()
	stdin.Close()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit after its client went away")
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("the server was killed by %v, want its own shutdown", ws.Signal())
		}
	}
	var phases []audit.Phase
	for _, e := range readAudit(t, auditPath, audit.Filter{Tool: "trigger_refund"}) {
		if !e.Allowed {
			t.Errorf("refund record %+v: refused", e)
		}
		phases = append(phases, e.Phase)
	}
	if len(phases) != 2 || phases[0] != audit.PhaseIntent || phases[1] != audit.PhaseOutcome {
		t.Errorf("audit records of the refund: phases %v, want its intent and its outcome", phases)
	}
}

//go:build unix

package stdio_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIsolateClientGoneNoSIGPIPE: an MCP client that goes away closes the
// server's stdout and stderr pipes along with its stdin. A Go program dies
// of SIGPIPE at its first write to a broken pipe on descriptor 1 or 2: a
// handler's print (descriptor 1 goes to stderr after Isolate) or a log
// line then killed the server before it could finish its shutdown (flush
// an audit trail, say). After Isolate such a write fails with EPIPE
// instead, and the server ends through its own code: the noisy child
// returns 1 (server.Run reports the broken channel) rather than dying of a
// signal.
func TestIsolateClientGoneNoSIGPIPE(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	waited := false
	defer func() {
		if !waited { // a t.Fatal before the wait below
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	answer, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(answer, `"id":1`) {
		t.Fatalf("initialize answer: %q, %v", answer, err)
	}

	// The client goes away: its ends of stdout and stderr close first,
	// then the call it had sent arrives, then its stdin closes.
	stdout.Close()
	stderr.Close()
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy","arguments":{}}}`)
	stdin.Close()
	waited = true
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the server did not end after its client went away")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("server ended with %v, want exit status 1", err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("server killed by %v when its client went away, want exit status 1 from its own code", ws.Signal())
	}
	if code := exit.ExitCode(); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
}

// TestIsolateStdinClosedMidCall: the client closes stdin while a call runs.
// The transport holds the end of input back for DrainTimeout, so that a
// call that ends in time is answered; past it the go-sdk ends the session
// and cancels the call's context, with io.EOF as the cause, and
// server.Run returns once the handler has.
func TestIsolateStdinClosedMidCall(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.CreateTemp(t.TempDir(), "stderr-*.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{inR, inW, outR, outW, logf} {
		defer f.Close()
	}
	tr, err := stdio.Isolate(&stdio.Options{Stdin: inR, Stdout: outW, Stderr: logf, DrainTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	cause := make(chan error, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			select {
			case <-ctx.Done():
				cause <- context.Cause(ctx)
			case <-time.After(10 * time.Second):
				cause <- nil
			}
			return &mcp.CallToolResult{}, nil
		})
	ran := make(chan error, 1)
	go func() { ran <- server.Run(context.Background(), tr) }()
	go io.Copy(io.Discard, outR)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
	} {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never started")
	}
	start := time.Now()
	inW.Close()
	select {
	case err := <-cause:
		if !errors.Is(err, io.EOF) {
			t.Errorf("the call's context ended with cause %v, want io.EOF", err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("the call was cancelled %v after stdin closed, before DrainTimeout (200ms)", d)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the call's context was not cancelled after stdin closed")
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("server.Run did not return")
	}
}

//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview57StdioStopWaitsForTheSessionCheckToo: a stdio server stopped
// by SIGTERM answers the calls under way, "for up to their deadline". But
// a call's 10 s deadline starts only once its session check is done, and
// that check may take its own 3 s (authDeadline) first: the stop waited
// 10 s and a second from the signal, so a write whose session check was
// slow and whose gateway answered late within its own 10 s (here 2.4 s
// and 9.3 s) was made at the gateway but its answer was never sent: the
// session ended without it, and the log warned that a call did not end.
// The stop now waits for the session check's deadline as well.
func TestReview57StdioStopWaitsForTheSessionCheckToo(t *testing.T) {
	gw, url := startGateway(t)
	me := gw.hold("GET", "/api/auth/me")
	cart := gw.hold("POST", "/api/cart")
	cmd := exec.Command(bin, "--gateway", url)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHOP_") && !strings.HasPrefix(kv, "MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, sessionEnv+"="+sessionCustomer2)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		ID     json.RawMessage
		Result *struct{ IsError bool }
		Error  *struct{ Code int }
	}
	next := func(what string) (answer, bool) {
		t.Helper()
		select {
		case l, ok := <-lines:
			var a answer
			if !ok {
				return a, false
			}
			if json.Unmarshal([]byte(l), &a) != nil {
				t.Fatalf("%s: got %q; stderr:\n%s", what, l, stderr)
			}
			return a, true
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s; stderr:\n%s", what, stderr)
			panic("unreachable")
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	next("the answer to initialize")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"update_cart","arguments":{"sku":"RB-100","quantity":3}}}`)
	recv(t, me.arrived, "the session check")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2400 * time.Millisecond) // within the check's 3 s
	close(me.release)
	recv(t, cart.arrived, "the write")
	time.Sleep(9300 * time.Millisecond) // within the call's 10 s
	close(cart.release)
	a, ok := next("the answer to the write under way")
	if !ok || string(a.ID) != "2" || a.Result == nil || a.Result.IsError {
		t.Errorf("the write under way at SIGTERM: %+v (answered: %t), want its result; stderr:\n%s", a, ok, stderr)
	}
	if q := gw.quantity("u-1002", "RB-100"); q != 3 {
		t.Errorf("RB-100 in the cart: %d, want 3 (the write was made)", q)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want 0; stderr:\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not exit after SIGTERM; stderr:\n%s", stderr)
	}
	if s := stderr.String(); strings.Contains(s, "did not end") || strings.Contains(s, "level=ERROR") {
		t.Errorf("the stop logged a call that did not end, or an error:\n%s", s)
	}
}

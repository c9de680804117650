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

// TestReview16StdioSignalDrains: SIGTERM or SIGINT to the stdio server
// while a call waits on the gateway is a graceful stop. A request sent
// after the signal is answered at once with -32004 (server is closing) and
// never reaches the gateway; the call under way is answered with its
// result once the gateway answers; then the server exits 0, and the stop
// is no error in the log. Before, the signal closed the session at once:
// the call's answer was lost and the log said
// level=ERROR msg="server run cancelled".
func TestReview16StdioSignalDrains(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGINT", syscall.SIGINT}} {
		t.Run(tc.name, func(t *testing.T) {
			gw, url := startGateway(t)
			h := gw.hold("GET", "/api/cart")
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
				Error  *struct {
					Code    int
					Message string
				}
			}
			next := func(what string) answer {
				t.Helper()
				select {
				case l, ok := <-lines:
					var a answer
					if !ok || json.Unmarshal([]byte(l), &a) != nil {
						t.Fatalf("%s: got %q (end of output: %t); stderr:\n%s", what, l, !ok, stderr)
					}
					return a
				case <-time.After(20 * time.Second):
					t.Fatalf("no %s; stderr:\n%s", what, stderr)
					panic("unreachable")
				}
			}

			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			next("the answer to initialize")
			send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_cart","arguments":{}}}`)
			recv(t, h.arrived, "the held call")
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "stopping on a signal"); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("no stop logged after %s; stderr:\n%s", tc.name, stderr)
					break
				}
			}
			before := len(gw.recorded())
			send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_categories","arguments":{}}}`)
			if a := next("the answer to a call after the signal"); string(a.ID) != "3" || a.Error == nil || a.Error.Code != -32004 {
				t.Errorf("a call after the signal: %+v, want id 3 and error -32004", a)
			}
			if n := len(gw.recorded()) - before; n != 0 {
				t.Errorf("a call after the signal made %d gateway requests, want none", n)
			}
			close(h.release)
			if a := next("the answer to the call under way"); string(a.ID) != "2" || a.Result == nil || a.Result.IsError {
				t.Errorf("the call under way at the signal: %+v, want its result", a)
			}
			select {
			case l, ok := <-lines:
				if ok {
					t.Errorf("after the last answer: %q, want end of output", l)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the output did not end after the last answer; stderr:\n%s", stderr)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("exit after %s: %v, want 0; stderr:\n%s", tc.name, err, stderr)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the server did not exit after %s; stderr:\n%s", tc.name, stderr)
			}
			if strings.Contains(stderr.String(), "level=ERROR") {
				t.Errorf("after %s the log has an error:\n%s", tc.name, stderr)
			}
		})
	}
}

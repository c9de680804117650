//go:build unix

package main

import (
	"bufio"
	"encoding/json"
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

// TestReview16StdioSignalDrains: a client pipes 200 searches to
// serve-stdio and the server gets SIGTERM or SIGINT while they run. The
// stop is graceful: every call that ran (an outcome record in audit.jsonl,
// allowed or refused by the session rate) is answered, a request read after the signal is answered
// with -32004 (server is closing) and does not run, the server exits 0,
// and the stop is no error in the log. Before, the signal closed the
// session at once: the go-sdk wrote no answer of the calls under way, and
// its server.Run logged level=ERROR msg="server run cancelled".
func TestReview16StdioSignalDrains(t *testing.T) {
	const n = 200
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGINT", syscall.SIGINT}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(ticketBinary(t), "serve-stdio", "--audit-dir", dir)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tokenEnv + "=token-alice"}
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
			lines := make(chan string, n+8)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			var b strings.Builder
			b.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
			b.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n")
			for i := 1; i <= n; i++ {
				b.WriteString(searchLine(i, "") + "\n")
			}
			go io.WriteString(stdin, b.String()) // may block on a full pipe once the server stops reading

			var got []string
			select {
			case l := <-lines:
				got = append(got, l)
			case <-time.After(20 * time.Second):
				t.Fatalf("no answer; stderr:\n%s", stderr)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			timeout := time.After(30 * time.Second)
		read:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						break read
					}
					got = append(got, l)
				case <-timeout:
					t.Fatalf("the output did not end after %s; stderr:\n%s", tc.name, stderr)
				}
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("exit after %s: %v, want 0; stderr:\n%s", tc.name, err, stderr)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("serve-stdio did not exit after %s; stderr:\n%s", tc.name, stderr)
			}
			if strings.Contains(stderr.String(), "level=ERROR") {
				t.Errorf("after %s the log has an error:\n%s", tc.name, stderr)
			}

			answered, refused := 0, 0
			for _, l := range got {
				var r struct {
					ID     int
					Result json.RawMessage
					Error  *struct{ Code int }
				}
				switch {
				case json.Unmarshal([]byte(l), &r) != nil:
					t.Errorf("stdout line %q is not a JSON-RPC answer", l)
				case r.ID == 0:
				case r.Result != nil: // a search's result, or a tool error (the session rate)
					answered++
				case r.Error != nil && r.Error.Code == -32004:
					refused++
				default:
					t.Errorf("answer %s: want a result or -32004", l)
				}
			}
			ran, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{Tool: "search_docs"})
			if err != nil {
				t.Fatal(err)
			}
			if answered != len(ran) {
				t.Errorf("%s: %d searches ran (audit.jsonl), %d answered; want every one that ran answered", tc.name, len(ran), answered)
			}
			t.Logf("%s: %d searches ran, %d answered, %d refused as not started", tc.name, len(ran), answered, refused)
		})
	}
}

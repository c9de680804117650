//go:build unix

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logCountWithin reports whether logs hold want lines with s within d.
func logCountWithin(logs *runLogs, s string, want int, d time.Duration) bool {
	for deadline := time.Now().Add(d); strings.Count(logs.String(), s) < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestReview29SIGHUPPolicyFIFO: a --policy path that names a named pipe
// when SIGHUP comes (the file replaced by one) is logged as not reloaded,
// and the gateway keeps its policy and goes on handling SIGHUP. Opening a
// pipe that no process writes to waits for a writer: the reload waited
// for good, every later SIGHUP with it (the --audit file was no longer
// reopened), and so did the shutdown, which waits for the SIGHUP handler
// to return before it closes the audit sink, the records it buffered
// never written.
func TestReview29SIGHUPPolicyFIFO(t *testing.T) {
	down := answeringDownstream(t)
	file := writePolicy(t, `{"tools":[{"name":"get_customer_record","class":"read"}]}`)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--audit", auditPath, "--policy", file)
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	defer stop()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Whatever the outcome, no reload is left waiting on the pipe once the
	// test ends: a writer that comes and goes gives it an empty file.
	defer func() {
		for deadline := time.Now().Add(5 * time.Second); strings.Count(logs.String(), "--policy not reloaded") < 1 && time.Now().Before(deadline); {
			if f, err := os.OpenFile(file, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	signalSelf(syscall.SIGHUP)
	if !logCountWithin(logs, "--policy not reloaded", 1, 3*time.Second) {
		t.Fatalf("a --policy that is a named pipe: no \"--policy not reloaded\" within 3 s (the reload waits on the pipe)\n%s", logs)
	}
	if !strings.Contains(logs.String(), "not a regular file") {
		t.Errorf("the log does not say the --policy path is not a regular file:\n%s", logs)
	}
	signalSelf(syscall.SIGHUP)
	if !logCountWithin(logs, "audit file reopened", 2, 3*time.Second) {
		t.Fatalf("the next SIGHUP did not reopen the audit file:\n%s", logs)
	}
	if code := callTool(t, url, "get_customer_record", "viewer-token"); code != http.StatusOK {
		t.Fatalf("after the refused reload: get_customer_record answered %d, want 200 (the policy kept)", code)
	}
}

// TestReview29SIGHUPStorm: many SIGHUPs while calls run, the --policy file
// rewritten between them (in place and by a rename, as editors do, and
// through a symbolic link): every call is answered by one policy or the
// other, no reload is refused but of a file read while it was written in
// place, and the gateway ends with the last file's rules (no data race
// under -race).
func TestReview29SIGHUPStorm(t *testing.T) {
	down := answeringDownstream(t)
	const closed = `{"tools":[{"name":"get_customer_record","class":"read"},{"name":"trigger_refund","class":"read"}],
		"role_rules":[{"pattern":"trigger_refund","roles":["admin"]}],"show_forbidden":true}`
	const open = `{"tools":[{"name":"get_customer_record","class":"read"},{"name":"trigger_refund","class":"read"}]}`
	dir := t.TempDir()
	real := writePolicy(t, closed)
	link := filepath.Join(dir, "policy.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--audit", auditPath, "--policy", link)
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	defer stop()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if code := callTool(t, url, "trigger_refund", "viewer-token"); code != http.StatusOK && code != http.StatusForbidden {
					t.Errorf("trigger_refund answered %d during the reloads, want 200 or 403", code)
					return
				}
			}
		})
	}
	for i := range 60 {
		doc := closed
		if i%2 == 0 {
			doc = open
		}
		if i%3 == 0 {
			// A rename over the file, as editors save.
			tmp := real + ".tmp"
			if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, real); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(real, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		signalSelf(syscall.SIGHUP)
		time.Sleep(2 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	// The last word: the closed policy, then one more SIGHUP to be sure it
	// was read after the last write.
	if err := os.WriteFile(real, []byte(closed), 0o600); err != nil {
		t.Fatal(err)
	}
	n := strings.Count(logs.String(), "--policy reloaded")
	signalSelf(syscall.SIGHUP)
	awaitLogCount(t, logs, "--policy reloaded", n+1)
	time.Sleep(50 * time.Millisecond) // a reload of a SIGHUP caught during the last one
	if code := callTool(t, url, "trigger_refund", "viewer-token"); code != http.StatusForbidden {
		t.Fatalf("after the storm: viewer's trigger_refund answered %d, want 403 (the last file's rules)", code)
	}
	for line := range strings.Lines(logs.String()) {
		// A reload may read a file being written in place (truncated, not
		// yet written): that one does not parse, and is refused.
		if strings.Contains(line, "not reloaded") && !strings.Contains(line, "not JSON") {
			t.Fatalf("a reload was refused during the storm: %s", line)
		}
	}
}

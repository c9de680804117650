//go:build unix

package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPReopensAuditJSONL: after a rotator renames audit.jsonl and
// sends SIGHUP, the next records go to a new audit.jsonl and the earlier
// ones are all in the renamed file.
func TestSIGHUPReopensAuditJSONL(t *testing.T) {
	dir := t.TempDir()
	ta := &testApp{clock: newClock(), tickets: &TicketSystem{}, marks: &syncBuffer{}}
	a, err := newApp(appOptions{
		ConfigName: "server.yaml", Config: testConfig(t, nil), AuditDir: dir,
		Tickets: ta.tickets, Now: ta.clock.Now, Marks: slog.New(slog.NewTextHandler(ta.marks, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ta.app = a
	ta.rest = newRESTSessions(a.server, a.authn)
	defer ta.rest.Close()
	path := filepath.Join(dir, auditJSONL)
	ta.call(t, "token-alice", "s1", "search_docs", map[string]any{"query": "before"})
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new audit.jsonl after SIGHUP")
		}
	}
	ta.call(t, "token-bob", "s2", "search_docs", map[string]any{"query": "after"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	rotated, _ := os.ReadFile(path + ".1")
	current, _ := os.ReadFile(path)
	if !strings.Contains(string(rotated), `"subject":"alice"`) || strings.Contains(string(rotated), `"subject":"bob"`) {
		t.Errorf("renamed file:\n%s\nwant alice's record only", rotated)
	}
	if !strings.Contains(string(current), `"subject":"bob"`) || strings.Contains(string(current), `"subject":"alice"`) {
		t.Errorf("new file:\n%s\nwant bob's record only", current)
	}
}

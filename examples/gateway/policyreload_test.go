//go:build unix

package main

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/gateway"
)

// awaitLogCount waits until logs hold want lines with s.
func awaitLogCount(t *testing.T, logs *runLogs, s string, want int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); strings.Count(logs.String(), s) < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines with %q logged, want %d:\n%s", strings.Count(logs.String(), s), s, want, logs)
		}
	}
}

// TestSIGHUPReloadsPolicy: SIGHUP reads the --policy file again and the
// next calls are decided by it, while the JSONL --audit file is still
// reopened; a file that does not parse, or that the start would refuse,
// is logged and the policy the gateway has stays.
func TestSIGHUPReloadsPolicy(t *testing.T) {
	down := answeringDownstream(t)
	const closed = `{"tools":[{"name":"get_customer_record","class":"read"},{"name":"trigger_refund","class":"read"}],
		"role_rules":[{"pattern":"trigger_refund","roles":["admin"]}],"show_forbidden":true}`
	const open = `{"tools":[{"name":"get_customer_record","class":"read"},{"name":"trigger_refund","class":"read"}]}`
	file := writePolicy(t, closed)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--audit", auditPath, "--policy", file)
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	defer stop()
	if code := callTool(t, url, "trigger_refund", "viewer-token"); code != http.StatusForbidden {
		t.Fatalf("before the reload: viewer's trigger_refund answered %d, want 403", code)
	}
	if err := os.WriteFile(file, []byte(open), 0o600); err != nil {
		t.Fatal(err)
	}
	signalSelf(syscall.SIGHUP)
	awaitLogCount(t, logs, "--policy reloaded", 1)
	awaitLogCount(t, logs, "audit file reopened", 1)
	if code := callTool(t, url, "trigger_refund", "viewer-token"); code != http.StatusOK {
		t.Fatalf("after the reload: viewer's trigger_refund answered %d, want 200\n%s", code, logs)
	}
	for i, bad := range []string{
		`{"tools": [`, // does not parse
		`{"tools":[{"name":"trigger_refund","class":"write","confirm":true}],"write_allowlist":["trigger_refund"]}`,
		`{"tools":[{"name":"trigger_refund","class":"sideways"}]}`,
	} {
		if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		signalSelf(syscall.SIGHUP)
		awaitLogCount(t, logs, "--policy not reloaded", i+1)
		if code := callTool(t, url, "trigger_refund", "viewer-token"); code != http.StatusOK {
			t.Fatalf("after the refused file %d: viewer's trigger_refund answered %d, want 200 (the policy kept)", i, code)
		}
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	signalSelf(syscall.SIGHUP)
	awaitLogCount(t, logs, "--policy not reloaded", 4)
	if code := callTool(t, url, "get_customer_record", "viewer-token"); code != http.StatusOK {
		t.Fatalf("after a missing file: get_customer_record answered %d", code)
	}
	if strings.Contains(logs.String(), "no audit file to reopen") {
		t.Errorf("SIGHUP logged as ignored:\n%s", logs)
	}
}

// TestSIGHUPReloadsPolicyWithoutAudit: without a JSONL --audit file,
// SIGHUP reloads --policy and is not logged as ignored.
func TestSIGHUPReloadsPolicyWithoutAudit(t *testing.T) {
	down := answeringDownstream(t)
	file := writePolicy(t, `{"tools":[{"name":"get_customer_record","class":"read"}]}`)
	for _, audit := range []string{"", filepath.Join(t.TempDir(), "audit.db")} {
		args := []string{"--host", "127.0.0.1", "--port", "0", "--upstream", down.URL + "/mcp", "--policy", file}
		if audit != "" {
			args = append(args, "--audit", audit)
		}
		url, err, stop, logs := startRun(t, args...)
		if url == "" {
			t.Fatalf("gateway did not start: %v\n%s", err, logs)
		}
		if code := callTool(t, url, "trigger_refund", "viewer-token"); code != http.StatusNotFound {
			t.Fatalf("audit %q: before the reload, trigger_refund (no rule) answered %d, want 404", audit, code)
		}
		if err := os.WriteFile(file, []byte(`{"tools":[{"name":"get_customer_record","class":"read"},{"name":"trigger_refund","class":"read"}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		signalSelf(syscall.SIGHUP)
		awaitLogCount(t, logs, "--policy reloaded", 1)
		if code := callTool(t, url, "trigger_refund", "viewer-token"); code != http.StatusOK {
			t.Fatalf("audit %q: after the reload, trigger_refund answered %d, want 200", audit, code)
		}
		if strings.Contains(logs.String(), "no audit file to reopen") {
			t.Errorf("audit %q: SIGHUP logged as ignored:\n%s", audit, logs)
		}
		stop()
		if err := os.WriteFile(file, []byte(`{"tools":[{"name":"get_customer_record","class":"read"}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPolicyReloaderBeforeMade: a SIGHUP before the gateway is made (the
// start read --policy before it waited on the token verifier) has the
// file read again when it is, once.
func TestPolicyReloaderBeforeMade(t *testing.T) {
	file := writePolicy(t, `{"tools":[{"name":"get_customer_record","class":"read"}]}`)
	logs := &runLogs{}
	rl := &policyReloader{logger: slog.New(slog.NewTextHandler(logs, nil)), path: file}
	if err := os.WriteFile(file, []byte(`{"tools":[{"name":"trigger_refund","class":"read"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rl.hangup()
	if !strings.Contains(logs.String(), "SIGHUP during the start") {
		t.Fatalf("the early SIGHUP not logged:\n%s", logs)
	}
	first, _, err := loadPolicy(writePolicy(t, `{"tools":[{"name":"get_customer_record","class":"read"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New("http://127.0.0.1:1/mcp", gateway.DemoTokens(), &gateway.Options{Policy: first})
	if err != nil {
		t.Fatal(err)
	}
	rl.made(g)
	if _, ok := g.Policy().Resolve("trigger_refund"); !ok || strings.Count(logs.String(), "--policy reloaded") != 1 {
		t.Fatalf("after made: trigger_refund resolved %v, logs:\n%s", ok, logs)
	}
	rl.made(g) // no SIGHUP since: no reload
	if n := strings.Count(logs.String(), "--policy reloaded"); n != 1 {
		t.Fatalf("%d reloads logged, want 1:\n%s", n, logs)
	}
}

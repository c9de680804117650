//go:build unix

package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview57AuditKey: the binary had no way to key its records'
// args_sha256, so every --audit record held the plain SHA-256 of the
// arguments, which the gateway package's own docs say is reversed by
// hashing guesses for arguments with few values (an account id).
// MCP_GATEWAY_AUDIT_KEY makes it an HMAC-SHA256 under the key; a key that
// is not hex, too short, or set without --audit is a usage error naming
// the variable and not quoting it.
func TestReview57AuditKey(t *testing.T) {
	const keyHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	key, _ := hex.DecodeString(keyHex)
	bin := r25bBuild(t)
	down := newR25bDownstream(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	t.Setenv(auditKeyEnv, keyHex[:40]+"\n"+keyHex[40:]) // as xxd -p wraps it
	p, base := r25bStart(t, bin, "", "--upstream", down.URL+"/mcp", "--audit", auditPath)
	if a := r25bCall(context.Background(), base, "admin-token", "get_customer_record", r25bArgs(7)); a.status != 200 {
		t.Fatalf("call: %+v", a)
	}
	if code := p.stopAndWait(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, p.stderr)
	}
	want := audit.ArgsHMAC(key, json.RawMessage(r25bArgs(7)))
	n := 0
	for _, e := range r25bEvents(t, auditPath) {
		if e.Tool == "get_customer_record" && e.Phase == audit.PhaseOutcome {
			n++
			if e.ArgsSHA256 != want || e.ArgsSHA256 == audit.ArgsSHA256(json.RawMessage(r25bArgs(7))) {
				t.Errorf("args_sha256 %s, want the HMAC %s", e.ArgsSHA256, want)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d outcome records, want 1", n)
	}

	for _, c := range []struct {
		value string
		audit bool
		want  string
	}{
		{"not-hex-secret", true, "want at least 32 hex digits"},
		{"abcd", true, "want at least 32 hex digits"},
		{" ", true, "set but empty"},
		{keyHex, false, "without --audit"},
	} {
		args := []string{"--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}
		if c.audit {
			args = append(args, "--audit", filepath.Join(t.TempDir(), "a.jsonl"))
		}
		_, err := runAtStart(t, map[string]*string{auditKeyEnv: ptr(c.value)}, args...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), auditKeyEnv) || !strings.Contains(err.Error(), c.want) ||
			strings.Contains(err.Error(), "not-hex-secret") {
			t.Errorf("%s=%q: %v (exit status %d), want a usage error naming the variable: %s", auditKeyEnv, c.value, err, exitCode(err), c.want)
		}
	}
}

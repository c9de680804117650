package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview19dDemoTakesTheAuditKey: TICKET_MCP_AUDIT_KEY keys the audit
// records' argument hashes, but `demo` ignored it: a demo's kept trail
// (--audit-dir) was hashed under a random key whatever the variable said,
// and a malformed value went unnoticed. demo now checks it, as the
// servers do (exit 2, nothing opened), and hashes under it. `tools`
// records nothing and ignores it.
func TestReview19dDemoTakesTheAuditKey(t *testing.T) {
	t.Setenv(auditKeyEnv, strings.Repeat("0f", 16))
	hashes := map[string]bool{}
	for i := range 2 {
		dir := filepath.Join(t.TempDir(), "audit")
		if code, _, errOut := runCLI(t, "demo", "--audit-dir", dir); code != 0 {
			t.Fatalf("demo run %d: exit %d: %s", i+1, code, errOut)
		}
		evs, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{Subject: "alice", Tool: "search_docs"})
		if err != nil || len(evs) == 0 {
			t.Fatalf("demo run %d: alice's search_docs records: %v, %v", i+1, evs, err)
		}
		hashes[evs[0].ArgsSHA256] = true
	}
	if len(hashes) != 1 {
		t.Errorf("the same call in two demos under one %s: hashes %v, want one", auditKeyEnv, hashes)
	}

	for _, v := range []string{"0011", strings.Repeat("zz", 16)} {
		t.Setenv(auditKeyEnv, v)
		dir := filepath.Join(t.TempDir(), "audit")
		code, out, errOut := runCLI(t, "demo", "--audit-dir", dir)
		if code != 2 || !strings.Contains(errOut, auditKeyEnv) || strings.Contains(errOut, v) || out != "" {
			t.Errorf("demo with %s=%q: exit %d, stdout %q, stderr %q; want exit 2 naming the variable, not its value", auditKeyEnv, v, code, out, errOut)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("demo with %s=%q: %s exists (%v), want nothing opened", auditKeyEnv, v, dir, err)
		}
		if code, _, errOut := runCLI(t, "tools"); code != 0 {
			t.Errorf("tools with %s=%q: exit %d: %s; want 0 (tools records nothing)", auditKeyEnv, v, code, errOut)
		}
	}
}

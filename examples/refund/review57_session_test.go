package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// review57Lines are an initialize, and a call of each tool.
var review57Lines = strings.Join([]string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":5,"reason":"refund for the session test"}}}`,
}, "\n") + "\n"

// TestReview57RefusedCallsHaveTheSessionID: every audit record of a stdio
// process has its session_id, as the README says, also the records of the
// calls refused as unauthenticated (no token, a token not in the table).
// The guard gives a call its session once it is authenticated, so those
// records had none: in a trail that two processes share, the refused calls
// of one could not be told from the other's.
func TestReview57RefusedCallsHaveTheSessionID(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	envs := [][]string{nil, {"REFUND_MCP_TOKEN=not-a-token"}, {alice}}
	seen := map[string]bool{}
	for run, env := range envs {
		cmd, stderr := command([]string{"-audit", auditPath}, env...)
		cmd.Stdin = strings.NewReader(review57Lines)
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %d: %v; stderr:\n%s", run, err, stderr)
		}
		evs := readAudit(t, auditPath, audit.Filter{})
		// Those of the earlier runs come first.
		var mine []audit.Event
		for _, e := range evs {
			if !seen[e.CorrelationID] {
				mine = append(mine, e)
			}
		}
		if len(mine) < 2 {
			t.Fatalf("run %d (env %v): %d new audit records, want one for each call at least", run, env, len(mine))
		}
		id := mine[0].SessionID
		for _, e := range mine {
			seen[e.CorrelationID] = true
			if !strings.HasPrefix(e.SessionID, "stdio-") || e.SessionID != id {
				t.Errorf("run %d (env %v): record %s %s %s has session_id %q, want the process's one (%q, stdio-...)",
					run, env, e.Tool, e.Phase, e.Code, e.SessionID, id)
			}
		}
		if seen["session "+id] {
			t.Errorf("run %d: session_id %q of an earlier process", run, id)
		}
		seen["session "+id] = true
	}
}

package main

import (
	"path/filepath"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview16SessionIDPerProcess: a stdio process is one session, and
// its audit records say which: when the server restarts, or two clients
// launch it with one -audit file, the records of each process share a
// session_id of their own. They were all "stdio", so a trail that spans a
// restart could not tell the sessions (and their refunds) apart.
func TestReview16SessionIDPerProcess(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	var sessions []string
	for run := range 2 {
		cs, _ := connect(t, "", []string{"-audit", auditPath}, alice)
		if _, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"}); we != nil {
			t.Fatal(we)
		}
		if got, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 5, "reason": "refund before a restart"}); we != nil || got["refunded_total"] != 5.0 {
			t.Fatalf("run %d: refund %v %v, want refunded_total 5 (the records are in memory)", run, got, we)
		}
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
		evs := readAudit(t, auditPath, audit.Filter{})
		if len(evs) != 3*(run+1) {
			t.Fatalf("run %d: %d audit records, want %d", run, len(evs), 3*(run+1))
		}
		id := evs[3*run].SessionID
		for _, e := range evs[3*run:] {
			if e.SessionID != id || id == "" {
				t.Errorf("run %d: session_id %q, want one non-empty id for the process (%q)", run, e.SessionID, id)
			}
		}
		sessions = append(sessions, id)
	}
	if sessions[0] == sessions[1] {
		t.Errorf("two processes, one session_id %q: the trail cannot tell them apart", sessions[0])
	}
}

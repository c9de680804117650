package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview19RESTWriteUnderWayAtShutdownIsRecorded: the REST side of
// TestShutdownWaitsForCallsBeforeTheAuditCloses. A real write over REST
// still running when SIGTERM's grace runs out (its connection is then
// closed) completes, and keeps its intent and outcome records: serveHTTP
// returns only once the call on the REST session has ended.
func TestReview19RESTWriteUnderWayAtShutdownIsRecorded(t *testing.T) {
	a, tickets := shutdownMidWrite(t, func(base string) {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/tools/create_ticket/call",
				strings.NewReader(`{"arguments":{"title":"t","body":"b"}}`))
			req.Header.Set("Authorization", "Bearer token-alice")
			req.Header.Set("X-Session-Id", "s")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	})
	for name, query := range map[string]func() ([]audit.Event, error){
		"audit.jsonl": func() ([]audit.Event, error) {
			return audit.QueryJSONL(a.jsonlPath(), audit.Filter{Tool: "create_ticket"})
		},
		"audit.db": func() ([]audit.Event, error) {
			db, err := audit.OpenSQLite(a.dir + "/" + auditSQLite)
			if err != nil {
				return nil, err
			}
			defer db.Close()
			return audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{Tool: "create_ticket"})
		},
	} {
		evs, err := query()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var phases []audit.Phase
		for _, e := range evs {
			phases = append(phases, e.Phase)
		}
		if len(evs) != 2 || evs[0].Phase != audit.PhaseIntent || evs[1].Phase != audit.PhaseOutcome || !evs[1].Allowed || evs[1].SessionID != "rest-s@alice" {
			t.Errorf("%s: records of the write %v, want its intent and an allowed outcome in rest-s@alice", name, phases)
		}
	}
	if n := len(tickets.Created()); n != 1 {
		t.Errorf("%d tickets created, want 1", n)
	}
}

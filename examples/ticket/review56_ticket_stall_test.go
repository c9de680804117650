package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview56WriteRefusedWhenPostgresStopsAnswering: the README says that
// when the --audit-postgres database goes away, a real write is refused
// AUDIT_UNAVAILABLE before it runs (its write-ahead record cannot be made
// durable) while reads go on. A database that stops answering without
// closing its connections (a frozen host, a network that drops packets)
// made every real write hang instead: the guard writes the intent record
// without the call's deadline, and nothing bounded it, so the client got
// no answer at all, and once the database answered again, minutes later,
// the write ran, long after its client had given up (and perhaps retried
// it elsewhere). The write-ahead record is now bounded
// (auditDurableTimeout): the write is refused 503 AUDIT_UNAVAILABLE, and
// no ticket is made when the database comes back.
func TestReview56WriteRefusedWhenPostgresStopsAnswering(t *testing.T) {
	pg := testsvc.StartPostgres(t)
	newPostgresDB(t, pg, "ticket_stall")
	// A proxy in front of the database that, once stalled, holds the
	// server's answers until released: a database that stops answering.
	var stalled atomic.Bool
	released := make(chan struct{})
	ln := testsvc.CutProxy(t, pg.Port, true, func([]byte) bool {
		if stalled.Load() {
			<-released
		}
		return false
	})
	release := sync.OnceFunc(func() { close(released) })
	defer release() // before the server stops (t.Cleanup)
	url := fmt.Sprintf("postgres://postgres@%s/ticket_stall?sslmode=disable", ln.Addr())

	old := auditDurableTimeout
	auditDurableTimeout = 2 * time.Second
	t.Cleanup(func() { auditDurableTimeout = old })

	dir := t.TempDir()
	cfg := configFile(t, "dry_run: true", "dry_run: false",
		"allowed_write_tools: []", "allowed_write_tools: [create_ticket]")
	s := startServeHTTP(t, "--config", cfg, "--audit-dir", dir, "--audit-postgres", url)
	write := `{"arguments": {"title": "Broken build", "body": "CI red on main"}}`
	if r := restPost(t, s.base, "create_ticket", "token-alice", "w1", write); r.status != http.StatusOK {
		t.Fatalf("a write with the database up: %d %v", r.status, r.body)
	}

	stalled.Store(true)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(tool, sid, body string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodPost, s.base+"/tools/"+tool+"/call", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer token-bob")
		req.Header.Set("X-Session-Id", sid)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var b struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&b)
		return resp.StatusCode, b.Error.Code, nil
	}
	start := time.Now()
	status, code, err := post("create_ticket", "w2", write)
	if err != nil {
		t.Errorf("a write with the database not answering: %v after %v, want 503 AUDIT_UNAVAILABLE", err, time.Since(start).Round(time.Second))
	} else if status != http.StatusServiceUnavailable || code != "AUDIT_UNAVAILABLE" {
		t.Errorf("a write with the database not answering: %d %s, want 503 AUDIT_UNAVAILABLE", status, code)
	}
	if status, code, err := post("search_docs", "r1", searchBody); err != nil || status != http.StatusOK {
		t.Errorf("a read with the database not answering: %d %s %v, want 200", status, code, err)
	}

	// The database answers again: the refused write is not made then.
	release()
	time.Sleep(500 * time.Millisecond)
	if c := s.stop(); c != 0 {
		t.Fatalf("serve-http: exit %d; stderr:\n%s", c, s.stderr)
	}
	evs, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{Tool: "create_ticket", Phase: audit.PhaseOutcome})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s allowed=%v %s", e.SessionID, e.Allowed, e.Code))
	}
	want := []string{"rest-w1@alice allowed=true ", "rest-w2@bob allowed=false AUDIT_UNAVAILABLE"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		data, _ := os.ReadFile(filepath.Join(dir, auditJSONL))
		t.Errorf("create_ticket outcomes:\n%s\nwant:\n%s\naudit.jsonl:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), data)
	}
}

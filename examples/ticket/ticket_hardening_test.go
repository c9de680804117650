package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestDryRunLineOnlyForSimulatedWrites: a dry run the guard refused (here
// by the call rate) simulated nothing, so it gets no [DRY RUN] line; its
// audit record still says it was a refused dry run.
func TestDryRunLineOnlyForSimulatedWrites(t *testing.T) {
	ta := newTestApp(t, allowWrites) // dry_run: true; 5 calls per window
	for i := 1; i <= 6; i++ {
		o := ta.call(t, "token-alice", "dry", "create_ticket", ticketArgs())
		if want := map[bool]string{true: "", false: "RATE_LIMIT_EXCEEDED"}[i <= 5]; o.code != want {
			t.Fatalf("call %d: %+v, want code %q", i, o, want)
		}
	}
	if got := strings.Count(ta.marks.String(), "[DRY RUN]"); got != 5 {
		t.Errorf("%d [DRY RUN] lines for 5 simulated writes and 1 refused; log:\n%s", got, ta.marks.String())
	}
	var refused []audit.Event
	for _, e := range ta.events(t, audit.Filter{Tool: "create_ticket"}) {
		if !e.Allowed {
			refused = append(refused, e)
		}
	}
	if len(refused) != 1 || refused[0].Code != "RATE_LIMIT_EXCEEDED" || refused[0].Cost != 0 {
		t.Errorf("refused records %+v, want one RATE_LIMIT_EXCEEDED with cost 0", refused)
	}
}

// TestAuditArgumentHashIsKeyed: args_sha256 is the HMAC-SHA256 of the
// arguments under the app's key (not their plain SHA-256, which anyone can
// recompute from guesses), the same in JSONL and SQLite; without a key the
// app draws its own, so two apps hash the same arguments differently.
func TestAuditArgumentHashIsKeyed(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	args := json.RawMessage(`{"query":"deploy"}`)
	hashOf := func(ta *testApp) string {
		t.Helper()
		if o := ta.call(t, "token-alice", "h", "search_docs", args); o.code != "" || o.wire != nil {
			t.Fatalf("search_docs: %+v", o)
		}
		evs := ta.events(t, audit.Filter{Tool: "search_docs"})
		if len(evs) != 1 {
			t.Fatalf("%d records", len(evs))
		}
		if err := ta.flush(); err != nil {
			t.Fatal(err)
		}
		js, err := audit.QueryJSONL(ta.jsonlPath(), audit.Filter{Tool: "search_docs", Phase: audit.PhaseOutcome})
		if err != nil || len(js) != 1 || js[0].ArgsSHA256 != evs[0].ArgsSHA256 {
			t.Fatalf("JSONL %+v, %v; want the SQLite hash %s", js, err, evs[0].ArgsSHA256)
		}
		return evs[0].ArgsSHA256
	}

	keyed := newKeyedTestApp(t, nil, key)
	got := hashOf(keyed)
	if want := audit.ArgsHMAC(key, args); got != want || got == audit.ArgsSHA256(args) {
		t.Errorf("args_sha256 %s, want HMAC %s (plain SHA-256 %s)", got, want, audit.ArgsSHA256(args))
	}
	a, b := hashOf(newTestApp(t, nil)), hashOf(newTestApp(t, nil))
	if a == "" || a == b || a == audit.ArgsSHA256(args) {
		t.Errorf("default keys: hashes %q and %q, want two different HMACs", a, b)
	}
}

func TestAuditKeyFromEnvironment(t *testing.T) {
	k := bytes.Repeat([]byte{0xab}, 16)
	if got, err := auditKey(hex.EncodeToString(k)); err != nil || !bytes.Equal(got, k) {
		t.Errorf("16-byte key: %x, %v", got, err)
	}
	if got, err := auditKey(""); err != nil || got != nil {
		t.Errorf("unset: %x, %v; want nil (a random key)", got, err)
	}
	for _, v := range []string{"zz", hex.EncodeToString(k[:15])} {
		if _, err := auditKey(v); err == nil || strings.Contains(err.Error(), v) {
			t.Errorf("%q: err %v, want a refusal that does not echo the key", v, err)
		}
	}
	var stderr bytes.Buffer
	t.Setenv(auditKeyEnv, "0011")
	if code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir()}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), auditKeyEnv) {
		t.Errorf("serve-http with a short key: exit %d, stderr %q", code, stderr.String())
	}
}

// TestRESTRefusesTheUnauthenticatedFirstWithoutASession: a caller without
// a valid token is refused 401 (audited, with a correlation id) before its
// X-Session-Id or body is looked at, and no REST session is opened for it:
// an anonymous caller cannot fill the session table and evict others.
func TestRESTRefusesTheUnauthenticatedFirstWithoutASession(t *testing.T) {
	ta := newTestApp(t, nil)
	srv := httptest.NewServer(httpHandler(ta.app, ta.rest, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	for i, c := range []struct{ tok, sid, body string }{
		{"", "", `not json`},
		{"token-mallory", "bad id", `{"arguments":{"query":""}}`},
		{"", "anon", `{"arguments":{"query":""}}`},
	} {
		r := restPost(t, srv.URL, "search_docs", c.tok, c.sid, c.body)
		e, _ := r.body["error"].(map[string]any)
		corr, _ := e["correlation_id"].(string)
		if r.status != http.StatusUnauthorized || r.code() != "UNAUTHENTICATED" || corr == "" {
			t.Errorf("case %d: %d %v, want 401 UNAUTHENTICATED with a correlation id", i, r.status, r.body)
			continue
		}
		evs := ta.events(t, audit.Filter{CorrelationID: corr})
		if len(evs) != 1 || evs[0].Allowed || evs[0].Code != "UNAUTHENTICATED" || evs[0].Subject != "" {
			t.Errorf("case %d: records %+v, want one UNAUTHENTICATED refusal", i, evs)
		}
	}
	ta.rest.mu.Lock()
	n := len(ta.rest.sessions)
	ta.rest.mu.Unlock()
	if n != 0 {
		t.Errorf("%d REST sessions opened for unauthenticated callers", n)
	}
	// An authenticated caller's malformed request is recorded as theirs.
	r := restPost(t, srv.URL, "search_docs", "token-bob", "", `{"arguments":{}}`)
	e, _ := r.body["error"].(map[string]any)
	corr, _ := e["correlation_id"].(string)
	evs := ta.events(t, audit.Filter{CorrelationID: corr})
	if r.status != http.StatusBadRequest || len(evs) != 1 || evs[0].Subject != "bob" || evs[0].Code != "INVALID_ARGUMENTS" || evs[0].Tool != "search_docs" {
		t.Errorf("bob without X-Session-Id: %d %v, records %+v", r.status, r.body, evs)
	}
}

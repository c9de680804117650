package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReviewRESTRefusalsBeforeTheGuardAreAudited: the README promises that
// "every call, denials included, is one outcome record" and that a refusal's
// correlation_id "names its audit record". A user expects a REST call refused
// for a missing/malformed X-Session-Id or a malformed body (both documented
// 400 INVALID_ARGUMENTS refusals) to be in the audit trail like any other
// refusal. Instead restCall (http.go) answers them itself, before the call
// reaches an MCP session and so the guard: the 400 carries no correlation_id
// and nothing is written to audit.jsonl or audit.db, so a client probing the
// endpoint leaves no trace.
func TestReviewRESTRefusalsBeforeTheGuardAreAudited(t *testing.T) {
	for _, c := range []struct{ name, sid, body string }{
		{"missing X-Session-Id", "", `{"arguments":{"query":""}}`},
		{"malformed X-Session-Id", "bad id/with spaces", `{"arguments":{"query":""}}`},
		{"malformed body", "s1", `{"args":{"query":""}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ta := newTestApp(t, nil)
			base := startHTTP(t, ta)
			r := restPost(t, base, "search_docs", "token-alice", c.sid, c.body)
			if r.status != http.StatusBadRequest || r.code() != "INVALID_ARGUMENTS" {
				t.Fatalf("status %d code %q, want 400 INVALID_ARGUMENTS", r.status, r.code())
			}
			e, _ := r.body["error"].(map[string]any)
			corr, _ := e["correlation_id"].(string)
			evs := ta.events(t, audit.Filter{})
			if corr == "" || len(evs) == 0 {
				t.Errorf("refusal not audited: correlation_id %q, %d outcome records (want a record naming the refusal)", corr, len(evs))
			}
		})
	}
}

// TestReviewRESTBodyWithTrailingCloserIsRefused: README: "a REST body that
// is not {"arguments": {...}}" is 400, and restCall has a "trailing data
// after the JSON body" check. A user expects `{"arguments":{...}}}` (or
// `...}]`) to be refused. Instead it runs (200): the check uses
// json.Decoder.More, which reports false when the next byte is '}' or ']',
// so trailing closers pass (http.go, the dec.More() test after Decode).
func TestReviewRESTBodyWithTrailingCloserIsRefused(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	for i, body := range []string{`{"arguments":{"query":""}}}`, `{"arguments":{"query":""}}]`} {
		r := restPost(t, base, "search_docs", "token-alice", fmt.Sprint("s", i), body)
		if r.status != http.StatusBadRequest {
			t.Errorf("body %s: status %d %v, want 400 INVALID_ARGUMENTS", body, r.status, r.body)
		}
	}
}

// TestReviewRESTBodyWithDuplicateArgumentsIsRefused: the library refuses
// duplicate (or case-folded duplicate) JSON keys in arguments because
// "validators and handlers disagree about which duplicate wins, so a
// duplicate is a way to smuggle a value past validation" (dupkeys.go). A user
// expects the REST envelope to be as strict: a body with two "arguments"
// members is not {"arguments": {...}} and should be 400. Instead
// encoding/json in restCall (http.go) silently keeps the last one, and
// matches "Arguments"/"ARGUMENTS" case-insensitively past
// DisallowUnknownFields: a proxy or log that reads the first member sees
// one ticket while another is created.
func TestReviewRESTBodyWithDuplicateArgumentsIsRefused(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	for i, body := range []string{
		`{"arguments":{"query":"deploy"},"arguments":{"query":""}}`,
		`{"arguments":{"query":"deploy"},"ARGUMENTS":{"query":""}}`,
	} {
		r := restPost(t, base, "search_docs", "token-alice", fmt.Sprint("s", i), body)
		if r.status != http.StatusBadRequest {
			t.Errorf("body %s: status %d %v, want 400 INVALID_ARGUMENTS", body, r.status, r.body)
		}
	}
}

// TestReviewRESTEvictionDoesNotBlockOtherSessions: README: beyond 1024 REST
// sessions "the oldest is closed ... and a call in flight on it fails". A
// user expects closing the oldest session to never stall callers of other
// sessions. Instead restSessions.get (sessions.go) closes the evicted
// session while holding r.mu, and ClientSession.Close waits for the
// session's in-flight calls to finish (go-sdk jsonrpc2 Connection.Close). So
// while a slow downstream call runs on the oldest session, any caller -
// even an unauthenticated one, since sessions are created before the guard
// authenticates - that opens a new session freezes every REST call of every
// session (each call takes r.mu in get) until the slow call ends. Here the
// downstream is held by locking the TicketSystem; bob's call in his own,
// already open session never completes.
func TestReviewRESTEvictionDoesNotBlockOtherSessions(t *testing.T) {
	ta := newTestApp(t, func(c *config) {
		allowWrites(c)
		c.DryRun = false
	})
	ctx := context.Background()
	alice, bob := http.Header{}, http.Header{}
	alice.Set("Authorization", "Bearer token-alice")
	bob.Set("Authorization", "Bearer token-bob")

	// The downstream is slow: Create blocks until the test lets it go.
	ta.tickets.mu.Lock()
	released := false
	release := func() {
		if !released {
			released = true
			ta.tickets.mu.Unlock()
		}
	}
	defer release()

	// 1. alice's write, in flight on the oldest session.
	slow := make(chan error, 1)
	go func() {
		_, err := ta.rest.call(ctx, alice, "slow", "create_ticket", []byte(`{"title":"Broken build","body":"CI red"}`))
		slow <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		evs, err := ta.query(ctx, audit.Filter{Phase: audit.PhaseIntent})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's write never reached the guard")
		}
	}
	// 2. bob's session, open and working.
	if _, err := ta.rest.call(ctx, bob, "bob", "search_docs", []byte(`{"query":""}`)); err != nil {
		t.Fatal(err)
	}
	// 3. Fill up to the cap with other sessions.
	for i := 2; i < maxRESTSessions; i++ {
		if _, err := ta.rest.get(ctx, fmt.Sprint("fill-", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	// 4. An anonymous caller opens one more session: "slow" is evicted.
	evict := make(chan error, 1)
	go func() {
		_, err := ta.rest.call(ctx, http.Header{}, "evictor", "search_docs", []byte(`{"query":""}`))
		evict <- err
	}()
	// Wait until the evictor holds the sessions' lock (it is the only one
	// who can: it then closes "slow" under it) or "slow" is gone from the
	// sessions.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if !ta.rest.mu.TryLock() {
			break
		}
		_, open := ta.rest.sessions[restKey{"slow", "alice"}]
		ta.rest.mu.Unlock()
		if !open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the oldest session was never evicted")
		}
	}
	// 5. bob calls again in his own open session.
	done := make(chan error, 1)
	go func() {
		_, err := ta.rest.call(ctx, bob, "bob", "search_docs", []byte(`{"query":""}`))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("bob's call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("bob's call in his own session is blocked while the evicted session's in-flight call runs")
		release()
		<-done
	}
	release()
	<-slow
	<-evict
}

// reviewMCPRequest sends one raw Streamable HTTP request on /mcp with the
// given Mcp-Session-Id and bearer token, and returns the status and body.
func reviewMCPRequest(t *testing.T, method, base, sid, tok, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReviewMCPSessionIsBoundToItsCaller: README, /mcp: "the MCP session id
// is the limiter's session and the audit record's session_id". A user
// expects alice's MCP session to be alice's: another authenticated caller
// who learns its Mcp-Session-Id (logs, a proxy) must not call tools in it,
// spending alice's per-session budget and writing records under her
// session id, nor end it. Instead the session is not bound to any user:
// bob's token with alice's Mcp-Session-Id runs search_docs in alice's
// session (200, audited as bob in alice's session) and bob's DELETE ends
// alice's session. The go-sdk has the binding built in (StreamableHTTPHandler
// refuses "session user mismatch" when the session was created with an
// auth.TokenInfo UserID), but httpHandler (http.go) authenticates only in
// the guard (mcpguard.BearerTokens), so no TokenInfo is ever set and the
// check never runs.
func TestReviewMCPSessionIsBoundToItsCaller(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	alice := connectHTTP(t, base, "token-alice")
	call := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":""}}}`
	status, body := reviewMCPRequest(t, http.MethodPost, base, alice.ID(), "token-bob", call)
	for _, e := range ta.events(t, audit.Filter{SessionID: alice.ID()}) {
		if e.Subject == "bob" && e.Allowed {
			t.Errorf("bob called search_docs in alice's MCP session %s (HTTP %d): %.120s", alice.ID(), status, body)
		}
	}
	status, _ = reviewMCPRequest(t, http.MethodDelete, base, alice.ID(), "token-bob", "")
	if status < 400 {
		t.Errorf("bob's DELETE of alice's MCP session: HTTP %d, want a refusal", status)
	}
	if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}}); err != nil {
		t.Errorf("alice's session after bob's DELETE: %v", err)
	}
}

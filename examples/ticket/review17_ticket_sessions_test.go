package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// review17Client keeps its connections, so that opening hundreds of
// sessions does not open hundreds of connections.
var review17Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

// review17MCP sends one request to /mcp (sid "": none, tok "": no token)
// and returns the status, the Mcp-Session-Id of the answer and its body.
func review17MCP(t *testing.T, base, sid, tok, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := review17Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const (
	review17Init   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
	review17Listed = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	review17List   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

// review17Open opens an MCP session at /mcp as the owner of tok ("" for
// none) and returns its id.
func review17Open(t *testing.T, base, tok string) string {
	t.Helper()
	status, sid, body := review17MCP(t, base, "", tok, review17Init)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q: %.200s", status, sid, body)
	}
	if status, _, body := review17MCP(t, base, sid, tok, review17Listed); status >= 300 {
		t.Fatalf("notifications/initialized: HTTP %d: %.200s", status, body)
	}
	return sid
}

// review17Live reports whether the /mcp session sid still answers tok.
func review17Live(t *testing.T, base, sid, tok string) bool {
	t.Helper()
	status, _, body := review17MCP(t, base, sid, tok, review17List)
	switch status {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	t.Fatalf("tools/list on session %s: HTTP %d: %.200s", sid, status, body)
	return false
}

// mcpSessionCount counts the Streamable HTTP sessions open on the app's
// server (not the REST or stdio ones).
func mcpSessionCount(ta *testApp) int {
	n := 0
	for ss := range ta.server.Sessions() {
		if id := ss.ID(); !strings.HasPrefix(id, "rest-") && !strings.HasPrefix(id, "stdio-") {
			n++
		}
	}
	return n
}

// TestReview17MCPSessionsAreBounded: the go-sdk keeps a Streamable HTTP
// session until its DELETE, and /mcp let anyone open one, without a token
// too (its calls are then refused by the guard): a loop of initialize
// requests grew the server by about 12 KiB a session, without end (20000
// sessions, 250 MiB). Now each caller holds at most
// maxMCPSessionsPerSubject sessions, those opened without a valid token
// counting as one caller's, and its oldest is closed past that; another
// caller's sessions are never touched.
func TestReview17MCPSessionsAreBounded(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	alice := connectHTTP(t, base, "token-alice")

	var anon []string
	for range maxMCPSessionsPerSubject + 20 {
		anon = append(anon, review17Open(t, base, ""))
	}
	if n, most := mcpSessionCount(ta), maxMCPSessionsPerSubject+1; n > most {
		t.Errorf("%d sessions open after %d anonymous initializes and alice's one, want at most %d", n, len(anon), most)
	}
	if review17Live(t, base, anon[0], "") {
		t.Errorf("the first anonymous session is still open after %d more", len(anon)-1)
	}
	if !review17Live(t, base, anon[len(anon)-1], "") {
		t.Errorf("the newest anonymous session is closed")
	}
	if _, err := alice.ListTools(t.Context(), nil); err != nil {
		t.Errorf("alice's session after the anonymous flood: %v", err)
	}

	// bob filling his share closes none of alice's; alice filling hers
	// closes her oldest, the one her client holds.
	for range maxMCPSessionsPerSubject {
		review17Open(t, base, "token-bob")
	}
	if !review17Live(t, base, alice.ID(), "token-alice") {
		t.Fatalf("bob's %d sessions closed alice's", maxMCPSessionsPerSubject)
	}
	var mine []string
	for range maxMCPSessionsPerSubject {
		mine = append(mine, review17Open(t, base, "token-alice"))
	}
	if review17Live(t, base, alice.ID(), "token-alice") {
		t.Errorf("alice's oldest session is open after %d more of hers", maxMCPSessionsPerSubject)
	}
	for _, sid := range []string{mine[0], mine[len(mine)-1]} {
		if !review17Live(t, base, sid, "token-alice") {
			t.Errorf("alice's session %s, one of her newest %d, is closed", sid, maxMCPSessionsPerSubject)
		}
	}
	if n, most := mcpSessionCount(ta), 3*maxMCPSessionsPerSubject; n > most {
		t.Errorf("%d sessions open, want at most %d (three callers' shares)", n, most)
	}
}

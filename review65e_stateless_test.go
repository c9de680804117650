package mcpguard_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview65eStatelessSessionIDShared: under the go-sdk's
// MCPGODEBUG=allowsessionsinstateless=1 a stateless server gives an older
// client a session id at its initialize and then takes, on every request,
// whatever Mcp-Session-Id it is sent. Options.SessionKey's default keys
// the session scope by that id ("sid:"+id), and promises that "a session
// id a client chose ... is never another caller's key". But bob, who
// learnt alice's session id (from a log, a proxy: what the package
// documentation warns of), sends it with his own token, and spends her
// per-session budget: after his two calls her first call is refused
// RATE_LIMIT_EXCEEDED. token.Table.BindSessions does not refuse him: the
// go-sdk keeps no session on a stateless server to check its user against
// (the package documentation recommends stateless "where no binding is
// possible"). The setting is read at start: the check runs in a child.
func TestReview65eStatelessSessionIDShared(t *testing.T) {
	runGodebugChild(t, "TestReview65eStatelessSessionIDChild", "allowsessionsinstateless=1")
}

func TestReview65eStatelessSessionIDChild(t *testing.T) {
	if !inGodebugChild() {
		return // run as the child of TestReview65eStatelessSessionIDShared only
	}
	// Bound as the package documentation asks of stateful servers: the
	// go-sdk keeps no session here to check its user against.
	hs := r64fStatelessServer(t, true)

	post := func(tok, sid, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+tok)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	callBody := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, id)
	}

	// Alice, an older client, opens her session: the server names it.
	resp, body := post("alice-tok", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("alice's initialize: %d %q %s", resp.StatusCode, sid, body)
	}

	// Bob learnt her session id, and calls with it (and his own token).
	for i := 1; i <= 2; i++ {
		resp, body := post("bob-tok", sid, callBody(10+i))
		if resp.StatusCode != http.StatusOK || strings.Contains(body, `"isError":true`) {
			t.Fatalf("bob's call %d: %d %s", i, resp.StatusCode, body)
		}
	}

	// Alice's first call.
	resp, body = post("alice-tok", sid, callBody(2))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's call: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(body, "RATE_LIMIT_EXCEEDED") {
		t.Fatalf("alice's first call refused: bob's calls spent her session budget: %s", body)
	}
}

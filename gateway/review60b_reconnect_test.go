package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// r60bTSDown answers as a TypeScript SDK (1.32.2) server in stateful mode
// without an event store: an initialize (POST) opens session
// "sess-init", named in the answer's mcp-session-id; a GET is the
// session's standalone stream, held open until its client leaves. What
// the TypeScript server sends to a GET
// (@modelcontextprotocol/sdk/dist/esm/server/webStandardStreamableHttp.js:273-301):
//
//	headers = {'Content-Type': 'text/event-stream',
//	  'Cache-Control': 'no-cache, no-transform', Connection: 'keep-alive',
//	  'X-Accel-Buffering': 'no'}; headers['mcp-session-id'] = this.sessionId;
//	... return new Response(readable, { headers });
//
// and, without an event store, its events carry no id
// (webStandardStreamableHttp.js:840-857: eventId stays undefined), so
// its client reconnects the stream without a Last-Event-ID.
func r60bTSDown(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if r.Method == http.MethodPost {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("mcp-session-id", "sess-init")
		io.WriteString(w, `{"result":{"protocolVersion":"2025-11-25","capabilities":{},`+
			`"serverInfo":{"name":"ts","version":"1"}},"jsonrpc":"2.0","id":1}`)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	h.Set("mcp-session-id", r.Header.Get("Mcp-Session-Id"))
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestReview60bReconnectOfSessionFirstSeenByGET: Options.MaxStreams
// promises that a GET of "a session whose GET was forwarded before",
// refused past the cap, is answered 200 with an event stream that ends at
// once (a go-sdk client fails its whole session on an error status to a
// GET that reconnects; a TypeScript client retries such a GET twice, then
// never again). That holds for a session the gateway first saw through
// its initialize, not for one whose first request through this gateway
// was its GET: after the gateway restarted, or behind a load balancer
// when EndStreams sent the client to another replica, the client's first
// request is its GET reconnecting (client/streamableHttp.js:232-242
// reconnects a GET stream that ended or broke). That GET is forwarded and
// its session bound then, but not marked as streamed (markStreamed needs a
// confirmed binding, and the binding is confirmed only by the GET's
// answer), so the session's next reconnecting GET past the cap gets 429.
func TestReview60bReconnectOfSessionFirstSeenByGET(t *testing.T) {
	for _, tc := range []struct {
		name, sid string
		initFirst bool // the session's initialize came through this gateway
	}{
		{"session_opened_here", "sess-init", true},
		{"session_first_seen_by_its_GET", "sess-before-restart", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, base := r27Gateway(t, http.HandlerFunc(r60bTSDown), Options{MaxStreams: 1}, nil)
			if tc.initFirst {
				req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(
					`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
						`"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
				req.Header.Set("Authorization", viewer)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if got := resp.Header.Get("Mcp-Session-Id"); got != tc.sid {
					t.Fatalf("initialize: session %q, want %q", got, tc.sid)
				}
			}
			first := r27Open(t, base, viewer, false, "Mcp-Session-Id", tc.sid)
			if first.status != http.StatusOK {
				t.Fatalf("the session's GET: status %d, want 200", first.status)
			}
			r27WaitCounted(t, g, 1, "the session's GET stream")
			// The stream breaks (the client's connection); meanwhile
			// another stream of the same principal takes the place.
			first.close()
			r27WaitCounted(t, g, 0, "the broken stream")
			hold := r27Open(t, base, viewer, false, "Mcp-Session-Id", "another-session")
			if hold.status != http.StatusOK {
				t.Fatalf("the other session's GET: status %d, want 200", hold.status)
			}
			r27WaitCounted(t, g, 1, "the other session's stream")
			// The client reconnects its session's stream, without a
			// Last-Event-ID (its events had none).
			again := r27Open(t, base, viewer, false, "Mcp-Session-Id", tc.sid)
			if again.status != http.StatusOK || !isSSE(again.header) {
				t.Errorf("the session's reconnecting GET past the cap: status %d (%q), want 200 with "+
					"an event stream asking it to reconnect later: its GET was forwarded before",
					again.status, again.body)
			}
		})
	}
}

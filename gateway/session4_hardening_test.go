package gateway

// Fourth review of the gateway's header handling and session table.
// Failing tests only: each shows a defect of the current code.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// review4Stateless is a downstream that, like go-sdk with
// StreamableHTTPOptions.Stateless (which "does not read or set the
// Mcp-Session-Id header"), answers 200 to every POST whatever session id it
// carries.
type review4Stateless struct{}

func (review4Stateless) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`))}, nil
}

func review4HeapInUse() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestLongSessionIDsRefused checks that session ids are bounded in length:
// the table's bounds are counts, not bytes, a stateless downstream answers
// 2xx whatever id it gets, and every id so answered is kept (and, once
// displaced, as a tombstone). With ids as long as the header limit (1 MiB),
// one token could pin about 2 GiB; here 24 requests with 512 KiB ids must
// leave nothing of them in the heap.
func TestLongSessionIDsRefused(t *testing.T) {
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: review4Stateless{}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	const n, size = 24, 512 << 10
	// Warm up the client, the servers and their buffers with a short id.
	send := func(id string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := send("warm-up"); st != http.StatusOK {
		t.Fatalf("setup: warm-up request got %d", st)
	}
	before := review4HeapInUse()
	for i := range n {
		id := fmt.Sprintf("%03d-", i) + strings.Repeat("x", size-4)
		if st := send(id); st != http.StatusOK {
			// A gateway that refuses an id this long is fine.
			continue
		}
	}
	http.DefaultClient.CloseIdleConnections()
	after := review4HeapInUse()
	g.sessions.mu.Lock()
	var idBytes int
	for id := range g.sessions.owner {
		idBytes += len(id)
	}
	for id := range g.sessions.tombs {
		idBytes += len(id)
	}
	g.sessions.mu.Unlock()
	runtime.KeepAlive(g)
	grown := int64(after) - int64(before)
	t.Logf("heap grew by %d KiB; the session table holds %d KiB of ids", grown>>10, idBytes>>10)
	if grown > 4<<20 {
		t.Errorf("after %d answered requests with %d KiB session ids, one viewer token left %d KiB in the gateway's heap (%d KiB of ids in the session table); "+
			"at %d bindings + %d tombstones per subject that is ~%d MiB per token, never released",
			n, size>>10, grown>>10, idBytes>>10, maxSessionsPerSubject, maxSessionsPerSubject, 2*maxSessionsPerSubject*(1<<20)>>20)
	}
}

// TestReview4IdentityHeadersMatchAuthorizedPrincipal shows that the
// principal the gateway authorizes and keys sessions and limits by is not
// always the one the downstream reads from X-Mcp-Gateway-Subject and
// X-Mcp-Gateway-Role. token.Table refuses subjects with outer spaces and
// roles with commas or spaces ("a downstream would see another subject"),
// but the gateway takes principals from any [Authenticator] (a JWT or
// introspection adapter, say) and sends them unchecked:
//   - a role "viewer,admin" (one role, no admin to the gateway's policy) is
//     joined into X-Mcp-Gateway-Role, which the downstream splits on commas
//     (mcpguard.FromGatewayHeaders): the downstream sees role admin;
//   - with Options.Transport = NewTransport(), net/http trims the values, so
//     a role " admin" or a subject "bob " reaches the downstream as "admin"
//     or "bob" (the gateway's own client refuses those with 502 instead).
//

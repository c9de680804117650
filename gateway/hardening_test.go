package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
)

// TestClientQueryKeepsUpstreamQuery: the query of the configured upstream
// URL is the operator's (here a tenant): a client's query must not replace
// it.
func TestClientQueryKeepsUpstreamQuery(t *testing.T) {
	var got atomic.Value
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		got.Store(r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	g, err := New(down.URL+"/mcp?tenant=a", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	rg := &rig{url: gw.URL}
	// Ask with the client's own query.
	req, _ := http.NewRequest(http.MethodPost, rg.url+"/mcp?tenant=b", strings.NewReader(call(`1`, "echo", "")))
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	q, _ := got.Load().(string)
	if !strings.Contains(q, "tenant=a") || strings.HasPrefix(q, "tenant=b") {
		t.Errorf("downstream query %q: the configured tenant=a was replaced by the client's query", q)
	}
}

// TestIdleConnsClosedAfterIdleTimeout: the pool hands out its most recent
// connection, so under steady sequential load the ones below it are never
// taken; they must still be closed once idle for longer than idleTimeout.
func TestIdleConnsClosedAfterIdleTimeout(t *testing.T) {
	var closed atomic.Int64
	var inflight sync.WaitGroup
	inflight.Add(4)
	var barrier atomic.Bool
	barrier.Store(true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if barrier.Load() {
			inflight.Done()
			inflight.Wait() // four connections at once
		}
		io.WriteString(w, "ok")
	})
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	c := newUpstreamClient()
	c.idleTimeout = 100 * time.Millisecond
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", s.URL, nil)
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	barrier.Store(false)
	// Steady sequential traffic for four idle timeouts.
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
		doGet(t, c, "GET", s.URL, nil)
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	c.mu.Lock()
	idle := len(c.pools[hostKey(&urlParts{scheme: "http", addr: strings.TrimPrefix(s.URL, "http://")})].idle)
	c.mu.Unlock()
	if n := closed.Load(); n < 3 {
		t.Errorf("%d connections closed after 4x idleTimeout of non-use; %d kept idle, want 3 closed", n, idle)
	}
}

// TestWriteNotReplayedOnClientIdempotencyKey: a write tools/call must reach
// the downstream once even when the client adds an Idempotency-Key header
// and the reused downstream connection closes before answering: an MCP
// downstream does not deduplicate on that header, and a started write is
// never retried (DESIGN).
func TestWriteNotReplayedOnClientIdempotencyKey(t *testing.T) {
	var writes atomic.Int64
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(req.Body)
			if strings.Contains(string(b), "trigger_refund") {
				writes.Add(1)
			}
			if i == 1 {
				return // the write ran, then the connection died unanswered
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 36\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}")
		}
	})
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(url+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Fatalf("warm-up: %d %s", got.status, got.body)
	}
	rg.post(t, viewer, call(`2`, "trigger_refund", `{"amount":5}`), "Idempotency-Key", "k1")
	if n := writes.Load(); n != 1 {
		t.Errorf("the write tools/call reached the downstream %d times, want 1", n)
	}
}

// TestFilteredListLeadingWhitespace: a tools/list answer whose JSON starts
// with white space is filtered like any other: the hidden tool must not
// reach the caller.
func TestFilteredListLeadingWhitespace(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
	}{
		{"json_leading_space", "application/json", "\n" + list, http.StatusOK},
		{"sse_data_leading_spaces", "text/event-stream", "event: message\ndata:   " + list + "\n\n", http.StatusOK},
		// Not JSON (a body cut at the size limit looks like this): an
		// upstream error, never the body relayed unfiltered.
		{"json_cut_short", "application/json", list[:len(list)-3], http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				w.Header().Set("Content-Type", tc.contentType)
				io.WriteString(w, tc.body)
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), FilterToolsList: true})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			if strings.Contains(got.body, "admin_reset_key") {
				t.Errorf("tools/list for viewer lists the forbidden tool: %s", got.body)
			}
			if got.status != tc.status {
				t.Errorf("status %d, want %d (%s)", got.status, tc.status, got.body)
			}
			if tc.status == http.StatusOK && !strings.Contains(got.body, "get_customer_record") {
				t.Errorf("the allowed tool is missing: %s", got.body)
			}
		})
	}
}

// TestSecondSessionIDRefused: only one Mcp-Session-Id value can be checked
// against its owner; a request carrying a second one must not reach the
// downstream, which might read that one.
func TestSecondSessionIDRefused(t *testing.T) {
	rg := newRig(t, &Options{Transport: nil})
	// viewer opens sess-1 (the rig's downstream answers with it).
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Fatalf("open: %d %s", got.status, got.body)
	}
	// admin presents its own fresh id first and viewer's after it.
	rg.post(t, admin, call(`2`, "get_customer_record", ""), "Mcp-Session-Id", "admin-own", "Mcp-Session-Id", "sess-1")
	for _, r := range rg.down.log() {
		if r.Header.Get(HeaderSubject) == "admin" {
			for _, v := range r.Header.Values("Mcp-Session-Id") {
				if v == "sess-1" {
					t.Errorf("admin's request reached the downstream carrying viewer's session id: %q", r.Header.Values("Mcp-Session-Id"))
				}
			}
		}
	}
}

package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// nodeLikeServer is a raw downstream that answers as a TypeScript SDK
// server under Node does: a request whose body names "as-json" gets a JSON
// answer with Node's own Connection and Keep-Alive: timeout=2 headers;
// any other gets an event stream whose header the SDK wrote itself with
// Connection: keep-alive, so that Node adds no Keep-Alive header to it
// (checked on Node 20), though it closes the idle connection after its
// timeout all the same. As keepAliveServer's, a request that arrives on
// a connection idle for longer than closeAfter meets that close: it is
// read and the connection closed unanswered. It returns the URL and the
// count of connections.
func nodeLikeServer(t *testing.T, closeAfter time.Duration) (string, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		conns.Add(1)
		var answered time.Time
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			if !answered.IsZero() && time.Since(answered) > closeAfter {
				return // the idle connection's close crossed the request
			}
			if strings.Contains(string(body), "as-json") {
				const answer = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"+
					"Connection: keep-alive\r\nKeep-Alive: timeout=2\r\nTransfer-Encoding: chunked\r\n\r\n"+
					chunk(answer)+"0\r\n\r\n")
			} else {
				const event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"+
					"Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk(event)+"0\r\n\r\n")
			}
			answered = time.Now()
		}
	})
	return url, &conns
}

// TestReview17fKeepAliveSurvivesAnswerWithoutHeader checks that a
// downstream's Keep-Alive timeout still holds for a connection whose last
// answer did not repeat it. A TypeScript SDK server answers a request with
// an event stream, without the header, and closes the idle connection
// after its timeout all the same: a tools/call sent on that connection as
// it closes would be lost (a 502; a tools/call is never sent twice).
func TestReview17fKeepAliveSurvivesAnswerWithoutHeader(t *testing.T) {
	url, conns := nodeLikeServer(t, time.Second)
	g, err := New(url+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for i, tc := range []struct {
		pause time.Duration
		body  string
	}{
		{0, call(`1`, "echo", `{"say":"as-json"}`)}, // JSON, Keep-Alive: timeout=2
		{0, call(`2`, "echo", "")},                  // an event stream, no Keep-Alive
		{1200 * time.Millisecond, call(`3`, "echo", "")},
	} {
		time.Sleep(tc.pause)
		status, body, err := readAnswer(t, gw.URL+"/mcp", http.MethodPost, tc.body)
		if err != nil || status != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Fatalf("call %d: %d %q (%v); want the downstream's answer", i+1, status, body, err)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections to the downstream, want 2 (the idle one not reused after 1.2 s)", n)
	}
}

// nodeLikeGoServer is a Go server that closes idle connections after 2 s
// and, like Node under the TypeScript SDK, says so (Keep-Alive: timeout=2)
// only on some answers: those to the path /json. It counts the connections
// opened and closed.
func nodeLikeGoServer(t *testing.T) (s *httptest.Server, opened, closed *atomic.Int64) {
	t.Helper()
	opened, closed = new(atomic.Int64), new(atomic.Int64)
	s = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.URL.Path == "/json" {
			w.Header().Set("Keep-Alive", "timeout=2")
		}
		io.WriteString(w, "ok")
	}))
	s.Config.IdleTimeout = 2 * time.Second
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, opened, closed
}

// roundTripHeld sends a request on c and returns its response with the
// body unread: its connection stays busy until the body is read.
func roundTripHeld(t *testing.T, c *upstreamClient, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

func readClose(resp *http.Response) {
	io.ReadAll(resp.Body)
	resp.Body.Close()
}

// TestReview17fKeepAliveLearnedPerDownstream checks that the Keep-Alive
// timeout a downstream announced on one connection holds for its other
// connections too: one that only carried answers without the header
// (a TypeScript SDK server's event streams) is closed by the downstream
// after the same timeout.
func TestReview17fKeepAliveLearnedPerDownstream(t *testing.T) {
	s, opened, _ := nodeLikeGoServer(t)
	c := newUpstreamClient()
	t.Cleanup(c.CloseIdleConnections)
	a := roundTripHeld(t, c, s.URL+"/json") // announces timeout=2
	b := roundTripHeld(t, c, s.URL+"/sse")  // a second connection, no header
	readClose(a)
	readClose(b) // b's connection on top of the pool
	time.Sleep(1200 * time.Millisecond)
	doGet(t, c, http.MethodPost, s.URL+"/sse", strings.NewReader("{}"))
	if n := opened.Load(); n != 3 {
		t.Errorf("%d connections opened, want 3: a connection idle for 1.2 s to a downstream that announced timeout=2 was reused", n)
	}
}

// TestReview17fExpiredIdleConnsClosed checks that the idle connections a
// steady traffic never takes are closed once their downstream's Keep-Alive
// timeout (less the margin) has passed, also when the one at the bottom
// of the pool came back with an answer that did not announce it.
func TestReview17fExpiredIdleConnsClosed(t *testing.T) {
	s, opened, closed := nodeLikeGoServer(t)
	c := newUpstreamClient()
	t.Cleanup(c.CloseIdleConnections)
	held := []*http.Response{
		roundTripHeld(t, c, s.URL+"/sse"), // bottom: no header
		roundTripHeld(t, c, s.URL+"/json"),
		roundTripHeld(t, c, s.URL+"/json"), // top: taken by the traffic below
	}
	for _, resp := range held {
		readClose(resp)
	}
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		doGet(t, c, http.MethodPost, s.URL+"/json", strings.NewReader("{}"))
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the downstream notes the closes
	if o, n := opened.Load(), closed.Load(); o != 3 || n != 2 {
		t.Errorf("%d connections opened, %d closed after 1.5 s of steady traffic on one; want 3 opened, 2 closed "+
			"(idle past the downstream's timeout=2 less the margin)", o, n)
	}
}

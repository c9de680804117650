package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReview27bStrangerKeepsH2Connection: over HTTP/2 (h2c here, TLS
// alike) a POST without a token whose body is longer than 64 KiB is
// refused unread, as over HTTP/1, but its answer must not carry
// "Connection: close": net/http's HTTP/2 server reads that as a request
// to shut the whole connection down (a GOAWAY), and every other stream a
// client, or a proxy in front that multiplexes many callers, sends on it
// has to go to a new connection. An HTTP/2 stream's unread body needs no
// such thing: the server resets the stream (RST_STREAM NO_ERROR) and
// drops the rest of it. Here the second request must come on the same
// connection.
func TestReview27bStrangerKeepsH2Connection(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Timeout: 5 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// The connection each request came on, by the client's address. A
	// count of the listener's connections, as this test kept before,
	// also counts any stray dial to its port (another test's client,
	// late, at a port the kernel has given this server since): it
	// counted two once in CI, and which connection the last request
	// came on was not recorded. The failure's message now says both.
	var mu sync.Mutex
	var from []string
	gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		from = append(from, r.RemoteAddr)
		mu.Unlock()
		g.ServeHTTP(w, r)
	}))
	var conns []string // every connection the listener took, for the failure's message
	gw.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns = append(conns, c.RemoteAddr().String())
			mu.Unlock()
		}
	}
	gw.Config.Protocols = new(http.Protocols)
	gw.Config.Protocols.SetUnencryptedHTTP2(true)
	gw.Start()
	t.Cleanup(gw.Close)
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	send := func(auth, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Fatalf("answer over %s, want HTTP/2", resp.Proto)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// A first request opens the connection.
	if st, b := send(admin, call(`1`, "echo", `{}`)); st != http.StatusOK {
		t.Fatalf("first call: %d %s", st, b)
	}
	big := call(`"abc"`, "echo", `{"pad":"`+strings.Repeat("x", 70<<10)+`"}`)
	if st, b := send("", big); st != http.StatusUnauthorized || !strings.Contains(b, `"id":null`) {
		t.Fatalf("stranger's long body: %d %s, want 401 with a null id", st, b)
	}
	time.Sleep(200 * time.Millisecond) // a GOAWAY, if any, has come
	if st, b := send(admin, call(`2`, "echo", `{}`)); st != http.StatusOK {
		t.Fatalf("call after: %d %s", st, b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(from) != 3 || from[1] != from[0] || from[2] != from[0] {
		t.Errorf("the requests came from %v, want three from one address: an unauthenticated POST shut the HTTP/2 connection down (connections taken: %v)", from, conns)
	}
}

// TestReview27bStrangerClosesH1Connection: over HTTP/1 the same refusal
// of a long body still closes the connection after its answer, and what
// is left of the body (here a whole request with a token at its end) is
// never read as a request of its own.
func TestReview27bStrangerClosesH1Connection(t *testing.T) {
	rg := newRig(t, &Options{Timeout: 5 * time.Second})
	u, err := url.Parse(rg.url)
	if err != nil {
		t.Fatal(err)
	}
	inner := call(`9`, "echo", `{}`)
	smuggled := "POST /mcp HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: " + admin +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Content-Length: " + strconv.Itoa(len(inner)) + "\r\n\r\n" + inner
	body := strings.Repeat(" ", 70<<10) + smuggled
	for _, framing := range []string{"length", "chunked"} {
		t.Run(framing, func(t *testing.T) {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			req := "POST /mcp HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\n" +
				"Accept: application/json, text/event-stream\r\n"
			if framing == "length" {
				req += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
			} else {
				req += "Transfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
			}
			go io.WriteString(c, req)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
				t.Fatalf("answer %d (close %v) %s, want 401 and the connection closed", resp.StatusCode, resp.Close, b)
			}
			if more, err := http.ReadResponse(br, nil); err == nil {
				t.Errorf("a second answer on the connection: %d", more.StatusCode)
			}
		})
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the downstream received %d requests, want none", n)
	}
}

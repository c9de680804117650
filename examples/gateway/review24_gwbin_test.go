package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawPost opens a connection to the gateway at base (http://host:port)
// and sends the headers of a POST to /mcp declaring a body of length
// bytes, and the first bytes of that body only; hdr are more header lines
// ("Name: value").
func rawPost(t *testing.T, base string, length int, first string, hdr ...string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(length) + "\r\n"
	for _, h := range hdr {
		req += h + "\r\n"
	}
	req += "\r\n" + first
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReview24StalledBodyIsCut: a client that sends a POST's headers and
// then stops sending its body must not hold its connection, and the
// handler with the buffer the gateway grew to the declared Content-Length
// (up to --max-body, 4 MiB), for ever. The server had a header timeout
// only: 100 such connections held 425 MB of the gateway's memory for as
// long as they stayed open. The body must now arrive within --timeout.
// (Without a token, the body is not read at all since review27: 401 at
// once.)
func TestReview24StalledBodyIsCut(t *testing.T) {
	down := answeringDownstream(t)
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--timeout", "1")
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	defer stop()
	c := rawPost(t, url, 4<<20, `{"jsonrpc":"2.0",`)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Errorf("a POST without a token whose body stalled: %v %v, want 401 at once, and the connection closed", resp, err)
	}
	c = rawPost(t, url, 4<<20, `{"jsonrpc":"2.0",`, "Authorization: Bearer viewer-token")
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("the connection of a POST whose body stalled was still open %v later (--timeout 1)", time.Since(start).Round(time.Second))
	case err == nil:
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a POST whose body stalled: %d, want 400", resp.StatusCode)
		}
	}
	// A body that arrives in time, slowly, is read.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}}`
	c = rawPost(t, url, len(body), "")
	for i := 0; i < len(body); i += 20 {
		time.Sleep(20 * time.Millisecond)
		io.WriteString(c, body[i:min(i+20, len(body))])
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a body sent in pieces within --timeout: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized { // no token: read, then refused
		t.Errorf("a body sent in pieces within --timeout: %d, want 401", resp.StatusCode)
	}
}

// TestReview24LongAnswersNotCut: the deadline of a request (--timeout)
// ends with its body: a POST whose answer, an event stream, lasts longer
// than --timeout (each event within it) is relayed whole, as is a GET
// event stream, and the connection serves the next request. (net/http
// lifts the read deadline when it starts reading the connection for the
// client's leaving; a read failing on the deadline then would cancel the
// request as if the client had gone.)
func TestReview24LongAnswersNotCut(t *testing.T) {
	answeringDownstream(t) // saves the flags and arguments
	const events = 6
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := range events {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":"+strconv.Itoa(i)+"}}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond)
		}
		if r.Method == http.MethodPost {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n")
		}
	}))
	t.Cleanup(down.Close)
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--timeout", "1")
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	defer stop()
	client := &http.Client{Timeout: 8 * time.Second}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodPost} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":1}}}`)
		}
		req, _ := http.NewRequest(method, url+"/mcp", body)
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v\n%s", method, err, logs)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := strings.Count(string(got), `"progress":`); err != nil || n != events {
			t.Errorf("%s: %d of %d events relayed (err %v), answer:\n%s\nlogs:\n%s", method, n, events, err, got, logs)
		}
		if method == http.MethodPost && !strings.Contains(string(got), `"result"`) {
			t.Errorf("POST: the answer's result was not relayed:\n%s", got)
		}
	}
}

// TestReview24IdleConnectionClosed: a kept-alive connection with no
// request under way is closed after idleTimeout (2 minutes). The server
// had no idle timeout: a client could open connections, make one request
// on each (a GET /healthz needs no token) and keep them for ever, until
// the gateway ran out of file descriptors or memory.
func TestReview24IdleConnectionClosed(t *testing.T) {
	old := idleTimeout
	idleTimeout = 300 * time.Millisecond
	t.Cleanup(func() { idleTimeout = old })
	down := answeringDownstream(t)
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp")
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	defer stop()
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = br.ReadByte()
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("an idle kept-alive connection was still open 3 s later (idle timeout %v)", idleTimeout)
	case err == nil:
		t.Errorf("the gateway sent a byte on an idle connection")
	}
}

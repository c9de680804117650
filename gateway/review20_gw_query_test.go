package gateway

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReview20QueryKeepsRequestLine checks the client's query that the
// gateway passes on: over HTTP/2, a :path may hold spaces (url.
// ParseRequestURI, which the server parses it with, refuses only control
// characters), and a query "x HTTP/1.0" made the gateway send the request
// line "GET /mcp?x HTTP/1.0 HTTP/1.1", which a downstream reads as another
// request than the gateway sent, or refuses. Bytes a request line cannot
// hold are sent percent-encoded, as the query means the same to a
// downstream that decodes it, on both transports.
func TestReview20QueryKeepsRequestLine(t *testing.T) {
	for _, std := range []bool{false, true} {
		name := "own_client"
		if std {
			name = "std_transport"
		}
		t.Run(name, func(t *testing.T) {
			lines := make(chan string, 4)
			down := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				line, _ := br.ReadString('\n')
				lines <- line
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			})
			o := &Options{Logger: discardLogger()}
			if std {
				o.Transport = NewTransport()
			}
			g, err := New(down+"/mcp", DemoTokens(), o)
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewUnstartedServer(g)
			gw.Config.Protocols = new(http.Protocols)
			gw.Config.Protocols.SetUnencryptedHTTP2(true)
			gw.Start()
			t.Cleanup(gw.Close)
			host := strings.TrimPrefix(gw.URL, "http://")
			for _, q := range []string{"x HTTP/1.0", "a b#c", "é"} {
				status := h2Get(t, host, "/mcp?"+q, "Bearer admin-token")
				var line string
				select {
				case line = <-lines:
				case <-time.After(5 * time.Second):
					t.Fatalf("query %q: answer %d, and no request reached the downstream", q, status)
				}
				uri, ok := strings.CutPrefix(line, "GET ")
				uri, ok2 := strings.CutSuffix(uri, " HTTP/1.1\r\n")
				if !ok || !ok2 || !strings.HasPrefix(uri, "/mcp?") || strings.ContainsFunc(uri, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '#' }) {
					t.Errorf("query %q: the downstream got the request line %q", q, line)
				}
			}
		})
	}
}

// h2Get sends a GET of path to host over HTTP/2 without TLS (prior
// knowledge), with frames made by hand (a :path Go's client would not
// send), and returns the answer's status.
func h2Get(t *testing.T, host, path, auth string) int {
	t.Helper()
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	frame := func(typ, flags byte, stream uint32, p []byte) []byte {
		f := []byte{byte(len(p) >> 16), byte(len(p) >> 8), byte(len(p)), typ, flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(f[5:], stream)
		return append(f, p...)
	}
	var hb []byte
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", host},
		{":path", path}, {"authorization", auth}, {"accept", "text/event-stream"}} {
		// A literal field without indexing, new name, no Huffman coding.
		hb = append(hb, 0, byte(len(kv[0])))
		hb = append(hb, kv[0]...)
		hb = append(hb, byte(len(kv[1])))
		hb = append(hb, kv[1]...)
	}
	out := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	out = append(out, frame(4, 0, 0, nil)...)  // SETTINGS
	out = append(out, frame(1, 0x5, 1, hb)...) // HEADERS, END_STREAM|END_HEADERS
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	for {
		var h [9]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			t.Fatalf("GET %q: %v", path, err)
		}
		p := make([]byte, int(h[0])<<16|int(h[1])<<8|int(h[2]))
		if _, err := io.ReadFull(c, p); err != nil {
			t.Fatal(err)
		}
		stream := binary.BigEndian.Uint32(h[5:]) & 0x7fffffff
		switch {
		case h[3] == 4 && h[4]&1 == 0: // SETTINGS: acknowledge
			c.Write(frame(4, 1, 0, nil))
		case h[3] == 1 && stream == 1: // HEADERS: :status is indexed (static table 8-14) or literal
			if len(p) > 0 && p[0]&0x80 != 0 {
				switch p[0] & 0x7f {
				case 8:
					return 200
				case 13:
					return 404
				case 14:
					return 500
				}
			}
			return -1
		case h[3] == 3 && stream == 1: // RST_STREAM
			return 0
		case h[3] == 7: // GOAWAY
			return 0
		}
	}
}

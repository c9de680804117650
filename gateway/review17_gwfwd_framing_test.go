package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestReview17OddAnswerFraming checks what the client gets, through the
// gateway, for downstream answers framed in unusual or broken ways:
// informational answers before the final one (skipped, at most ten), a
// 101 (never relayed: the gateway speaks HTTP only), a status outside
// 100-999, Content-Length next to chunked framing (chunked wins, the
// length is not relayed, or the client would wait for bytes that never
// come), trailers (never relayed: the gateway's identity headers cannot
// be named there), a 204 with a body, and a body delimited by the
// connection's close (HTTP/1.0).
func TestReview17OddAnswerFraming(t *testing.T) {
	const (
		ok   = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
		cont = "HTTP/1.1 100 Continue\r\n\r\n"
	)
	for _, tc := range []struct {
		name   string
		answer string
		status int
		body   string
	}{
		{"three_informational", cont + "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + ok, 200, "{}"},
		{"eleven_informational", strings.Repeat(cont, 11) + ok, 502, ""},
		{"switching_protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n" + ok, 502, ""},
		{"status_below_100", "HTTP/1.1 099 Odd\r\nContent-Length: 2\r\n\r\n{}", 502, ""},
		{"status_1000", "HTTP/1.1 1000 Odd\r\nContent-Length: 2\r\n\r\n{}", 502, ""},
		{"content_length_and_chunked", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 200, "{}"},
		{"trailers", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTrailer: X-Mcp-Gateway-Role, Mcp-Session-Id\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Mcp-Gateway-Role: admin\r\nMcp-Session-Id: other\r\n\r\n", 200, "{}"},
		{"no_content_with_body", "HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n{}", 204, ""},
		{"http10_until_close", "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {}\n\n", 200, "data: {}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.ReadAll(req.Body)
				io.WriteString(c, tc.answer)
			})
			g, err := New(url+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "echo", "")))
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Errorf("reading the answer: %v", err)
			}
			if resp.StatusCode != tc.status {
				t.Errorf("status %d (%q), want %d", resp.StatusCode, b, tc.status)
			}
			if tc.status < 300 && string(b) != tc.body {
				t.Errorf("body %q, want %q", b, tc.body)
			}
			if len(resp.Trailer) > 0 || resp.Header.Get("Trailer") != "" || resp.Header.Get(HeaderRole) != "" || resp.Header.Get("Mcp-Session-Id") != "" {
				t.Errorf("trailers %v, header %v: the downstream's trailers were relayed", resp.Trailer, resp.Header)
			}
			if tc.status == 502 {
				if _, code, _ := rpcErr(t, string(b)); code != CodeUpstreamUnavailable {
					t.Errorf("error code %d, want %d", code, CodeUpstreamUnavailable)
				}
			}
		})
	}
}

package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview17PoolLeavesNoLeftovers checks the keep-alive pool of the
// gateway's own client against a downstream that writes more than its
// answer (a second response, a 204's body, the rest a Content-Length
// announced next to chunked framing), with the answer or once it was read:
// a connection with bytes left over is never reused, so the next request
// reads its own answer, not the leftovers. It also checks which
// well-formed answers keep their connection (HTTP/1.0 keep-alive) and
// which do not (HTTP/1.0, Connection: close).
func TestReview17PoolLeavesNoLeftovers(t *testing.T) {
	const stray = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstray!"
	for _, tc := range []struct {
		name  string
		first string // the answer to a connection's first request
		late  string // written once that answer was read
		body  string // the first answer's body as read
		conns int64
	}{
		{"second_response_same_write", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst" + stray, "", "first", 2},
		{"second_response_later", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst", stray, "first", 2},
		{"204_with_body_same_write", "HTTP/1.1 204 No Content\r\n\r\n" + stray, "", "", 2},
		{"204_with_body_later", "HTTP/1.1 204 No Content\r\n\r\n", stray, "", 2},
		{"content_length_and_chunked", "HTTP/1.1 200 OK\r\nContent-Length: 200\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\n\r\n" + stray, "", "first", 2},
		{"bytes_after_chunked_end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\n\r\nxyz", "", "first", 2},
		{"http10_keep_alive_reused", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nfirst", "", "first", 1},
		{"http10_closed", "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nfirst", "", "first", 2},
		{"connection_close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nfirst", "", "first", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			read, lateWritten := make(chan struct{}), make(chan struct{})
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				n := conns.Add(1)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.ReadAll(req.Body)
					if n == 1 && i == 0 {
						io.WriteString(c, tc.first)
						if tc.late != "" {
							<-read
							io.WriteString(c, tc.late) // on loopback, received once written
							close(lateWritten)
						}
						continue
					}
					b := "answer-" + strconv.Itoa(i) + "-of-conn-" + strconv.FormatInt(n, 10)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"+b)
				}
			})
			c := newUpstreamClient()
			resp, body := doGet(t, c, http.MethodPost, url+"/first", strings.NewReader("1"))
			if body != tc.body {
				t.Errorf("first answer %d %q, want %q", resp.StatusCode, body, tc.body)
			}
			if tc.late != "" {
				close(read)
				<-lateWritten
			}
			_, body = doGet(t, c, http.MethodPost, url+"/second", strings.NewReader("2"))
			want := "answer-0-of-conn-2"
			if tc.conns == 1 {
				want = "answer-1-of-conn-1"
			}
			if diff := cmp.Diff(want, body); diff != "" {
				t.Errorf("second answer (-want +got):\n%s", diff)
			}
			if n := conns.Load(); n != tc.conns {
				t.Errorf("%d connections, want %d", n, tc.conns)
			}
		})
	}
}

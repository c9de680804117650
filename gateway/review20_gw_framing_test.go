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
)

// TestReview20MalformedFramingNotReused checks the gateway's own client
// against answers whose framing is malformed or ambiguous, each of which
// a hostile or broken downstream (or a device between) could use to make
// the gateway read another answer's bytes as the next request's: the
// answer fails (or, where net/http reads it one way, is read so), and its
// connection is never used again, so the next request gets its own answer
// on a new connection.
func TestReview20MalformedFramingNotReused(t *testing.T) {
	const next = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstray!"
	for _, tc := range []struct {
		name, answer string
		fails        bool   // the first answer's header or body read fails
		body         string // else its body
		closes       bool   // the downstream closes after the answer
	}{
		{"two_content_lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 11\r\n\r\nfirst" + next, true, "", false},
		{"content_length_list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nfirst" + next, true, "", false},
		{"content_length_plus", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nfirst" + next, true, "", false},
		{"chunk_size_leading_zeros", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000005\r\nfirst\r\n0\r\n\r\n" + next, true, "", false},
		{"chunk_size_overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nfirst\r\n0\r\n\r\n" + next, true, "", false},
		{"chunk_size_bare_lf", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nfirst\r\n0\r\n\r\n" + next, true, "", false},
		{"chunk_size_negative", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nfirst\r\n0\r\n\r\n" + next, true, "", false},
		{"chunk_extension_long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + strings.Repeat("x", 8<<10) + "\r\nfirst\r\n0\r\n\r\n" + next, true, "", false},
		{"trailer_long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\n" + strings.Repeat("X-T: a\r\n", 4<<10) + "\r\n" + next, true, "", false},
		{"transfer_encoding_gzip_chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nfirst\r\n0\r\n\r\n" + next, true, "", false},
		{"transfer_encoding_identity", "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nfirst" + next, true, "", false},
		// net/http skips a field name with a space: the body is
		// delimited by the connection's close.
		{"header_name_space", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nfirst" + next, false, "first" + next, true},
		{"continue_then_switching", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n" + next, true, "", false},
		{"http10_chunked_and_length", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nfirst" + next, false, "first", false},
		{"obs_fold_header", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 5\r\n\r\nfirst" + next, false, "first", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				n := conns.Add(1)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.ReadAll(req.Body)
					if n == 1 && i == 0 {
						io.WriteString(c, tc.answer)
						if tc.closes {
							return
						}
						continue
					}
					b := "answer-" + strconv.Itoa(i) + "-of-conn-" + strconv.FormatInt(n, 10)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"+b)
				}
			})
			c := newUpstreamClient()
			req, _ := http.NewRequest(http.MethodPost, url+"/first", strings.NewReader("1"))
			resp, err := c.RoundTrip(req)
			if err == nil {
				b, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				err = rerr
				if rerr == nil && (tc.fails || string(b) != tc.body) {
					t.Errorf("first answer read whole: %d %q", resp.StatusCode, b)
				}
			}
			if (err != nil) != tc.fails {
				t.Errorf("first answer's error: %v; want one: %v", err, tc.fails)
			}
			_, body := doGet(t, c, http.MethodPost, url+"/second", strings.NewReader("2"))
			if body != "answer-0-of-conn-2" {
				t.Errorf("second answer %q, want %q (a new connection's)", body, "answer-0-of-conn-2")
			}
		})
	}
}

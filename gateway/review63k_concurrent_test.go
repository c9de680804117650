package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestReview63kConcurrentPrincipalsOddFraming drives concurrent tools/calls
// of two principals through a gateway whose downstream answers each in
// one of several valid framings (informational answers first, chunk
// extensions and trailers, Content-Length next to chunked, HTTP/1.0
// keep-alive, a 204 between calls): every caller must get the answer to
// its own call, named by its id and its principal, never another's.
func TestReview63kConcurrentPrincipalsOddFraming(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(req.Body)
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(b, &m)
			if m.ID == nil {
				io.WriteString(c, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
				continue
			}
			text := req.Header.Get(HeaderSubject) + "/" + string(m.ID)
			body := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
			cl := strconv.Itoa(len(body))
			const ct = "Content-Type: application/json\r\n"
			var a string
			switch n % 5 {
			case 0:
				a = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" +
					"HTTP/1.1 200 OK\r\n" + ct + "Content-Length: " + cl + "\r\n\r\n" + body
			case 1:
				h := len(body) / 2
				a = "HTTP/1.1 200 OK\r\n" + ct + "Transfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n" +
					fmt.Sprintf("%x;ext=1\r\n%s\r\n%x;a=\"b\"\r\n%s\r\n0;last\r\nX-T: t\r\n\r\n", h, body[:h], len(body)-h, body[h:])
			case 2:
				a = "HTTP/1.1 200 OK\r\n" + ct + "Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n" +
					fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
			case 3:
				a = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n" + ct + "Content-Length: " + cl + "\r\n\r\n" + body
			case 4:
				a = "HTTP/1.1 200 OK\r\n" + ct + "Content-Length: " + cl + "\r\nContent-Length: " + cl + "\r\n\r\n" + body
			}
			if _, err := io.WriteString(c, a); err != nil {
				return
			}
		}
	})
	g, err := New(url+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			auth, sub := viewer, "viewer"
			if w%2 == 1 {
				auth, sub = admin, "admin"
			}
			for i := range 20 {
				id := strconv.Itoa(w*1000 + i)
				req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(id, "echo", "")))
				req.Header.Set("Authorization", auth)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := sub + "/" + id; resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"`+want+`"`) {
					errs <- fmt.Sprintf("%s call %s: %d %s, want the text %q", sub, id, resp.StatusCode, b, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

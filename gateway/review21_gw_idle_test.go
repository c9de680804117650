package gateway

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReview21IdleStreamNotCut checks the write guard against event
// streams whose client reads: a GET stream silent for 1.5 timeouts
// between two events, and a POST's stream whose events come every 0.4
// timeout for 1.6 timeouts in all, reach their client whole, plain and
// with Pins (which checks every event), over HTTP/1 and HTTP/2. The guard
// bounds a write that does not complete, never the time between writes.
// (The timeout is 1 s so that a busy machine does not make the POST's
// downstream miss it.)
func TestReview21IdleStreamNotCut(t *testing.T) {
	const timeout = time.Second
	for _, mode := range []string{"plain", "pins"} {
		for _, h2 := range []bool{false, true} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				name := mode + "_" + method + "_h1"
				if h2 {
					name = mode + "_" + method + "_h2"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					gaps := []time.Duration{timeout * 3 / 2}
					if method == http.MethodPost {
						gaps = []time.Duration{timeout * 2 / 5, timeout * 2 / 5, timeout * 2 / 5, timeout * 2 / 5}
					}
					down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Type", "text/event-stream")
						w.WriteHeader(http.StatusOK)
						rc := http.NewResponseController(w)
						ev := func(i int) {
							w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":" + string(rune('0'+i)) + "}}\n\n"))
							rc.Flush()
						}
						ev(0)
						for i, d := range gaps {
							time.Sleep(d)
							ev(i + 1)
						}
						if method == http.MethodPost {
							w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"))
						}
					}))
					o := Options{Timeout: timeout, Logger: discardLogger()}
					body := inMode(&o, mode)
					g, err := New(down.URL+"/mcp", DemoTokens(), &o)
					if err != nil {
						t.Fatal(err)
					}
					srv := newServer(t, g)
					client := srv.Client()
					if h2 {
						srv.Close()
						srv = newH2CServer(t, g)
						tr := &http.Transport{Protocols: new(http.Protocols)}
						tr.Protocols.SetUnencryptedHTTP2(true)
						t.Cleanup(tr.CloseIdleConnections)
						client = &http.Client{Transport: tr}
					}
					if method == http.MethodGet {
						body = ""
					}
					req, _ := http.NewRequest(method, srv.URL+"/mcp", strings.NewReader(body))
					req.Header.Set("Authorization", admin)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					resp, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					if h2 && resp.ProtoMajor != 2 {
						t.Fatalf("answer over %s, want HTTP/2", resp.Proto)
					}
					sc := bufio.NewScanner(resp.Body)
					n := 0
					for sc.Scan() {
						if strings.HasPrefix(sc.Text(), "data:") {
							n++
						}
					}
					want := len(gaps) + 1
					if method == http.MethodPost {
						want++
					}
					if n != want || sc.Err() != nil {
						t.Fatalf("%s: %d events read, then %v; want %d and a clean end", method, n, sc.Err(), want)
					}
				})
			}
		}
	}
}

// newH2CServer serves h over HTTP/2 without TLS (and HTTP/1).
func newH2CServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetHTTP1(true)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

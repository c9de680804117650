package gateway

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReview63kTLSPartialLeftoverRecord: a downstream that sends, after a
// complete answer and in the same TCP write, the first bytes of another
// TLS record (a forged second answer, its rest sent later) leaves those
// bytes in the TLS connection's buffer: tlsDrained's read with a deadline
// in the past finds no whole record and reports the connection drained.
// The connection must not be reused, as when the whole record arrived
// (TestReview28bTLSLeftoverRecord) or as a plain connection with bytes
// after its answer is not: the next request, another caller's, would get
// that record as its answer.
func TestReview63kTLSPartialLeftoverRecord(t *testing.T) {
	ca := newTestCA(t, "server-ca")
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	srvCfg := &tls.Config{Certificates: []tls.Certificate{ca.issue(t, false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))}}
	var conns atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for {
			nc, err := raw.Accept()
			if err != nil {
				return
			}
			first := conns.Add(1) == 1
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				hc := &holdConn{Conn: nc}
				tc := tls.Server(hc, srvCfg)
				br := bufio.NewReader(tc)
				var rest []byte // the forged record's bytes not sent yet
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if first && n == 0 {
						// The answer, then a forged one in its own record:
						// the answer and the forged record's first three
						// bytes in one TCP write, the rest held back.
						hc.hold = true
						io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA")
						ans := hc.buf.Len()
						io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled")
						all := bytes.Clone(hc.buf.Bytes())
						hc.buf.Reset()
						hc.hold = false
						rest = all[ans+3:]
						if _, err := nc.Write(all[:ans+3]); err != nil {
							return
						}
						continue
					}
					if rest != nil {
						nc.Write(rest)
						rest = nil
					}
					io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nC")
				}
			}()
		}
	}()
	c := newUpstreamClient()
	c.tlsConfig = &tls.Config{RootCAs: ca.pool}
	defer c.CloseIdleConnections()
	url := "https://" + raw.Addr().String() + "/mcp"
	for i, want := range []string{"A", "C"} {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{}`)))
		resp, err := c.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if string(body) != want {
			t.Fatalf("request %d got %q, want %q: a partial record left in the TLS connection's buffer was taken for its answer", i, body, want)
		}
	}
}

// TestReview63kTLSPartialRecordOtherPrincipal is the same through a
// gateway: a downstream that writes an answer twice (the copy's first TLS
// bytes with the answer, the rest later) must not have the copy, the
// viewer's answer, relayed to the admin's next call.
func TestReview63kTLSPartialRecordOtherPrincipal(t *testing.T) {
	ca := newTestCA(t, "server-ca")
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	srvCfg := &tls.Config{Certificates: []tls.Certificate{ca.issue(t, false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))}}
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for {
			nc, err := raw.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				hc := &holdConn{Conn: nc}
				tc := tls.Server(hc, srvCfg)
				br := bufio.NewReader(tc)
				var rest []byte
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					var m struct {
						ID json.RawMessage `json:"id"`
					}
					json.Unmarshal(b, &m)
					body := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"` +
						req.Header.Get(HeaderSubject) + `"}]}}`
					answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
						strconv.Itoa(len(body)) + "\r\n\r\n" + body
					if rest != nil {
						nc.Write(rest)
						rest = nil
					}
					// The answer, written twice: the copy's first three bytes
					// go with the answer, its rest with the next answer.
					hc.hold = true
					io.WriteString(tc, answer)
					n := hc.buf.Len()
					io.WriteString(tc, answer)
					all := bytes.Clone(hc.buf.Bytes())
					hc.buf.Reset()
					hc.hold = false
					rest = all[n+3:]
					if _, err := nc.Write(all[:n+3]); err != nil {
						return
					}
				}
			}()
		}
	}()
	g, err := New("https://"+raw.Addr().String()+"/mcp", DemoTokens(),
		&Options{Logger: discardLogger(), TLSConfig: &tls.Config{RootCAs: ca.pool}})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for i, who := range []struct{ auth, sub string }{{viewer, "viewer"}, {admin, "admin"}} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(strconv.Itoa(i+1), "echo", "")))
		req.Header.Set("Authorization", who.auth)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"text":"`+who.sub+`"`) {
			t.Errorf("%s's call %d: got %d %s, want its own answer", who.sub, i+1, resp.StatusCode, b)
		}
	}
}

package gateway

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
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
	var rest []byte // the forged record's bytes not sent yet, on connection 1
	addr, ca := tlsDownstream(t, func(conn int64, n int, _ *http.Request, hc *holdConn, tc *tls.Conn) error {
		switch {
		case conn == 1 && n == 0:
			// The answer, then a forged one in its own record: the answer
			// and the forged record's first three bytes in one TCP write,
			// the rest held back.
			var err error
			rest, err = hc.writeSplit(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA",
				"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled", 3)
			return err
		case conn == 1 && rest != nil:
			hc.Conn.Write(rest) // on the first connection only
			rest = nil
		}
		_, err := io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nC")
		return err
	})
	tlsAnswers(t, addr, ca, "a partial record left in the TLS connection's buffer was taken for its answer", "A", "C")
}

// TestReview63kTLSPartialRecordOtherPrincipal is the same through a
// gateway: a downstream that writes an answer twice (the copy's first TLS
// bytes with the answer, the rest later) must not have the copy, the
// viewer's answer, relayed to the admin's next call.
func TestReview63kTLSPartialRecordOtherPrincipal(t *testing.T) {
	var mu sync.Mutex
	rests := map[int64][]byte{} // by connection: the copy's bytes not sent yet
	addr, ca := tlsDownstream(t, func(conn int64, _ int, req *http.Request, hc *holdConn, tc *tls.Conn) error {
		b, _ := io.ReadAll(req.Body)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(b, &m)
		body := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"` +
			req.Header.Get(HeaderSubject) + `"}]}}`
		answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body
		mu.Lock()
		rest := rests[conn]
		mu.Unlock()
		if rest != nil {
			hc.Conn.Write(rest)
		}
		// The answer, written twice: the copy's first three bytes go with
		// the answer, its rest with the next answer.
		rest, err := hc.writeSplit(tc, answer, answer, 3)
		mu.Lock()
		rests[conn] = rest
		mu.Unlock()
		return err
	})
	g, err := New("https://"+addr+"/mcp", DemoTokens(),
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

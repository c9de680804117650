package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// lateReader is a Transport that answers at once and reads the request
// body afterwards, in a goroutine, as http.RoundTripper allows ("may do so
// in a separate goroutine even after RoundTrip returns"): it records each
// body as it reads it once the next request has been answered.
type lateReader struct {
	mu     sync.Mutex
	n      int            // requests so far
	bodies map[int]string // by the request's place
	prev   chan struct{}  // closed when the next request arrives
	wg     sync.WaitGroup
}

func (l *lateReader) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	if l.prev != nil {
		close(l.prev)
	}
	next := make(chan struct{})
	l.prev = next
	i := l.n
	l.n++
	l.mu.Unlock()
	body := r.Body
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		<-next // the gateway has answered this request and taken the next
		b, _ := io.ReadAll(body)
		body.Close()
		l.mu.Lock()
		l.bodies[i] = string(b)
		l.mu.Unlock()
	}()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`))}, nil
}

// TestOtherTransportReadsItsOwnBody: the request body of a call is the
// gateway's pooled buffer, given back when its handler returns; a
// Transport may read (and close) the body after RoundTrip returned, so
// another Transport than the gateway's own is given a copy: it must read
// each call's own bytes, never the next call's.
func TestOtherTransportReadsItsOwnBody(t *testing.T) {
	lr := &lateReader{bodies: map[int]string{}}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: lr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for i := range 8 {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"id":"` + strings.Repeat(string(rune('a'+i)), 64) + `"}}}`
		sent = append(sent, body)
		req := httptest.NewRequest(http.MethodPost, "http://gw/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("call %d: status %d", i, w.Code)
		}
	}
	lr.mu.Lock()
	close(lr.prev)
	lr.mu.Unlock()
	lr.wg.Wait()
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if len(lr.bodies) != len(sent) {
		t.Fatalf("the Transport read %d bodies, want %d", len(lr.bodies), len(sent))
	}
	for i := range sent {
		if b := lr.bodies[i]; !bytes.Equal([]byte(b), []byte(sent[i])) {
			t.Errorf("call %d: the Transport read %q, want %q", i, b, sent[i])
		}
	}
}

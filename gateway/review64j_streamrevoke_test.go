package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// r64jDown is a downstream whose answer to a GET, or to a
// subscriptions/listen, is an event stream: one event at once, a second
// once release is closed (a log message carrying data; a sampling or
// elicitation request of the downstream's would come so too), then held
// open until its request ends.
type r64jDown struct{ release chan struct{} }

func (d *r64jDown) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"first\"}}\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-d.release:
	case <-r.Context().Done():
		return
	}
	io.WriteString(w, "id: 2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"after-revocation-secret\"}}\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestReview64jStreamOutlivesRevocation: a caller whose token the
// authorization server revokes keeps its open GET stream (and its
// subscriptions/listen stream) through the gateway, and goes on receiving
// what the downstream sends on it for as long as it keeps the connection
// (hours: neither is bounded by Timeout), though the gateway asks the
// introspection endpoint at every request (no cache, the example's
// --introspect-cache-ttl 0, whose README says a revoked token is accepted
// at most until the cached answer ends). The token was checked once, when
// the stream opened; nothing checks it again, so a revoked (or expired)
// token's access does not end. No doc says a stream outlives its token.
func TestReview64jStreamOutlivesRevocation(t *testing.T) {
	for _, listen := range []bool{false, true} {
		name := "GET"
		if listen {
			name = "listen"
		}
		t.Run(name, func(t *testing.T) {
			in, revoked := r64jRevocable(t)
			d := &r64jDown{release: make(chan struct{})}
			ds := newServer(t, d)
			t.Cleanup(ds.CloseClientConnections)
			g, err := New(ds.URL+"/mcp", in, &Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			gs := newServer(t, g)
			t.Cleanup(gs.CloseClientConnections)

			s := r64jOpen(t, gs.URL, "Bearer opaque-token-1", listen)
			defer s.close()
			if !strings.Contains(s.next(t), `"first"`) {
				t.Fatal("the stream's first event did not come")
			}
			// The operator revokes the token: a new request is refused.
			revoked.Store(true)
			if rep := (&rig{url: gs.URL}).post(t, "Bearer opaque-token-1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); rep.status != http.StatusUnauthorized {
				t.Fatalf("a request with the revoked token: status %d, want 401", rep.status)
			}
			close(d.release)
			if ev := s.next(t); strings.Contains(ev, "after-revocation-secret") {
				t.Errorf("the stream opened before the revocation went on after it: the revoked caller got %q", ev)
			}
		})
	}
}

// r64jStream is an event stream read line by line.
type r64jStream struct {
	lines chan string
	close func()
}

// r64jOpen opens a GET stream or a subscriptions/listen one at base.
func r64jOpen(t *testing.T, base, auth string, listen bool) *r64jStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	method, body := http.MethodGet, io.Reader(nil)
	if listen {
		method, body = http.MethodPost, strings.NewReader(r27Listen)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/mcp", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if listen {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if !isSSE(resp.Header) {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("status %d, not an event stream: %s", resp.StatusCode, b)
	}
	s := &r64jStream{lines: make(chan string, 64), close: func() { cancel(); resp.Body.Close() }}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				s.lines <- sc.Text()
			}
		}
	}()
	return s
}

// next returns the next event's data, or "" once the stream ended or
// after 3 s.
func (s *r64jStream) next(t *testing.T) string {
	t.Helper()
	select {
	case l := <-s.lines:
		return l
	case <-time.After(3 * time.Second):
		return ""
	}
}

// r64jRevocable returns an Introspector that asks its endpoint at every
// request (no cache), and the switch that revokes the token there: until
// it is set, any token stands for ann, role support.
func r64jRevocable(t *testing.T) (*token.Introspector, *atomic.Bool) {
	t.Helper()
	revoked := new(atomic.Bool)
	as := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if revoked.Load() {
			io.WriteString(w, `{"active":false}`)
			return
		}
		io.WriteString(w, `{"active":true,"sub":"ann","aud":"mcp","scope":"support"}`)
	}))
	in, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint: as.URL, Audience: "mcp", CacheTTL: -1, NegativeCacheTTL: -1,
		Timeout: 5 * time.Second, ErrorHandler: func(error) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	return in, revoked
}

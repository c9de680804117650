package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReview64qBatchListenOutlivesRevocation: the package doc says a
// subscriptions/listen stream "is authenticated again before each write
// to its client, and ends once its token is refused", and Options.MaxStreams
// that a subscriptions/listen in a batch "ends as a single one does". One
// sent as a batch member is relayed by the batch ([batchOut.relay]), which
// never authenticates its token again: after the token is revoked (a new
// request is refused 401), the batch's stream goes on delivering what the
// downstream sends for as long as the client holds it.
func TestReview64qBatchListenOutlivesRevocation(t *testing.T) {
	in, revoked := r64jRevocable(t)
	d := &r64jDown{release: make(chan struct{})}
	ds := newServer(t, d)
	t.Cleanup(ds.CloseClientConnections)
	g, err := New(ds.URL+"/mcp", in, &Options{Logger: discardLogger(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gs := newServer(t, g)
	t.Cleanup(gs.CloseClientConnections)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	second := strings.Replace(r27Listen, `"l-1"`, `"l-2"`, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, gs.URL+"/mcp",
		strings.NewReader("["+r27Listen+","+second+"]"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer opaque-token-1")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !isSSE(resp.Header) {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, not an event stream: %s", resp.StatusCode, b)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				lines <- sc.Text()
			}
		}
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(2 * time.Second):
			return ""
		}
	}
	if !strings.Contains(next(), `"first"`) {
		t.Fatal("the stream's first event did not come")
	}
	next() // the second member's first event
	revoked.Store(true)
	if rep := (&rig{url: gs.URL}).post(t, "Bearer opaque-token-1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); rep.status != http.StatusUnauthorized {
		t.Fatalf("a request with the revoked token: status %d, want 401", rep.status)
	}
	close(d.release)
	if ev := next(); strings.Contains(ev, "after-revocation-secret") {
		t.Errorf("a batch's subscriptions/listen opened before the revocation went on after it: got %q", ev)
	}
}

package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReview64qRevokedInsideEventCut: a GET stream whose token is refused
// again between two parts of one event (the downstream's event came in two
// reads) ends cleanly after the cut line. EndStreams' doc: "One cut inside
// an event ends as a broken stream does (the connection reset): a clean end
// after a cut line would fail a go-sdk client's session". The stream whose
// token is refused ends so that "the client's request to resume it is
// decided anew" (package doc); a clean end inside an event fails the
// session instead (its roles changed, say, where the new request would be
// accepted).
func TestReview64qRevokedInsideEventCut(t *testing.T) {
	in, revoked := r64jRevocable(t)
	release := make(chan struct{})
	ds := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "\"data\":\"rest\"}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(ds.CloseClientConnections)
	g, err := New(ds.URL+"/mcp", in, &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gs := newServer(t, g)
	t.Cleanup(gs.CloseClientConnections)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gs.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer opaque-token-1")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), `"level":"info",`) {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("the event's first part did not come: %v (%q)", err, got)
		}
	}
	revoked.Store(true)
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if ctx.Err() != nil {
		t.Fatal("the stream did not end after its token was refused")
	}
	if err == nil {
		t.Errorf("the stream ended cleanly inside an event (%q then %q): a go-sdk client "+
			"dispatches the cut line and fails its session; want the connection broken", got, rest)
	}
}

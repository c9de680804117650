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

// r65dListenDown answers a subscriptions/listen with an event stream that
// acknowledges it and then stays silent until its request ends (nothing
// changes), and any other request with an empty JSON result for id p-1.
func r65dListenDown() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), "subscriptions/listen") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":"p-1","result":{}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\","+
			"\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// TestReview65dBatchListenNotTimedOut: the package doc says the event
// stream answering a subscriptions/listen request "stays open, silent until
// something changes" and is not "bounded by Timeout once its header has
// come". Sent as a batch member beside another request, its stream was read
// as a call's answer is, each read bounded by Timeout: once silent for
// Timeout it was cut and answered -32003 "Upstream timed out", ending the
// merged stream, so the client lost its subscription every Timeout (30 s by
// default) of quiet. The other member's answer must still come at once.
func TestReview65dBatchListenNotTimedOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	_, base := r27Gateway(t, r65dListenDown(), Options{Timeout: timeout}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	body := "[" + r27Listen + `,{"jsonrpc":"2.0","id":"p-1","method":"ping"}]`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !isSSE(resp.Header) {
		t.Fatalf("answer %d %v, want an event stream", resp.StatusCode, resp.Header)
	}
	type line struct {
		s   string
		err error
		at  time.Duration
	}
	start := time.Now()
	lines := make(chan line, 64)
	go func() {
		br := bufio.NewReader(resp.Body)
		for {
			s, err := br.ReadString('\n')
			lines <- line{s, err, time.Since(start)}
			if err != nil {
				return
			}
		}
	}()
	pinged := false
	quiet := time.After(4 * timeout)
	for {
		select {
		case l := <-lines:
			switch {
			case strings.Contains(l.s, `"id":"p-1"`):
				pinged = true
			case strings.Contains(l.s, `"id":"l-1"`):
				t.Fatalf("the listen member was answered %v after the header, its stream ended "+
					"(Timeout %v): %s", l.at, timeout, l.s)
			case l.err != nil:
				t.Fatalf("the merged stream ended %v after the header (Timeout %v): %v", l.at, timeout, l.err)
			}
		case <-quiet:
			if !pinged {
				t.Errorf("the ping's answer did not come while the listen was open")
			}
			return
		}
	}
}

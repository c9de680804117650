package gateway

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedLog is a log destination safe for concurrent writes.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestReview21TimeoutLogSaysTimeout: a downstream that sends no answer
// within the timeout is logged as a timeout, not as "context canceled"
// (the gateway's own cancellation of the call, which read as if someone
// had cancelled it).
func TestReview21TimeoutLogSaysTimeout(t *testing.T) {
	release := make(chan struct{})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer down.Close()
	defer close(release)
	logs := &lockedLog{}
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{
		Logger:  slog.New(slog.NewTextHandler(logs, nil)),
		Timeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	got := postAs(t, gw.URL, viewer, call(`1`, "slow", `{}`))
	if got.status != http.StatusGatewayTimeout {
		t.Fatalf("status %d, body %s; want 504", got.status, got.body)
	}
	var line string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, `msg="upstream error"`) {
			line = l
		}
	}
	if !strings.Contains(line, "timeout=true") || !strings.Contains(line, "timed out") || strings.Contains(line, "context canceled") {
		t.Errorf("upstream error line %q; want it to say the downstream timed out, not context canceled", line)
	}
}

package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// TestReview27bMaxStreamsFlag: --max-streams left out caps one user's GET
// streams at 32 (the 33rd: 429 with Retry-After, never forwarded), 0 means
// no cap (gateway.Options wants a negative value for that: its zero is the
// default of 32), and 2 caps at 2, as the README and -h say.
func TestReview27bMaxStreamsFlag(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(down.Close)
	t.Cleanup(down.CloseClientConnections)
	for _, tc := range []struct {
		name    string
		args    []string
		fit     int // streams that must open
		refused bool
	}{
		{"default", nil, 32, true},
		{"zero_no_cap", []string{"--max-streams", "0"}, 33, false},
		{"two", []string{"--max-streams", "2"}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", down.URL + "/mcp"}, tc.args...)
			url, err, stop, logs := startRun(t, args...)
			if url == "" {
				t.Fatalf("gateway did not start: %v\n%s", err, logs)
			}
			defer stop()
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			open := func() *http.Response {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/mcp", nil)
				req.Header.Set("Authorization", "Bearer viewer-token")
				req.Header.Set("Accept", "text/event-stream")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			for i := 0; i < tc.fit; i++ {
				resp := open()
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("stream %d: %d, want 200", i+1, resp.StatusCode)
				}
			}
			if !tc.refused {
				return
			}
			resp := open()
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Errorf("stream %d: %d (Retry-After %q), want 429 with Retry-After", tc.fit+1, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		})
	}
}

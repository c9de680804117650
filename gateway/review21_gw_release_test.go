//go:build unix

package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview21StalledClientReleases checks what the write guard gives back
// when it ends the answer of a client that stopped reading: the call's
// in-flight place (the same user's next call, under a concurrency cap of
// 1, is answered), and its outcome record, written once, which says the
// call was relayed to a client that went away (the downstream answered;
// the client did not get it).
func TestReview21StalledClientReleases(t *testing.T) {
	for _, mode := range []string{"plain", "pins", "batch"} {
		for _, sse := range []bool{false, true} {
			name := mode + "_json"
			if sse {
				name = mode + "_sse"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				const size = 512 << 10 // far more than the buffers hold
				var calls atomic.Int64
				down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					pad := size
					if calls.Add(1) > 1 {
						pad = 10 // the next call's answer
					}
					msg := `{"jsonrpc":"2.0","id":1,"result":{"content":[],"pad":"` + strings.Repeat("a", pad) + `"}}`
					if sse {
						w.Header().Set("Content-Type", "text/event-stream")
						msg = "event: message\ndata: " + msg + "\n\n"
					} else {
						w.Header().Set("Content-Type", "application/json")
						w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
					}
					io.WriteString(w, msg)
				}))
				lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				sink := &memSink{}
				logs := &bytes.Buffer{}
				var mu sync.Mutex
				// A timeout of 4 s: the downstream's answer must not time
				// out on a busy machine under -race (2 s did, at a load of
				// 8 on 2 cores).
				o := Options{Timeout: 4 * time.Second, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil)), Limiter: lim, Audit: sink}
				body := inMode(&o, mode)
				if mode == "batch" {
					body = "[" + call(`1`, "echo", "") + "]"
				}
				g, err := New(down.URL+"/mcp", DemoTokens(), &o)
				if err != nil {
					t.Fatal(err)
				}
				ln, err := (&net.ListenConfig{Control: smallBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{}, 4)
				gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					defer func() { done <- struct{}{} }()
					g.ServeHTTP(w, r)
				}))
				gw.Listener = ln
				gw.Start()
				t.Cleanup(gw.Close)
				s := &ownAnswerRig{addr: ln.Addr().String()}
				s.send(t, body, "Authorization: "+admin) // and read nothing
				select {
				case <-done:
				case <-time.After(15 * time.Second):
					t.Fatal("the gateway's handler still runs 15 s after a client stopped reading (timeout 4 s)")
				}
				rg := &rig{url: gw.URL}
				if got := rg.post(t, admin, call(`2`, "echo", "")); got.status != http.StatusOK {
					t.Fatalf("the next call of the same user: %d %.200s; want 200 (its in-flight place given back)", got.status, got.body)
				}
				evs := sink.outcomes("echo")
				if len(evs) != 2 {
					t.Fatalf("%d outcome records of echo, want 2 (the stalled call's and the next's): %+v", len(evs), evs)
				}
				if e := evs[0]; !e.Allowed || e.Code != "" || e.Detail != clientGone {
					mu.Lock()
					defer mu.Unlock()
					t.Errorf("the stalled call's record: allowed %v, code %q, detail %q; want allowed, no code, detail %q; logs:\n%s", e.Allowed, e.Code, e.Detail, clientGone, logs)
				}
			})
		}
	}
}

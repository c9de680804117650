//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r28bStat reads the descriptors, threads and resident KiB of process pid.
func r28bStat(t *testing.T, pid int) (fds, threads, rssKiB int) {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Threads:" {
			threads, _ = strconv.Atoi(f[1])
		} else if len(f) >= 2 && f[0] == "VmRSS:" {
			rssKiB, _ = strconv.Atoi(f[1])
		}
	}
	return len(ents), threads, rssKiB
}

// TestReview28bSoakGatewayStatefulDownstream drives the gateway binary in
// front of a stateful go-sdk Streamable HTTP server (in this process, no
// session timeout, as the go-sdk's default) for 3 s (SOAK_SECONDS for
// longer, by hand): sessions opened through the gateway and abandoned
// without DELETE, sessions deleted, GET streams opened and cut, calls cut
// under way, by two token holders. Once the clients hang up, the gateway's
// descriptors and the downstream's goroutines (less those of the sessions
// the clients abandoned, which the downstream keeps) come back near their
// baselines, and each holder can again open --max-streams GET streams at
// once: no stream slot leaked with the streams cut.
func TestReview28bSoakGatewayStatefulDownstream(t *testing.T) {
	d := 3 * time.Second
	if v := os.Getenv("SOAK_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SOAK_SECONDS=%q", v)
		}
		d = time.Duration(n) * time.Second
	}
	bin := r25bBuild(t)

	srv := mcp.NewServer(&mcp.Implementation{Name: "stateful", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, struct{}{}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go hs.Serve(ln)
	defer hs.Close()

	const maxStreams = 8
	p, base := r25bStart(t, bin, pt27Tokens, "--upstream", "http://"+ln.Addr().String()+"/mcp", "--timeout", "2",
		"--max-streams", strconv.Itoa(maxStreams))
	pid := p.cmd.Process.Pid

	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	do := func(ctx context.Context, method, tok, sid, body string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, method, base+"/mcp", strings.NewReader(body))
		if err != nil {
			return nil
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil
		}
		return resp
	}
	drain := func(resp *http.Response) {
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	open := func(ctx context.Context, tok string) string {
		resp := do(ctx, "POST", tok, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"soak","version":"1"}}}`)
		if resp == nil {
			return ""
		}
		drain(resp)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid != "" {
			drain(do(ctx, "POST", tok, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		}
		return sid
	}
	var opened, refused atomic.Int64
	load := func(ctx context.Context) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				tok := []string{"viewer-token", "support-token"}[w%2]
				for i := 0; ctx.Err() == nil; i++ {
					sid := open(ctx, tok)
					if sid == "" {
						refused.Add(1)
						continue
					}
					opened.Add(1)
					switch i % 4 {
					case 0: // abandoned, without DELETE
					case 1: // called, then deleted
						drain(do(ctx, "POST", tok, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
						drain(do(ctx, "DELETE", tok, sid, ""))
					case 2: // a GET stream opened and cut
						cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
						drain(do(cctx, "GET", tok, sid, ""))
						cancel()
					case 3: // a call cut under way
						cctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
						drain(do(cctx, "POST", tok, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
						cancel()
					}
				}
			})
		}
		wg.Wait()
	}
	sessions := func() int {
		n := 0
		for range srv.Sessions() {
			n++
		}
		return n
	}

	warm, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	load(warm)
	cancel()
	tr.CloseIdleConnections()
	time.Sleep(300 * time.Millisecond)
	fds0, th0, rss0 := r28bStat(t, pid)
	s0, g0 := sessions(), runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	load(ctx)
	fds1, th1, rss1 := r28bStat(t, pid)
	s1, g1 := sessions(), runtime.NumGoroutine()
	tr.CloseIdleConnections()
	fds2, th2, rss2 := fds1, th1, rss1
	// The gateway keeps an idle downstream connection for each request the
	// load had under way at once (its pool, for 90 s by design): at most two
	// per worker (a POST and a GET stream) beyond the warm-up's. A leak
	// grows with the sessions opened (hundreds), not with the workers.
	const slack = 2 + 2*4
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if fds2, th2, rss2 = r28bStat(t, pid); fds2 <= fds0+slack {
			break
		}
	}
	g2 := runtime.NumGoroutine()
	t.Logf("%d sessions opened (%d refused); gateway fds %d -> %d -> %d, threads %d -> %d -> %d, RSS %d -> %d -> %d KiB; downstream sessions %d -> %d, goroutines %d -> %d -> %d",
		opened.Load(), refused.Load(), fds0, fds1, fds2, th0, th1, th2, rss0, rss1, rss2, s0, s1, g0, g1, g2)
	if fds2 > fds0+slack {
		t.Errorf("gateway descriptors %d after the load, baseline %d", fds2, fds0)
	}

	// Each holder opens maxStreams GET streams at once: the streams cut in
	// the load hold no slot.
	for _, tok := range []string{"viewer-token", "support-token"} {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var streams []*http.Response
		for i := range maxStreams {
			sid := open(sctx, tok)
			resp := do(sctx, "GET", tok, sid, "")
			if resp == nil || resp.StatusCode != http.StatusOK {
				st := -1
				if resp != nil {
					st = resp.StatusCode
					drain(resp)
				}
				t.Errorf("%s: GET stream %d of %d after the load: HTTP %d", tok, i+1, maxStreams, st)
				break
			}
			streams = append(streams, resp)
		}
		for _, r := range streams {
			r.Body.Close()
		}
		cancel()
	}
}

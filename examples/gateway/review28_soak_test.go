//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// r28Fds counts the open descriptors of process pid.
func r28Fds(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestReview28SoakGatewayBinary drives the gateway binary, in front of the
// refund server in HTTP mode, with a mixed load for 3 s (SOAK_SECONDS for
// longer, by hand): calls allowed, refused by the policy, by the argument
// limit, unauthenticated and with made-up tokens, calls cancelled under
// way, GET streams opened and cut, and slow clients stalled in their
// headers or body. Once the load stops and the clients hang up, the
// gateway's descriptors come back near the baseline.
func TestReview28SoakGatewayBinary(t *testing.T) {
	d := 3 * time.Second
	if v := os.Getenv("SOAK_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SOAK_SECONDS=%q", v)
		}
		d = time.Duration(n) * time.Second
	}
	gwBin, refundBin := buildBinaries(t)
	dir := t.TempDir()
	refundPort := loopbackPort(t)
	down := "http://127.0.0.1:" + refundPort
	refundLogs := startBinary(t, refundBin, "-http", "127.0.0.1:"+refundPort, "-audit", filepath.Join(dir, "refund.jsonl"))
	awaitHealthy(t, down+"/healthz", refundLogs)
	policyFile := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policyFile, []byte(pt27Policy), 0o600); err != nil {
		t.Fatal(err)
	}
	p, base := r25bStart(t, gwBin, pt27Tokens, "--upstream", down+"/mcp", "--timeout", "2",
		"--policy", policyFile, "--filter-tools-list", "--audit", filepath.Join(dir, "gw.jsonl"), "--rate", "1000/1s")
	pid := p.cmd.Process.Pid
	host := strings.TrimPrefix(base, "http://")

	load := func(ctx context.Context) []net.Conn {
		tr := &http.Transport{MaxIdleConnsPerHost: 4}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}
		var (
			mu   sync.Mutex
			slow []net.Conn
			wg   sync.WaitGroup
		)
		do := func(ctx context.Context, method, tok, body string) {
			req, err := http.NewRequestWithContext(ctx, method, base+"/mcp", strings.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			if resp, err := hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					switch (i + w) % 9 {
					case 0:
						do(ctx, "POST", "support-token", pt27Call("1", `"tools/call"`, `{"name":"trigger_refund","arguments":`+pt27RefundArgs("10")+`}`))
					case 1: // over the argument limit
						do(ctx, "POST", "support-token", pt27Call("2", `"tools/call"`, `{"name":"trigger_refund","arguments":`+pt27RefundArgs("1000")+`}`))
					case 2: // refused by the role rules
						do(ctx, "POST", "viewer-token", pt27Call("3", `"tools/call"`, `{"name":"admin_reset_key","arguments":{}}`))
					case 3:
						do(ctx, "POST", "", pt27Call("4", `"tools/list"`, `{}`))
					case 4:
						do(ctx, "POST", fmt.Sprintf("made-up-%d-%d", w, i), pt27Call("5", `"tools/list"`, `{}`))
					case 5:
						do(ctx, "POST", "viewer-token", pt27Call("6", `"tools/list"`, `{}`))
					case 6: // cancelled under way
						cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
						do(cctx, "POST", "viewer-token", pt27Call("7", `"tools/call"`, `{"name":"get_customer_record","arguments":{"customer_id":"C-1"}}`))
						cancel()
					case 7: // a GET stream opened and cut
						cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
						do(cctx, "GET", "viewer-token", "")
						cancel()
					case 8: // a slow client, now and then
						if i%20 != w {
							continue
						}
						c, err := net.Dial("tcp", host)
						if err != nil {
							continue
						}
						if i%40 == w {
							fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer viewer-token\r\nContent-Length: 100\r\n\r\n{", host)
						} else {
							fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", host)
						}
						mu.Lock()
						slow = append(slow, c)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		return slow
	}
	warm, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	for _, c := range load(warm) {
		c.Close()
	}
	cancel()
	time.Sleep(300 * time.Millisecond)
	before := r28Fds(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	slow := load(ctx)
	during := r28Fds(t, pid)
	for _, c := range slow {
		c.Close()
	}
	after := during
	// The gateway keeps an idle downstream connection for each request the
	// load had under way at once (its pool, for 90 s by design): up to two
	// per worker. A leak grows with the requests, not with the workers.
	const slack = 2 + 2*4
	for deadline := time.Now().Add(3 * time.Second); after > before+slack && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		after = r28Fds(t, pid)
	}
	t.Logf("gateway descriptors: baseline %d, at the end of the load %d (%d slow clients), after %d", before, during, len(slow), after)
	if after > before+slack {
		t.Errorf("gateway descriptors %d after the load, baseline %d", after, before)
	}
}

//go:build unix

package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// r59iCutProxy relays TCP connections to target; while cut is set, the
// first answer bytes the target sends on a connection are not relayed:
// both connections are closed instead (the network, or a load balancer,
// drops the connection after the downstream ran the call), and cut is
// cleared.
type r59iCutProxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	wg     sync.WaitGroup
}

func r59iNewCutProxy(t *testing.T, target string) *r59iCutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &r59iCutProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *r59iCutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer c.Close()
			d, err := net.Dial("tcp", p.target)
			if err != nil {
				return
			}
			defer d.Close()
			go func() { io.Copy(d, c); d.(*net.TCPConn).CloseWrite() }()
			buf := make([]byte, 32<<10)
			for {
				n, err := d.Read(buf)
				if n > 0 {
					if p.cut.CompareAndSwap(true, false) {
						return // the answer is lost: both connections close
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// r59iPost POSTs body to the gateway at base with bearer tok and the extra
// header pairs, and returns the status and body (err set when the
// connection broke).
func r59iPost(base, tok, body string, hdr ...string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+tok)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestReview59iStdTransportReplaysRefund: the gateway binary with
// --std-transport in front of the refund server, a client whose refund
// request carries an Idempotency-Key (as HTTP clients of payment APIs
// set), and a connection between gateway and downstream dropped after the
// downstream ran the refund and before its answer got through. net/http's
// Transport takes the request for replayable (an Idempotency-Key makes a
// POST so to it) and sends it again on a new connection: the refund
// server, which does not deduplicate on that header (its README: a retried
// refund is a second refund), refunds twice for one client call, while
// the gateway's trail shows one call and the client one answer. The
// gateway's own client never sends a written POST again (gateway.Options.
// Transport: "a tools/call is never sent twice"); --std-transport is the
// same gateway with another client, and its README says only that it is
// slower and ignores Keep-Alive timeouts.
func TestReview59iStdTransportReplaysRefund(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	gwBin, refundBin := buildBinaries(t)
	dir := t.TempDir()
	refundPort, gwPort := loopbackPort(t), loopbackPort(t)
	down := "http://127.0.0.1:" + refundPort
	raudit, gaudit := filepath.Join(dir, "refund.jsonl"), filepath.Join(dir, "gw.jsonl")
	rcmd, rlogs := r59iStart(t, refundBin, "-http", "127.0.0.1:"+refundPort, "-audit", raudit)
	awaitHealthy(t, down+"/healthz", rlogs)
	proxy := r59iNewCutProxy(t, "127.0.0.1:"+refundPort)
	gcmd, glogs := r59iStart(t, gwBin, "--host", "127.0.0.1", "--port", gwPort,
		"--upstream", "http://"+proxy.ln.Addr().String()+"/mcp", "--timeout", "5", "--std-transport",
		"--policy", writePolicy(t, refundPolicy), "--audit", gaudit)
	gw := "http://127.0.0.1:" + gwPort
	awaitHealthy(t, gw+"/healthz", glogs)

	// A read first, so that the gateway's Transport keeps a connection.
	if st, body, err := r59iPost(gw, "viewer-token", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`); err != nil || st != http.StatusOK {
		t.Fatalf("warm-up: %d %s %v", st, body, err)
	}
	proxy.cut.Store(true)
	st, body, err := r59iPost(gw, "viewer-token", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":10,"reason":"damaged on arrival"}}}`,
		"Idempotency-Key", "order-4711-refund")
	t.Logf("client told: %d %s %v", st, body, err)
	resp, err := http.Get(down + "/_received")
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(rb), `"tool":"trigger_refund"`); n != 1 {
		t.Errorf("one client call of trigger_refund reached the refund server %d times, want at most 1: %s", n, rb)
	}
	r59iStop(t, gcmd)
	r59iStop(t, rcmd)
	made := 0
	for _, r := range r59iRecords(t, raudit) {
		if r["tool"] == "trigger_refund" && r["phase"] == "outcome" && r["allowed"] == true {
			made++
		}
	}
	if made > 1 {
		t.Errorf("the refund server made %d refunds for one client call (its trail: %q); the gateway's trail: %q",
			made, r59iSummary(r59iRecords(t, raudit), "trigger_refund"), r59iSummary(r59iRecords(t, gaudit), "trigger_refund"))
	}
}

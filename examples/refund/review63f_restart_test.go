package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/token"
)

// r63fStart runs the binary in HTTP mode on addr with the signing key and
// returns a function that stops it (and waits for it).
func r63fStart(t *testing.T, addr, key string) func() {
	t.Helper()
	cmd := exec.Command(bin, "-http", addr, "-user-cap", "1000", "-session-cap", "10000")
	cmd.Env = append(os.Environ(), gatewaySignKeyEnv+"="+key)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	logs := &syncBuffer{}
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if strings.Contains(sc.Text(), "url=http://") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the HTTP server did not start; stderr:\n%s", logs)
	}
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestReview63fReplayAfterRestart: the refund server with
// REFUND_GATEWAY_SIGN_KEY takes each signed request "once and within 60 s"
// (README). A trigger_refund the gateway signed, seen on a proxy between
// the two, is refused when sent again to the same server; but once that
// server has restarted (a deploy, a crash) the same bytes, still within the
// 60 s, run the refund a second time: the replay memory lives in the
// process and a new one accepts every recent signature it has not seen.
func TestReview63fReplayAfterRestart(t *testing.T) {
	key := bytes.Repeat([]byte{0x3f}, 32)
	hexKey := hex.EncodeToString(key)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := r63fStart(t, addr, hexKey)

	// A proxy that records what it relays: what a shared proxy or an
	// access log shows.
	type seen struct {
		uri    string
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var log []seen
	target, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		log = append(log, seen{r.RequestURI, r.Header.Clone(), b})
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	signer, err := token.NewGatewaySigner(key)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := gateway.ParseTokens([]byte(`{"tok-alice":{"sub":"alice@example.com","role":"support"}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(proxy.URL+"/mcp", tokens, &gateway.Options{Signer: signer, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()

	const refund = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger_refund",` +
		`"arguments":{"customer_id":"CUST-00001","amount":1.5,"reason":"duplicate charge on the invoice"}}}`
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(refund))
	req.Header.Set("Authorization", "Bearer tok-alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `processed`) {
		t.Fatalf("the refund through the gateway: %d %s", res.StatusCode, b)
	}
	mu.Lock()
	if len(log) != 1 {
		t.Fatalf("the proxy saw %d requests, want 1", len(log))
	}
	rec := log[0]
	mu.Unlock()

	replay := func() (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+rec.uri, bytes.NewReader(rec.body))
		for k, vs := range rec.header {
			switch k {
			case "Content-Length", "Connection", "X-Forwarded-For":
				continue
			}
			req.Header[k] = vs
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(b)
	}
	if code, body := replay(); code != http.StatusUnauthorized {
		t.Fatalf("replay to the same server: %d %s, want 401", code, body)
	}
	stop()
	// Restarted in a later second than the signature's (whole seconds):
	// one timed in the second the server started is not told from a new
	// one (token.GatewaySigner.Verify's doc).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	r63fStart(t, addr, hexKey) // the same server, restarted, on its address
	if code, body := replay(); code != http.StatusUnauthorized {
		t.Errorf("replay of the signed refund after the server restarted: %d %s; "+
			"want 401 (the gateway authorized one refund, and signed it once)", code, body)
	}
}

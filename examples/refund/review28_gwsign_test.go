package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/token"
)

// startSignedHTTP runs the binary in HTTP mode with REFUND_GATEWAY_SIGN_KEY
// set to key and returns its base URL and its stderr so far.
func startSignedHTTP(t *testing.T, key string) (string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, "-http", "127.0.0.1:0", "-user-cap", "1000", "-session-cap", "10000")
	cmd.Env = append(os.Environ(), gatewaySignKeyEnv+"="+key)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	urlc := make(chan string, 1)
	logs := &syncBuffer{}
	go func() {
		re := regexp.MustCompile(`url=(http://\S+)/mcp`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
	}()
	select {
	case u := <-urlc:
		return u, logs
	case <-time.After(20 * time.Second):
		t.Fatalf("the HTTP server did not report its address; stderr:\n%s", logs)
	}
	return "", nil
}

func TestReview28GatewaySignKeyRefused(t *testing.T) {
	// Set but empty too: a key lost on the way must not leave the server
	// trusting whoever reaches it (it served unchecked, until killed).
	for _, v := range []string{"zz", hex.EncodeToString(make([]byte, 31)), "", "  "} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-http", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), gatewaySignKeyEnv+"="+v)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), gatewaySignKeyEnv) {
			t.Errorf("%s=%q: err %v, output %s; want a failure naming the variable", gatewaySignKeyEnv, v, err, out)
		}
	}
}

// TestReview28SignedGateway puts the real gateway, signing, in front of the
// refund server verifying: every kind of request the gateway sends is
// accepted, and the same requests sent directly are refused.
func TestReview28SignedGateway(t *testing.T) {
	key := bytes.Repeat([]byte{0x5a}, 32)
	base, logs := startSignedHTTP(t, hex.EncodeToString(key))
	signer, err := token.NewGatewaySigner(key)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := gateway.ParseTokens([]byte(`{"tok-alice":{"sub":"alice@example.com","role":"support"}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(base+"/mcp", tokens, &gateway.Options{Signer: signer, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()

	send := func(url, method, body, version string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok-alice")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	const lookup = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`
	call := func(id string) string { return strings.Replace(lookup, "%d", id, 1) }
	tests := []struct {
		name, method, body, version string
	}{
		{"single", http.MethodPost, call("1"), ""},
		{"single_again", http.MethodPost, call("1"), ""},
		{"batch", http.MethodPost, "[" + call("2") + "," + call("3") + "," + call("3") + "]", "2025-03-26"},
		{"get", http.MethodGet, "", ""},
		{"delete", http.MethodDelete, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := strings.Count(logs.String(), "gateway signature refused")
			status, body := send(gw.URL+"/mcp", tt.method, tt.body, tt.version)
			if tt.method == http.MethodPost && (status != 200 || !strings.Contains(body, "CUST-00001") || strings.Contains(body, `"error"`)) {
				t.Errorf("through the gateway: %d %s", status, body)
			}
			if status == http.StatusUnauthorized || strings.Contains(body, "gateway signature") {
				t.Errorf("through the gateway: %d %s", status, body)
			}
			time.Sleep(50 * time.Millisecond) // the server's log line, if any
			if after := strings.Count(logs.String(), "gateway signature refused"); after != before {
				t.Errorf("the downstream refused a signature of the gateway:\n%s", logs)
			}
			req, _ := http.NewRequest(tt.method, base+"/mcp", strings.NewReader(tt.body))
			req.Header.Set(token.HeaderSubject, "alice@example.com")
			req.Header.Set(token.HeaderRole, "admin")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"code":-32000`) {
				t.Errorf("sent directly: %d %s, want 401 and -32000", res.StatusCode, b)
			}
			for deadline := time.Now().Add(5 * time.Second); strings.Count(logs.String(), "gateway signature refused") == before && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond) // the refusal's log line
			}
			t.Logf("through the gateway: %d", status)
		})
	}
}

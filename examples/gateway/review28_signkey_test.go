package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startBinaryEnv starts bin with args and env added to the test's
// environment (without MCP_GATEWAY_TOKENS or a sign key of its own), and
// ends it when the test ends.
func startBinaryEnv(t *testing.T, bin string, env []string, args ...string) *lockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_GATEWAY_") && !strings.HasPrefix(kv, "REFUND_GATEWAY_SIGN_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	return stderr
}

// TestReview28SignKeyEnv checks MCP_GATEWAY_SIGN_KEY end to end: the refund
// server with the same key in REFUND_GATEWAY_SIGN_KEY answers the calls the
// gateway signs and refuses a request sent to it directly with forged
// identity headers; a gateway with another key gets nothing through; a
// value that is empty, not hex or too short stops the start with exit
// status 2 and a message naming the variable, never quoting the value.
func TestReview28SignKeyEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	gwBin, refundBin := buildBinaries(t)
	key := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)

	for _, bad := range []string{"", "  ", "not-hex-at-all", "abcdef0123", strings.Repeat("ab", 31)} {
		// A gateway that took the value would serve until killed.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, gwBin, "--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MCP_GATEWAY_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "MCP_GATEWAY_SIGN_KEY="+bad)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("MCP_GATEWAY_SIGN_KEY=%q: %v, want exit status 2\n%s", bad, err, out)
			continue
		}
		if !strings.Contains(string(out), "MCP_GATEWAY_SIGN_KEY") {
			t.Errorf("MCP_GATEWAY_SIGN_KEY=%q: the message does not name the variable:\n%s", bad, out)
		}
		if strings.TrimSpace(bad) != "" && strings.Contains(string(out), bad) {
			t.Errorf("MCP_GATEWAY_SIGN_KEY=%q: the message quotes the value:\n%s", bad, out)
		}
	}

	dir := t.TempDir()
	refundPort := loopbackPort(t)
	down := "http://127.0.0.1:" + refundPort
	refundLogs := startBinaryEnv(t, refundBin, []string{"REFUND_GATEWAY_SIGN_KEY=" + key},
		"-http", "127.0.0.1:"+refundPort, "-audit", filepath.Join(dir, "audit.jsonl"))
	awaitHealthy(t, down+"/healthz", refundLogs)

	start := func(k string) string {
		port := loopbackPort(t)
		logs := startBinaryEnv(t, gwBin, []string{"MCP_GATEWAY_SIGN_KEY=" + k},
			"--host", "127.0.0.1", "--port", port, "--upstream", down+"/mcp", "--timeout", "5")
		gw := "http://127.0.0.1:" + port
		awaitHealthy(t, gw+"/healthz", logs)
		return gw
	}
	signed, wrong := start(key), start(other)

	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`
	post := func(url string, h map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(signed+"/mcp", map[string]string{"Authorization": "Bearer viewer-token"}); code != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("through the gateway with the key: %d %s, want 200 with a result", code, body)
	}
	if code, body := post(down+"/mcp", map[string]string{"X-Mcp-Gateway-Subject": "mallory", "X-Mcp-Gateway-Role": "admin"}); code != http.StatusUnauthorized || !strings.Contains(body, "-32000") {
		t.Errorf("directly with forged identity headers: %d %s, want 401 -32000", code, body)
	}
	if code, body := post(wrong+"/mcp", map[string]string{"Authorization": "Bearer viewer-token"}); code == http.StatusOK || strings.Contains(body, `"result"`) {
		t.Errorf("through a gateway with another key: %d %s, want a refusal", code, body)
	}
	// --print-pins lists the downstream's tools with the gateway's own
	// requests, which must be signed too (they were not: the listing was
	// refused, and a --pin-tools start check could list nothing).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pp := exec.CommandContext(ctx, gwBin, "--upstream", down+"/mcp", "--print-pins")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_GATEWAY_") {
			pp.Env = append(pp.Env, kv)
		}
	}
	pp.Env = append(pp.Env, "MCP_GATEWAY_SIGN_KEY="+key)
	var ppErr strings.Builder
	pp.Stderr = &ppErr
	out, err := pp.Output()
	if err != nil || !strings.Contains(string(out), `"trigger_refund"`) {
		t.Errorf("--print-pins with MCP_GATEWAY_SIGN_KEY: %v, stdout %s\nstderr:\n%s", err, out, ppErr.String())
	}
	// What reached the refund server's tools: only the signed call.
	resp, err := http.Get(down + "/_received")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(b), `"get_customer_record"`); n != 1 {
		t.Errorf("/_received lists %d calls, want only the signed one: %s", n, b)
	}
}

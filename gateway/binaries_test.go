package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildRefundAndGateway builds examples/refund and examples/gateway into
// a temporary directory, as "refund" and "gateway", and returns it.
func buildRefundAndGateway(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"refund", "gateway"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./examples/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./examples/%s: %v\n%s", name, err, out)
		}
	}
	return dir
}

// TestBinariesEndToEnd builds examples/refund and examples/gateway, starts
// the refund server in HTTP mode behind the gateway, and checks through the
// refund server's own /_received log that a denied call never reaches it.
func TestBinariesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	dir := buildRefundAndGateway(t)
	refundPort, gwPort := freePort(t), freePort(t)
	down := "http://127.0.0.1:" + refundPort
	start(t, filepath.Join(dir, "refund"), nil, "-http", "127.0.0.1:"+refundPort, "-audit", filepath.Join(dir, "audit.jsonl"))
	waitHealthy(t, down+"/healthz")
	var gwLog bytes.Buffer
	start(t, filepath.Join(dir, "gateway"), &gwLog, "--host", "127.0.0.1", "--port", gwPort,
		"--upstream", down+"/mcp", "--path", "/mcp", "--timeout", "5")
	gw := "http://127.0.0.1:" + gwPort
	waitHealthy(t, gw+"/healthz")
	rg := &rig{url: gw}

	got := rg.post(t, viewer, call(`1`, "admin_reset_key", `{"key_id":"KEY-PRIMARY"}`), "X-MCP-Gateway-Role", "admin")
	if _, code, _ := rpcErr(t, got.body); got.status != http.StatusForbidden || code != CodeForbidden {
		t.Fatalf("viewer admin_reset_key: %d %s", got.status, got.body)
	}
	got = rg.post(t, viewer, call(`2`, "get_customer_record", `{"customer_id":"CUST-00001"}`), "X-MCP-Gateway-Role", "admin")
	if got.status != http.StatusOK || strings.Contains(got.body, `"error"`) {
		t.Fatalf("viewer get_customer_record: %d %s", got.status, got.body)
	}
	got = rg.post(t, admin, call(`3`, "admin_reset_key", `{"key_id":"KEY-PRIMARY"}`))
	if got.status != http.StatusOK || !strings.Contains(got.body, "key_reset") {
		t.Fatalf("admin admin_reset_key: %d %s", got.status, got.body)
	}

	resp, err := http.Get(down + "/_received")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var recv []struct {
		Method, Tool, Subject, Role string
		ID                          json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&recv); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range recv {
		seen = append(seen, r.Method+" "+r.Tool+" "+string(r.ID)+" "+r.Subject+"/"+r.Role)
	}
	want := []string{"tools/call get_customer_record 2 viewer/viewer", "tools/call admin_reset_key 3 admin/admin"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("refund server received:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(freeAddr(t))
	return port
}

func start(t *testing.T, bin string, stderr *bytes.Buffer, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = withoutEnv(os.Environ(), TokensEnv)
	if stderr != nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

func waitHealthy(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not become healthy", url)
}

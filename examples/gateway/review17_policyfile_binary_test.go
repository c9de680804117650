package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a child's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// buildBinaries builds examples/gateway and examples/refund into a
// temporary directory and returns their paths.
func buildBinaries(t *testing.T) (gw, refund string) {
	t.Helper()
	dir := t.TempDir()
	gw, refund = filepath.Join(dir, "gateway"), filepath.Join(dir, "refund")
	for _, b := range []struct{ out, pkg string }{{gw, "."}, {refund, "../refund"}} {
		if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return gw, refund
}

// startBinary starts bin with args, without MCP_GATEWAY_TOKENS, and ends it
// when the test ends.
func startBinary(t *testing.T, bin string, args ...string) *lockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_GATEWAY_TOKENS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	return stderr
}

func loopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func awaitHealthy(t *testing.T, url string, logs *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s did not become healthy; logs:\n%s", url, logs)
}

const refundPolicy = `{
  "tools": [
    {"name": "get_customer_record", "class": "read"},
    {"name": "trigger_refund", "class": "write",
     "arg_limits": [{"field": "amount", "max": 100, "exempt_roles": ["admin"]}]},
    {"name": "admin_reset_key", "class": "write"}
  ],
  "role_rules": [{"pattern": "admin_*", "roles": ["admin"]}],
  "write_allowlist": ["trigger_refund"]
}`

// TestReview17PolicyFileBinary builds the gateway and the refund server,
// starts the refund server in HTTP mode behind the gateway with a
// --policy file holding an argument limit and a write allowlist, and
// checks through the refund server's own /_received log that the calls
// the file refuses never reach it: a refund above the limit for a
// viewer (also one that rounds to the limit as a float64), a write tool
// off the allowlist even for admin, a tool the file does not name. Then
// it checks that the binary refuses a bad file at start with exit status
// 2, and that -h lists --policy.
func TestReview17PolicyFileBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	gwBin, refundBin := buildBinaries(t)
	dir := t.TempDir()
	refundPort, gwPort := loopbackPort(t), loopbackPort(t)
	down := "http://127.0.0.1:" + refundPort
	refundLogs := startBinary(t, refundBin, "-http", "127.0.0.1:"+refundPort, "-audit", filepath.Join(dir, "audit.jsonl"))
	awaitHealthy(t, down+"/healthz", refundLogs)
	policyFile := writePolicy(t, refundPolicy)
	gwLogs := startBinary(t, gwBin, "--host", "127.0.0.1", "--port", gwPort, "--upstream", down+"/mcp", "--timeout", "5", "--policy", policyFile)
	gw := "http://127.0.0.1:" + gwPort
	awaitHealthy(t, gw+"/healthz", gwLogs)

	refund := func(id, amount string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":` + amount + `,"reason":"damaged on arrival"}}}`
	}
	call := func(id, tool, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	for _, c := range []struct {
		tok, body string
		want      int
	}{
		{"viewer-token", refund("1", "50"), http.StatusOK},
		{"viewer-token", refund("2", "500"), http.StatusForbidden},
		{"viewer-token", refund("3", "100.000000000000001"), http.StatusForbidden},
		{"admin-token", refund("4", "500"), http.StatusOK}, // exempt
		{"admin-token", call("5", "admin_reset_key", `{"key_id":"KEY-PRIMARY"}`), http.StatusForbidden},
		{"admin-token", call("6", "admin_list_audit_log", `{}`), http.StatusNotFound}, // no rule, no default
		{"viewer-token", call("7", "get_customer_record", `{"customer_id":"CUST-00001"}`), http.StatusOK},
	} {
		if status, body := rpcPost(t, gw, c.tok, c.body); status != c.want {
			t.Errorf("%s %s: %d %s; want %d", c.tok, c.body, status, body, c.want)
		}
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
		seen = append(seen, r.Method+" "+r.Tool+" "+string(r.ID)+" "+r.Subject)
	}
	want := []string{"tools/call trigger_refund 1 viewer", "tools/call trigger_refund 4 admin", "tools/call get_customer_record 7 viewer"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("refund server received:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}

	for _, bad := range []struct{ name, doc, want string }{
		{"unknown_member", `{"tools":[{"name":"trigger_refund","class":"write","ArgLimits":[]}]}`, "tools[0].ArgLimits: unknown member"},
		{"new_refuses", `{"role_rules":[{"pattern":"admin_*","roles":[]}]}`, "lists no roles"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			file := writePolicy(t, bad.doc)
			cmd := exec.Command(gwBin, "--host", "127.0.0.1", "--port", "0", "--upstream", down+"/mcp", "--policy", file)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("gateway --policy %s: %v; want exit status 2; stderr:\n%s", file, err, &stderr)
			}
			if !strings.Contains(stderr.String(), bad.want) || !strings.Contains(stderr.String(), "--policy") {
				t.Errorf("stderr does not name --policy and %q:\n%s", bad.want, &stderr)
			}
		})
	}

	out, _ := exec.Command(gwBin, "-h").CombinedOutput()
	if !strings.Contains(string(out), "-policy") {
		t.Errorf("gateway -h does not list --policy:\n%s", out)
	}
}

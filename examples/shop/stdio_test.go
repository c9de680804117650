package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startGateway serves a synthetic gateway on 127.0.0.1 until the test ends.
func startGateway(t *testing.T) (*fakeGateway, string) {
	t.Helper()
	gw := newFakeGateway()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = serveHTTP(ctx, ln, gw); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return gw, "http://" + ln.Addr().String()
}

// syncBuffer collects a child's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// connectStdio starts the shop binary over stdio with env and connects a
// go-sdk client to it on protocol version (the client's default if "").
func connectStdio(t *testing.T, gwURL, version string, opts *mcp.ClientOptions, env ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, "--gateway", gwURL)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHOP_") && !strings.HasPrefix(kv, "MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "shop-stdio-test", Version: "v1"}, opts).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v; stderr:\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// TestStdio runs the built binary over stdio with the go-sdk client on both
// protocol versions: the launching session is checked on every call, the
// customer sees eight tools, and an admin write is confirmed through the
// client (multi round-trip on 2026-07-28, elicitation on 2025-11-25).
func TestStdio(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		name := "default_protocol"
		if version != "" {
			name = "protocol_" + strings.ReplaceAll(version, "-", "_")
		}
		t.Run(name, func(t *testing.T) {
			gw, url := startGateway(t)
			cs, stderr := connectStdio(t, url, version, nil, sessionEnv+"="+sessionCustomer2)
			if got := toolNames(t, cs); len(got) != 8 {
				t.Errorf("customer over stdio sees %v, want 8 tools", got)
			}
			res := ok(t, cs, "search_products", map[string]any{"query": "lidar"})
			if res["strategy"] != "catalogue-keyword-ranking" || len(res["products"].([]any)) != 1 {
				t.Errorf("search over stdio: %v", res)
			}
			ok(t, cs, "update_cart", map[string]any{"sku": "RB-100", "quantity": 2})
			if q := gw.quantity("u-1002", "RB-100"); q != 2 {
				t.Errorf("cart over stdio: quantity %d", q)
			}
			gw.revoke(sessionCustomer2)
			if e := toolErr(t, cs, "get_cart", map[string]any{}); e["code"] != "UNAUTHENTICATED" {
				t.Errorf("revoked launching session: %v", e)
			}
			if strings.Contains(stderr.String(), "lidar") {
				t.Errorf("an argument reached the log:\n%s", stderr)
			}

			var asked []string
			var mu sync.Mutex
			admin, _ := connectStdio(t, url, version, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, r.Params.Message)
				return &mcp.ElicitResult{Action: "accept"}, nil
			}}, sessionEnv+"="+sessionAdmin, adminWritesEnv+"=true")
			got := ok(t, admin, "admin_set_stock", map[string]any{"sku": "RB-300", "stock": 40})
			if got["inStock"] != float64(40) {
				t.Errorf("admin_set_stock: %v", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || !strings.Contains(asked[0], "set the stock of RB-300 to 40 units") {
				t.Errorf("the user was asked %q, want one confirmation naming the change", asked)
			}
		})
	}
}

// TestStdioWithoutSession: no launching session, no calls.
func TestStdioWithoutSession(t *testing.T) {
	gw, url := startGateway(t)
	cs, _ := connectStdio(t, url, "", nil)
	if e := toolErr(t, cs, "list_categories", map[string]any{}); e["code"] != "UNAUTHENTICATED" {
		t.Errorf("no session: %v", e)
	}
	if n := len(gw.recorded()); n != 0 {
		t.Errorf("%d gateway requests without a session", n)
	}
}

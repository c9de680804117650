package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The twenty-third review: the seed's behaviours (roboshop-mcp-server.txt)
// that no earlier test showed, or showed only in part.

// outcome is what a client learns from one call of tool, with the tool's
// name and the correlation id taken out: a protocol error's message and
// data, or an error result's code, message and retry hint.
func outcome(t *testing.T, cs *mcp.ClientSession, tool, args string, meta mcp.Meta) string {
	t.Helper()
	res, we := callRaw(t, cs, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args), Meta: meta})
	if we != nil {
		return "rpc " + strings.ReplaceAll(we.Error(), tool, "TOOL") + " " + string(we.Data)
	}
	e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any)
	delete(e, "correlation_id")
	return "result " + strings.ReplaceAll(mustJSON(t, e), tool, "TOOL")
}

// TestReview23HiddenToolNeverConfirmed: "Calling a hidden tool returns
// Unknown tool, so its existence is not confirmed": not with the arguments
// of the hidden tool's own schema nor ones it would refuse, not with a
// dry run (its preview would describe the hidden write), and not for a
// user past the per-user rate. Each answer equals, byte for byte, the one
// for a tool that does not exist, and the gateway sees only session
// checks. (TestHiddenToolIsUnknown calls with empty arguments only.)
func TestReview23HiddenToolNeverConfirmed(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := newStack(t, func(c *config) { c.adminWrites, c.rate, c.now = true, 4, func() time.Time { return now } }, nil)
	dry := mcp.Meta{"io.mcpguard/dryRun": true}
	for _, tc := range []struct {
		name, session, tool, args string
		meta                      mcp.Meta
	}{
		{"valid_arguments", sessionCustomer, "admin_get_user", `{"userId":"u-1002"}`, nil},
		{"wrong_type", sessionCustomer, "admin_get_user", `{"userId":5}`, nil},
		{"unknown_field", sessionCustomer, "admin_list_users", `{"zzz":1}`, nil},
		{"not_an_object", sessionCustomer2, "admin_inventory_report", `[1]`, nil},
		{"dry_run_write", sessionCustomer2, "admin_set_price", `{"sku":"RB-100","price":1}`, dry},
		{"dry_run_bad_write", sessionCustomer2, "admin_disable_user", `{"userId":"u-1002"}`, dry},
		{"admin_and_super_tool", sessionAdmin, "admin_list_users", `{}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, st, tc.session, nil)
			before := len(st.gw.recorded())
			hidden := outcome(t, cs, tc.tool, tc.args, tc.meta)
			unknown := outcome(t, cs, "zz_"+tc.tool, tc.args, tc.meta)
			if hidden != unknown || !strings.Contains(hidden, `unknown tool "TOOL"`) {
				t.Errorf("hidden %s: %s\nunknown tool: %s\nwant the same unknown-tool answer", tc.tool, hidden, unknown)
			}
			for _, r := range st.gw.recorded()[before:] {
				if r.Path != "/api/auth/me" {
					t.Errorf("a hidden tool's call reached the gateway: %s %s", r.Method, r.Path)
				}
			}
		})
	}
	// Past the per-user rate (4 calls), on a session of its own (whose cap
	// is 8 requests).
	st.gw.mu.Lock()
	st.gw.sessions["sess-admin-grace-23"] = "u-2001"
	st.gw.mu.Unlock()
	bo := connect(t, st, "sess-admin-grace-23", nil)
	for range 4 {
		ok(t, bo, "get_cart", map[string]any{})
	}
	if e := toolErr(t, bo, "get_cart", map[string]any{}); e["code"] != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("fifth call: %v, want RATE_LIMIT_EXCEEDED", e)
	}
	hidden := outcome(t, bo, "admin_list_users", `{}`, nil)
	if unknown := outcome(t, bo, "zz_admin_list_users", `{}`, nil); hidden != unknown {
		t.Errorf("past the rate, hidden: %s\nunknown tool: %s", hidden, unknown)
	}
}

// redirectingGateway serves the synthetic gateway, except that GET
// /api/cart answers with a redirect to elsewhere and every answer sets an
// rs_auth cookie of another user's.
type redirectingGateway struct {
	*fakeGateway
	elsewhere string
}

func (g redirectingGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: "rs_auth", Value: sessionSuper, Path: "/"})
	if r.Method == "GET" && r.URL.Path == "/api/cart" {
		http.Redirect(w, r, g.elsewhere+"/collect", http.StatusFound)
		return
	}
	g.fakeGateway.ServeHTTP(w, r)
}

// serveOn serves h on a loopback port until the test ends and returns its
// base URL.
func serveOn(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = serveHTTP(ctx, ln, h); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

// TestReview23SessionGoesToTheGatewayOnly: "It forwards each caller's
// session to the same gateway a browser uses" and only there: a gateway
// answer that redirects is not followed (the session would travel with
// it), and a cookie the gateway sets is not kept for the next request,
// where it would ride along with, or in place of, the caller's own session
// (README: no redirects followed, no cookie jar).
func TestReview23SessionGoesToTheGatewayOnly(t *testing.T) {
	var stolen atomic.Int32
	elsewhere := serveOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		_, _ = io.WriteString(w, `{"items":[],"total":0,"paymentPending":false}`)
	}))
	fg := newFakeGateway()
	cfg := defaultConfig()
	cfg.gateway = serveOn(t, redirectingGateway{fg, elsewhere})
	cfg.stdio, cfg.launch = true, sessionCustomer
	s, err := newShop(cfg, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ada := connectInMemory(t, s, nil)

	e := toolErr(t, ada, "get_cart", map[string]any{})
	if e["code"] != "upstream_error" || e["retryable"] != false {
		t.Errorf("get_cart answered with a redirect: %v, want upstream_error", e)
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the redirect was followed: %d requests elsewhere", n)
	}
	ok(t, ada, "get_product", map[string]any{"sku": "RB-100"})
	for _, r := range fg.recorded() {
		if got := r.Header.Values("Cookie"); len(got) != 1 || got[0] != "rs_auth="+sessionCustomer {
			t.Errorf("%s %s: cookies %q, want only the caller's own session", r.Method, r.Path, got)
		}
	}
}

// TestReview23LocalClientHosts: "Locally, yes, ... through a port-forward
// to http://localhost:4107/mcp": the Host values a local client sends
// (localhost, 127.0.0.1 and [::1], with a port) are accepted by default;
// other names are refused.
func TestReview23LocalClientHosts(t *testing.T) {
	st := newStack(t, nil, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for _, tc := range []struct {
		host string
		want int
	}{
		{"localhost:4107", http.StatusOK},
		{"127.0.0.1:4107", http.StatusOK},
		{"[::1]:4107", http.StatusOK},
		{"localhost.evil.example:4107", http.StatusForbidden},
		{"localhost:4107.evil.example", http.StatusForbidden},
	} {
		req, err := http.NewRequest("POST", st.mcpURL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+sessionCustomer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %q: status %d, want %d: %s", tc.host, resp.StatusCode, tc.want, b)
		}
	}
}

// TestReview23DefaultOriginIsTheGatewaysOwn: the Origin sent with state
// changes is by default "the gateway's own" (README), which is how a
// browser on the gateway's pages sends it and a CSRF check compares it:
// scheme and host in lower case, without the scheme's default port.
// --gateway https://Shop.Example:443 sent "https://Shop.Example:443",
// which such a check refuses, so every write failed with forbidden.
func TestReview23DefaultOriginIsTheGatewaysOwn(t *testing.T) {
	for _, tc := range []struct{ gateway, want string }{
		{"https://shop.example", "https://shop.example"},
		{"https://Shop.Example:443/gw", "https://shop.example"},
		{"HTTP://shop.example:80", "http://shop.example"},
		{"http://shop.example:8080", "http://shop.example:8080"},
		{"https://shop.example:80", "https://shop.example:80"},
		{"http://[::1]:80", "http://[::1]"},
		{"http://shop.example:", "http://shop.example"},
		{"http://127.0.0.1:4110", "http://127.0.0.1:4110"},
	} {
		c, err := newGatewayClient(tc.gateway, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.gateway, err)
		}
		if c.origin != tc.want {
			t.Errorf("--gateway %s: origin %q, want %q", tc.gateway, c.origin, tc.want)
		}
	}
}

// TestReview23ConfirmKeyAtLeast32Bytes: SHOP_MCP_CONFIRM_KEY is "hex or
// base64, at least 32 bytes". A key of hex digits is hex: 48 of them are
// 24 bytes, too short, and refused; they were read as base64 (36 bytes)
// and accepted. Keys that are long enough, in either spelling, pass.
func TestReview23ConfirmKeyAtLeast32Bytes(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		bytes     int // 0: refused
	}{
		{"hex_32_bytes", strings.Repeat("a1", 32), 32},
		{"hex_24_bytes", strings.Repeat("a1", 24), 0},
		{"hex_16_bytes", strings.Repeat("a1", 16), 0},
		{"hex_24_bytes_upper", strings.Repeat("A1", 24), 0},
		{"base64_32_bytes", "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=", 32},
		{"base64url_raw_32_bytes", "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA", 32},
		{"base64_24_bytes", "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcY", 0},
	} {
		k, err := parseKey(tc.key)
		switch {
		case tc.bytes == 0 && err == nil:
			t.Errorf("%s: a key of %d bytes was accepted, want it refused", tc.name, len(k))
		case tc.bytes != 0 && (err != nil || len(k) != tc.bytes):
			t.Errorf("%s: %d bytes, %v; want %d bytes", tc.name, len(k), err, tc.bytes)
		}
	}
	// From the binary: a usage error, exit 2, that says what is wrong.
	cmd := exec.Command(bin, "--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "127.0.0.1:0", "--redis", "127.0.0.1:1")
	cmd.Env = append(os.Environ(), confirmKeyEnv+"="+strings.Repeat("a1", 24))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	out := stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "at least 32 bytes") {
		t.Errorf("a 24-byte hex key: %v\n%s\nwant exit 2 saying at least 32 bytes", err, out)
	}
}

// TestReview23SeedDefaults: the seed's numbers are the defaults: 10 s per
// call (retries included), 60 calls a minute per user, 32 in flight, 3 s
// per session check, details of at most 300 characters, descriptions of
// at most 1,000. The behaviours are tested at shortened values
// (TestReview11CallDeadline, TestPerUserRate, ...); this pins the values.
func TestReview23SeedDefaults(t *testing.T) {
	c := defaultConfig()
	if c.timeout != 10*time.Second || c.rate != 60 || c.inFlight != 32 {
		t.Errorf("defaults: timeout %v, rate %d, in flight %d; want 10s, 60, 32", c.timeout, c.rate, c.inFlight)
	}
	if authDeadline != 3*time.Second || maxDetail != 300 || maxDescription != 1000 {
		t.Errorf("session check %v, detail %d, description %d; want 3s, 300, 1000", authDeadline, maxDetail, maxDescription)
	}
}

// TestReview23AuditReopenedOnSIGHUP: "Logs record tool name, outcome and
// duration", and the README's --audit FILE is "reopened on SIGHUP (for log
// rotation)": a file moved aside keeps the records before the signal, the
// file at the path gets those after it, and the server serves on. Without
// --audit the signal is logged and ignored: the server does not end.
func TestReview23AuditReopenedOnSIGHUP(t *testing.T) {
	_, gwURL := startGateway(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	for _, audit := range []bool{true, false} {
		args := []string{"--transport", "http", "--addr", "127.0.0.1:0", "--gateway", gwURL}
		if audit {
			args = append(args, "--audit", path)
		}
		cmd := exec.Command(bin, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "SHOP_") && !strings.HasPrefix(kv, "MCP_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wait := sync.OnceValue(cmd.Wait)
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = wait() })
		logged := func(re *regexp.Regexp, what string) []string {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if m := re.FindStringSubmatch(stderr.String()); m != nil {
					return m
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Fatalf("no %s in the log:\n%s", what, stderr)
			return nil
		}
		st := &stack{mcpURL: logged(regexp.MustCompile(`url=(http://\S+/mcp)`), "server URL")[1]}
		ada := connect(t, st, sessionCustomer, nil)
		ok(t, ada, "get_cart", map[string]any{})
		if audit {
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if audit {
			logged(regexp.MustCompile(`SIGHUP: audit file reopened`), "reopening")
		} else {
			logged(regexp.MustCompile(`SIGHUP: no audit file to reopen; ignored`), "ignored SIGHUP")
		}
		ok(t, ada, "get_order_history", map[string]any{})
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Errorf("audit %v: the server after SIGHUP and SIGINT: %v\n%s", audit, err, stderr)
		}
		if !audit {
			continue
		}
		for file, tool := range map[string]string{path + ".1": `"tool":"get_cart"`, path: `"tool":"get_order_history"`} {
			if got := readFile(t, file); strings.Count(got, "\n") != 1 || !strings.Contains(got, tool) {
				t.Errorf("%s: %q, want one record, of %s", filepath.Base(file), got, tool)
			}
		}
	}
}

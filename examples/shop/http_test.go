package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// startBinaryHTTP runs the built binary with --transport http on a free
// loopback port and returns the /mcp URL; the process is stopped with an
// interrupt when the test ends.
func startBinaryHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--transport", "http", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = os.Environ()
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`url=(http://\S+/mcp)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("shop exited: %v", err)
		}
		pw.Close()
	})
	return recv(t, urls, "the server's URL on stderr")
}

// TestHTTPBinary runs the binary over Streamable HTTP on 127.0.0.1 and
// talks to it with the go-sdk client as two users, then checks the Host
// and Origin protection with raw requests.
func TestHTTPBinary(t *testing.T) {
	gw, gwURL := startGateway(t)
	url := startBinaryHTTP(t, "--gateway", gwURL, "--allowed-origins", "https://console.example")
	st := &stack{mcpURL: url, gw: gw}

	ada := connect(t, st, sessionCustomer, nil)
	if got := toolNames(t, ada); len(got) != 8 {
		t.Errorf("customer over HTTP sees %v", got)
	}
	res := ok(t, ada, "compare_products", map[string]any{"skus": []string{"RB-100", "RB-500", "RB-777"}})
	if len(res["products"].([]any)) != 2 || len(res["missing"].([]any)) != 1 {
		t.Errorf("compare over HTTP: %v", res)
	}
	if got := toolNames(t, connect(t, st, sessionSuper, nil)); len(got) != 12 {
		t.Errorf("super admin over HTTP without admin writes sees %d tools, want 12", len(got))
	}

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"allowed", "", "", http.StatusOK},
		{"allowed_origin", "", "https://console.example", http.StatusOK},
		{"foreign_host", "evil.example", "", http.StatusForbidden},
		{"foreign_host_with_port", "evil.example:4107", "", http.StatusForbidden},
		{"foreign_origin", "", "https://evil.example", http.StatusForbidden},
		{"null_origin", "", "null", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			req.Header.Set("Authorization", "Bearer "+sessionCustomer)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if tc.want == http.StatusOK && !bytes.Contains(b, []byte(`"search_products"`)) {
				t.Errorf("an allowed request got no tools: %s", b)
			}
		})
	}
}

// TestRunFlags: bad command lines exit 2 before serving; a public address
// needs --allow-remote.
func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--gateway", "http://127.0.0.1:1", "--transport", "carrier-pigeon"},
		{"--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "0.0.0.0:0"},
		{"--gateway", "http://127.0.0.1:1", "--no-such-flag"},
		{"fake-gateway", "--port", "x"},
	} {
		var stderr bytes.Buffer
		if code := run(args, io.Discard, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2; stderr:\n%s", args, code, stderr.String())
		}
	}
	if _, err := listenAddr("0.0.0.0:4107", true); err != nil {
		t.Errorf("--allow-remote: %v", err)
	}
}

// TestDemo runs `shop demo` in-process.
func TestDemo(t *testing.T) {
	var out, stderr bytes.Buffer
	if code := run([]string{"demo"}, &out, &stderr); code != 0 {
		t.Fatalf("demo exited %d:\n%s\n%s", code, out.String(), stderr.String())
	}
	for _, want := range []string{
		"customer ada discovers 8 tools",
		`"strategy": "catalogue-keyword-ranking"`,
		`"missing": [`,
		`"code": "INVALID_ARGUMENTS"`,
		`"code": "not_found"`,
		`unknown tool "admin_list_users"`,
		"Confirm: set the price of RB-300 to 34.50 EUR\" -> decline",
		"Confirm: set the price of RB-300 to 34.50 EUR\" -> accept",
		"the gateway now lists RB-300 at 34.50 EUR",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

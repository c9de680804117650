package main

import (
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestReview55UpstreamIsTheGatewayItself: an --upstream naming the
// gateway's own listening address (an operator who swaps --port and the
// downstream's port, say "--port 8081" with the default upstream
// http://127.0.0.1:8081/mcp) used to be accepted. The gateway then
// forwarded every request to itself without the client's Authorization
// (which it never forwards), refused it there as unauthenticated, and
// relayed that refusal: every client, whatever its token, got 401
// "missing bearer token" with a WWW-Authenticate challenge, which sends a
// client with a perfectly good token to authorize again. Nothing at start
// said what was wrong. It must be refused at start as a usage error
// naming --upstream, before anything is listened on.
func TestReview55UpstreamIsTheGatewayItself(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, tc := range []struct {
		name, host, upHost string
	}{
		{"same_address", "127.0.0.1", "127.0.0.1"},
		{"localhost_upstream", "127.0.0.1", "localhost"},
		{"localhost_host", "localhost", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			p := strconv.Itoa(port)
			upstream := "http://" + net.JoinHostPort(tc.upHost, p) + "/mcp"
			url, err, stop, logs := startRun(t, "--host", tc.host, "--port", p, "--upstream", upstream)
			if url != "" {
				resp := callResponse(t, url, "get_customer_record", "admin-token")
				stop()
				t.Fatalf("--host %s --port %s --upstream %s: the gateway started on its own address; a call with the valid admin-token got %d %q (want a refusal at start, exit status 2); logs:\n%s",
					tc.host, p, upstream, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), logs)
			}
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--upstream") {
				t.Errorf("err %v (exit status %d), want a usage error (2) naming --upstream", err, exitCode(err))
			}
		})
	}
}

// TestReview55AnyOriginWithDemoTokens: the binary refuses the built-in
// demo tokens on an address others can reach, since they are public
// ("anyone would be admin"). --allowed-origins "*" did the same thing
// another way and was accepted: every web page the operator's browser
// opened could send "Authorization: Bearer admin-token" to the gateway on
// 127.0.0.1 (the preflight allows it, the Host is the gateway's own, so
// the DNS-rebinding check does not apply) and read the answer, and so
// call admin_* tools on the downstream. With the demo tokens, "*" must be
// refused at start (exit status 2); a listed origin stays allowed, and so
// does "*" with real tokens.
func TestReview55AnyOriginWithDemoTokens(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	down := newRecorder(t)
	for _, origins := range []string{"*", "https://app.example.com,*"} {
		t.Run(strconv.Quote(origins), func(t *testing.T) {
			url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--allowed-origins", origins)
			if url != "" {
				before := down.len()
				req, rerr := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`))
				if rerr != nil {
					t.Fatal(rerr)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer admin-token")
				req.Header.Set("Origin", "https://evil.example")
				resp, rerr := http.DefaultClient.Do(req)
				if rerr != nil {
					t.Fatal(rerr)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				stop()
				t.Fatalf("--allowed-origins %q with the demo tokens: the gateway started; a page of https://evil.example calling admin_reset_key with the public admin-token got %d, Access-Control-Allow-Origin %q, and %d request(s) reached the downstream (want a refusal at start); logs:\n%s",
					origins, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), down.len()-before, logs)
			}
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--allowed-origins") || !strings.Contains(err.Error(), "demo tokens") {
				t.Errorf("err %v (exit status %d), want a usage error (2) naming --allowed-origins and the demo tokens", err, exitCode(err))
			}
		})
	}

	// Real tokens: "*" is the operator's choice.
	t.Run("with_MCP_GATEWAY_TOKENS", func(t *testing.T) {
		url, err, _ := runWithTokens(t, `{"tok-review55":"viewer"}`, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--allowed-origins", "*")
		if url == "" {
			t.Errorf("--allowed-origins * with MCP_GATEWAY_TOKENS set: did not start: %v", err)
		}
	})
}

// runWithTokens is startRun with MCP_GATEWAY_TOKENS set to tokens (startRun
// unsets it): it returns the gateway's URL, stopping it, or run's error,
// and its logs.
//
//lint:ignore ST1008 run's error is one of the two outcomes of a start, not runWithTokens' own failure
func runWithTokens(t *testing.T, tokens string, args ...string) (string, error, *runLogs) {
	t.Helper()
	flag.CommandLine = flag.NewFlagSet("gateway", flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	os.Args = append([]string{"gateway"}, args...)
	t.Setenv("MCP_GATEWAY_TOKENS", tokens)
	logs := &runLogs{}
	done := make(chan error, 1)
	go func() { done <- run(slog.New(slog.NewTextHandler(logs, nil))) }()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-done:
			return "", err, logs
		case <-deadline:
			t.Fatalf("run neither listened nor returned; logs:\n%s", logs)
		case <-time.After(10 * time.Millisecond):
		}
		if m := runAddr.FindStringSubmatch(logs.String()); m != nil {
			signalSelf(syscall.SIGINT)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("run did not return after SIGINT")
			}
			return m[1], nil, logs
		}
	}
}

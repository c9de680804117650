package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview56HostZone: a --host of an IPv4 address with a zone
// ("127.0.0.1%eth0", which no address has: only IPv6 link-local ones
// do) or with an empty zone ("::1%", a template's unset variable after
// the %) passed checkHost, which tested only what comes before the %.
// With MCP_GATEWAY_TOKENS set, the gateway then opened the --audit file
// and failed at the listen with exit status 1 and a resolver's error
// ("listen tcp: lookup 127.0.0.1%eth0: no such host"), the failure
// checkHost exists to prevent; with the demo tokens it was refused as
// "not a loopback address", which 127.0.0.1 is. It is a mistake in the
// flags: exit status 2, saying what --host wants, before the --audit
// file is created. An IPv6 address with a zone still starts.
func TestReview56HostZone(t *testing.T) {
	tokens := map[string]*string{"MCP_GATEWAY_TOKENS": ptr(`{"tok-abcdefgh":"admin"}`)}
	for _, host := range []string{"127.0.0.1%eth0", "127.0.0.1%lo", "::1%", "127.0.0.1%"} {
		t.Run(host, func(t *testing.T) {
			for _, env := range []map[string]*string{nil, tokens} {
				auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
				logs, err := runAtStart(t, env, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--audit", auditFile, "--host", host)
				if err == nil || !strings.Contains(err.Error(), "--host") || !strings.Contains(err.Error(), "host name or IP address") {
					t.Errorf("--host %q (tokens set: %v): err %v, want one naming --host and saying it wants a host name or IP address; logs:\n%s", host, env != nil, err, logs)
				}
				if got := exitCode(err); got != 2 {
					t.Errorf("--host %q (tokens set: %v): %v: exit status %d, want 2", host, env != nil, err, got)
				}
				if _, serr := os.Stat(auditFile); serr == nil {
					t.Errorf("--host %q (tokens set: %v): the --audit file was created before the flag was refused", host, env != nil)
				}
			}
		})
	}
	// An IPv6 loopback address with a zone is an address: it starts.
	down := answeringDownstream(t)
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	t.Setenv("MCP_GATEWAY_TOKENS", "")
	os.Unsetenv("MCP_GATEWAY_TOKENS")
	flag.CommandLine = flag.NewFlagSet("gateway", flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	os.Args = []string{"gateway", "--host", "::1%lo", "--port", "0", "--upstream", down.URL + "/mcp"}
	logs := &runLogs{}
	done := make(chan error, 1)
	go func() { done <- run(slog.New(slog.NewTextHandler(logs, nil))) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			if err != nil && strings.Contains(err.Error(), "host name or IP address") {
				t.Errorf("--host ::1%%lo: refused: %v\n%s", err, logs)
			}
			return // no IPv6 loopback here: the listen's failure is not the flag's
		default:
		}
		if strings.Contains(logs.String(), "gateway listening") {
			signalSelf(syscall.SIGINT)
			<-done
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run neither listened nor returned; logs:\n%s", logs)
		}
	}
}

// TestReview56IntrospectAddressRefused: an --introspect endpoint whose port
// no server can listen on (0, beyond 65535) or that is empty after the
// colon (https://idp.example:/introspect, a template's unset port) was
// not checked with the other URL flags (--upstream, a --jwt-jwks URL, a
// discovery --jwt-issuer): the gateway asked the endpoint about its
// made-up token at start, dialling port 0, failing on "invalid port", or,
// for the empty port, sending the client's credentials to port 443, and
// stopped with exit status 1 and a dial error. It is a mistake in the
// flags: exit status 2, naming --introspect and the port, before the
// endpoint is asked or the --audit file opened.
func TestReview56IntrospectAddressRefused(t *testing.T) {
	creds := map[string]*string{introspectIDEnv: ptr("gw-client"), introspectSecretEnv: ptr("gw-client-secret")}
	for _, tc := range []struct{ name, endpoint, want string }{
		{"port_zero", "https://127.0.0.1:0/introspect", "port 0"},
		{"port_out_of_range", "https://127.0.0.1:99999/introspect", "port 99999"},
		{"port_empty", "https://127.0.0.1:/introspect", "empty port"},
		{"port_zero_http_loopback", "http://localhost:0/introspect", "port 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
			logs, err := runAtStart(t, creds, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--audit", auditFile,
				"--introspect", tc.endpoint, "--introspect-audience", "mcp-gateway")
			if err == nil || !strings.Contains(err.Error(), "--introspect") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--introspect %s: err %v, want one naming --introspect and %q; logs:\n%s", tc.endpoint, err, tc.want, logs)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("--introspect %s: %v: exit status %d, want 2", tc.endpoint, err, got)
			}
			if strings.Contains(fmt.Sprint(err)+logs, "made-up token") {
				t.Errorf("--introspect %s: the endpoint was asked at start: %v\n%s", tc.endpoint, err, logs)
			}
			if _, serr := os.Stat(auditFile); serr == nil {
				t.Errorf("--introspect %s: the --audit file was created before the flag was refused", tc.endpoint)
			}
		})
	}
}

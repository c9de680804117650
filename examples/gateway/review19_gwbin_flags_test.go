package main

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runAtStart runs the gateway's run with args and the environment env (a
// nil value unsets the variable), and returns its logs and error if it
// stops at start. A gateway that starts listening fails the test (and is
// stopped).
func runAtStart(t *testing.T, env map[string]*string, args ...string) (string, error) {
	t.Helper()
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, k := range []string{"MCP_GATEWAY_TOKENS", introspectIDEnv, introspectSecretEnv} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range env {
		if v != nil {
			t.Setenv(k, *v)
		}
	}
	flag.CommandLine = flag.NewFlagSet("gateway", flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	os.Args = append([]string{"gateway"}, args...)
	logs := &runLogs{}
	done := make(chan error, 1)
	go func() { done <- run(slog.New(slog.NewTextHandler(logs, nil))) }()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-done:
			return logs.String(), err
		case <-deadline:
			t.Fatalf("run neither listened nor returned; logs:\n%s", logs)
		case <-time.After(10 * time.Millisecond):
		}
		if runAddr.MatchString(logs.String()) {
			signalSelf(syscall.SIGINT)
			<-done
			t.Fatalf("gateway %q started; want a refusal at start; logs:\n%s", args, logs)
		}
	}
}

func ptr(s string) *string { return &s }

// TestReview19UsageErrorsExitTwo: every mistake in the flags or in
// MCP_GATEWAY_TOKENS stops the start with an error naming the flag (or
// variable) and exit status 2, as a flag the flag package refuses does,
// and before anything is opened: the --audit file is not created. Before,
// only --policy's mistakes had status 2; --rate, --upstream, --tool-pins
// and --allowed-origins were checked after the audit file was created
// (and after a JWK Set was fetched or the introspection endpoint asked);
// an empty --host, --introspect or --tool-pins switched listening on
// every interface, the demo tokens or pinning off without a word; a flag
// given twice kept its last value, and arguments after a non-flag (as in
// "--filter-tools-list false --policy strict.json") were ignored.
func TestReview19UsageErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	badPins := filepath.Join(dir, "pins.json")
	if err := os.WriteFile(badPins, []byte(`{"t":"zz"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]*string{"MCP_GATEWAY_TOKENS": ptr(`{"tok-abcdefgh":"admin"}`)}
	for _, tc := range []struct {
		name string
		env  map[string]*string
		args []string
		want string
	}{
		{"port_out_of_range", nil, []string{"--port", "70000"}, "--port"},
		{"timeout_zero", nil, []string{"--timeout", "0"}, "--timeout"},
		{"timeout_negative", nil, []string{"--timeout", "-1"}, "--timeout"},
		{"path_without_slash", nil, []string{"--path", "mcp"}, "--path"},
		{"max_body_zero", nil, []string{"--max-body", "0"}, "--max-body"},
		{"inflight_negative", nil, []string{"--inflight", "-1"}, "--inflight"},
		{"max_streams_negative", nil, []string{"--max-streams", "-1"}, "--max-streams"},
		{"rate_malformed", nil, []string{"--rate", "abc"}, "--rate"},
		{"rate_zero", nil, []string{"--rate", "0/1m"}, "--rate"},
		{"rate_zero_window", nil, []string{"--rate", "5/0s"}, "--rate"},
		{"upstream_without_scheme", nil, []string{"--upstream", "127.0.0.1:8081"}, "--upstream"},
		{"upstream_without_host", nil, []string{"--upstream", "https:///mcp"}, "--upstream"},
		{"upstream_ftp", nil, []string{"--upstream", "ftp://127.0.0.1/mcp"}, "--upstream"},
		{"upstream_user_information", nil, []string{"--upstream", "http://alice:s3cret@127.0.0.1:1/mcp"}, "--upstream"},
		{"allowed_origins_empty_member", nil, []string{"--allowed-origins", "https://a.example,"}, "--allowed-origins"},
		{"tool_pins_missing", nil, []string{"--tool-pins", filepath.Join(dir, "none.json")}, "--tool-pins"},
		{"tool_pins_malformed", nil, []string{"--tool-pins", badPins}, "--tool-pins"},
		{"pin_tools_and_tool_pins", nil, []string{"--pin-tools", "--tool-pins", badPins}, "--tool-pins"},
		{"host_not_loopback_demo_tokens", nil, []string{"--host", "0.0.0.0"}, "--host"},
		{"host_empty", tokens, []string{"--host", ""}, "--host"},
		{"introspect_empty", nil, []string{"--introspect", ""}, "--introspect"},
		{"tool_pins_empty", nil, []string{"--tool-pins", ""}, "--tool-pins"},
		{"upstream_empty", nil, []string{"--upstream", ""}, "--upstream"},
		{"jwt_jwks_empty", nil, []string{"--jwt-jwks", ""}, "--jwt-jwks"},
		{"port_twice", nil, []string{"--port", "8080", "--port", "0"}, "--port"},
		{"policy_twice", nil, []string{"--policy=a.json", "-policy", "b.json"}, "--policy"},
		{"bool_flag_twice", nil, []string{"--filter-tools-list", "--filter-tools-list=false"}, "--filter-tools-list"},
		{"argument_after_bool_flag", nil, []string{"--filter-tools-list", "false", "--policy", "strict.json"}, `"false"`},
		{"jwt_audience_alone", nil, []string{"--jwt-audience", "x"}, "--jwt-audience"},
		{"jwks_without_issuer", nil, []string{"--jwt-jwks", badPins}, "--jwt-issuer"},
		{"introspect_without_audience", nil, []string{"--introspect", "https://idp.example/introspect"}, "audience"},
		{"jwks_url_plain_http_off_loopback", nil, []string{"--jwt-jwks", "http://192.0.2.1/jwks.json", "--jwt-issuer", "https://idp.example", "--jwt-audience", "a"}, "--jwt-jwks"},
		{"jwks_url_without_host", nil, []string{"--jwt-jwks", "https:///jwks.json", "--jwt-issuer", "https://idp.example", "--jwt-audience", "a"}, "--jwt-jwks"},
		{"issuer_plain_http_off_loopback", nil, []string{"--jwt-issuer", "http://idp.example", "--jwt-audience", "a"}, "--jwt-issuer"},
		{"issuer_with_query", nil, []string{"--jwt-issuer", "https://idp.example/?x=1", "--jwt-audience", "a"}, "--jwt-issuer"},
		{"issuer_with_user_information", nil, []string{"--jwt-issuer", "https://u:p@idp.example", "--jwt-audience", "a"}, "--jwt-issuer"},
		{"issuer_not_a_url", nil, []string{"--jwt-issuer", "idp.example", "--jwt-audience", "a"}, "--jwt-issuer"},
		{"tokens_not_json", map[string]*string{"MCP_GATEWAY_TOKENS": ptr("x")}, nil, "MCP_GATEWAY_TOKENS"},
		{"tokens_empty", map[string]*string{"MCP_GATEWAY_TOKENS": ptr("")}, nil, "MCP_GATEWAY_TOKENS"},
		{"tokens_twice", map[string]*string{"MCP_GATEWAY_TOKENS": ptr(`{"abc":"r","abc":"q"}`)}, nil, "MCP_GATEWAY_TOKENS"},
		{"tokens_empty_roles", map[string]*string{"MCP_GATEWAY_TOKENS": ptr(`{"abc":[]}`)}, nil, "MCP_GATEWAY_TOKENS"},
		{"tokens_with_jwt", map[string]*string{"MCP_GATEWAY_TOKENS": ptr(`{"abc":"r"}`)}, []string{"--jwt-jwks", badPins, "--jwt-issuer", "https://idp.example", "--jwt-audience", "a"}, "MCP_GATEWAY_TOKENS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			args := append([]string{"--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--audit", auditPath}, tc.args...)
			if strings.HasPrefix(tc.name, "port_") {
				args = append([]string{"--upstream", "http://127.0.0.1:1/mcp", "--audit", auditPath}, tc.args...)
			}
			if strings.HasPrefix(tc.name, "upstream_") {
				args = append([]string{"--port", "0", "--audit", auditPath}, tc.args...)
			}
			logs, err := runAtStart(t, tc.env, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q): err %v, want one naming %s; logs:\n%s", tc.args, err, tc.want, logs)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("run(%q): %v: exit status %d, want 2", tc.args, err, got)
			}
			if strings.Contains(err.Error()+logs, "s3cret") {
				t.Errorf("run(%q): the error or logs show the upstream's password: %v\n%s", tc.args, err, logs)
			}
			if _, statErr := os.Stat(auditPath); statErr == nil {
				t.Errorf("run(%q): %v: the audit file was created before the refusal", tc.args, err)
			}
		})
	}
}

// TestReview19RuntimeFailureExitOne: a failure that is not the flags'
// (the address in use) keeps exit status 1.
func TestReview19RuntimeFailureExitOne(t *testing.T) {
	down := answeringDownstream(t)
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp")
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	port := url[strings.LastIndex(url, ":")+1:]
	_, err = runAtStart(t, nil, "--host", "127.0.0.1", "--port", port, "--upstream", down.URL+"/mcp")
	stop()
	if err == nil || exitCode(err) != 1 {
		t.Errorf("a second gateway on port %s: err %v, exit status %d, want 1", port, err, exitCode(err))
	}
}

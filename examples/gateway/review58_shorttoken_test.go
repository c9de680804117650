package main

import (
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview58ShortTokensRefusedOffLoopback: MCP_GATEWAY_TOKENS with a
// token of one character was served on any address. The gateway limits no
// request of a caller without a valid token, so such a token is guessed in
// a few requests: off loopback the start is refused (exit status 2) for a
// token shorter than 16 characters, naming the variable and never the
// token; on loopback it is warned of; 16 characters start anywhere.
func TestReview58ShortTokensRefusedOffLoopback(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, tc := range []struct {
		name, tokens, host string
		start, warn        bool
	}{
		{"short_off_loopback", `{"0123456789abcdef":"admin","zq":"viewer"}`, "0.0.0.0", false, false},
		{"short_on_loopback", `{"zq":"viewer"}`, "127.0.0.1", true, true},
		{"long_off_loopback", `{"0123456789abcdef":"admin"}`, "0.0.0.0", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, err, logs := runWithTokens(t, tc.tokens, "--host", tc.host, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp")
			if started := url != ""; started != tc.start {
				t.Fatalf("started %v, want %v: %v\n%s", started, tc.start, err, logs)
			}
			if !tc.start && (exitCode(err) != 2 || !strings.Contains(err.Error(), "MCP_GATEWAY_TOKENS") ||
				!strings.Contains(err.Error(), "2 characters") || strings.Contains(err.Error(), "zq")) {
				t.Errorf("err %v (exit status %d), want a usage error naming MCP_GATEWAY_TOKENS and the length, not the token", err, exitCode(err))
			}
			if warned := strings.Contains(logs.String(), "shorter than 16 characters"); warned != tc.warn {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warn, logs)
			}
		})
	}
}

// TestReview58StartLogNamesTheCaps: the start's log line named --rate but
// not --inflight or --max-streams, so an operator could not see from the
// log which in-flight and stream caps a gateway ran with.
func TestReview58StartLogNamesTheCaps(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	url, err, logs := runWithTokens(t, `{"0123456789abcdef":"admin"}`, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp",
		"--inflight", "3", "--max-streams", "7")
	if url == "" {
		t.Fatalf("did not start: %v\n%s", err, logs)
	}
	if l := logs.String(); !strings.Contains(l, "inflight=3") || !strings.Contains(l, "max_streams=7") {
		t.Errorf("start log without the caps:\n%s", l)
	}
}

// TestReview58LogFormatJSON: --log-format json makes every line of the log a
// JSON object (a log shipper's input); another value is a usage error.
func TestReview58LogFormatJSON(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	t.Setenv("MCP_GATEWAY_TOKENS", `{"0123456789abcdef":"admin"}`)
	defer slog.SetDefault(slog.Default()) // json sets it: the library's lines too
	start := func(format string) (*runLogs, chan error) {
		flag.CommandLine = flag.NewFlagSet("gateway", flag.ContinueOnError)
		flag.CommandLine.SetOutput(io.Discard)
		os.Args = []string{"gateway", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--log-format", format}
		logs := &runLogs{}
		done := make(chan error, 1)
		go func() { done <- run(slog.New(newLogHandler(logs))) }()
		return logs, done
	}
	logs, done := start("json")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `"msg":"gateway listening"`); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("run returned %v:\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no JSON start line:\n%s", logs)
		}
	}
	slog.Warn("a line of the library's") // through slog.Default
	signalSelf(syscall.SIGINT)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"msg":"a line of the library's"`) {
		t.Errorf("slog.Default's line is not in the JSON log:\n%s", logs)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] == nil {
			t.Errorf("a log line that is not a JSON object: %q", line)
		}
	}
	logs, done = start("yaml")
	if err := <-done; exitCode(err) != 2 || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format yaml: %v (exit status %d), want a usage error naming the flag\n%s", err, exitCode(err), logs)
	}
}

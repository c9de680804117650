package main

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type runLogs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (r *runLogs) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.Write(p)
}

func (r *runLogs) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// runAddr reads the gateway's URL from its start's log line: 127.0.0.1,
// or [::] for --host 0.0.0.0 (Go's listener there is dual-stack).
var runAddr = regexp.MustCompile(`addr=(http://(?:127\.0\.0\.1|\[::\]):[0-9]+)`)

// startRun runs run() in this process with args; it returns the base URL
// once the gateway listens, or "" and run's error when run returned first.
// stop ends a started gateway (SIGINT, which run's NotifyContext catches)
// and returns when run has returned.
//
//lint:ignore ST1008 run's error is one of the two outcomes of a start, not startRun's own failure
func startRun(t *testing.T, args ...string) (url string, runErr error, stop func(), logs *runLogs) {
	t.Helper()
	os.Unsetenv("MCP_GATEWAY_TOKENS")
	flag.CommandLine = flag.NewFlagSet("gateway", flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	os.Args = append([]string{"gateway"}, args...)
	logs = &runLogs{}
	done := make(chan error, 1)
	go func() { done <- run(slog.New(slog.NewTextHandler(logs, nil))) }()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-done:
			return "", err, func() {}, logs
		case <-deadline:
			t.Fatalf("run neither listened nor returned; logs:\n%s", logs)
		case <-time.After(10 * time.Millisecond):
		}
		if m := runAddr.FindStringSubmatch(logs.String()); m != nil {
			stop = func() {
				signalSelf(syscall.SIGINT)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("run did not return after SIGINT")
				}
			}
			return m[1], nil, stop, logs
		}
	}
}

// TestBadFlagValuesRefused: a flag value that cannot mean what the
// operator wrote must stop the binary at start, not be replaced silently
// by a default (gateway.New turns a zero or negative Timeout and
// MaxBodyBytes into 30 s and 4 MiB) or accepted into a gateway that
// answers 404 to everything.
func TestBadFlagValuesRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, tc := range []struct {
		name string
		args []string
		why  string
	}{
		{"negative_timeout", []string{"--timeout", "-1"}, "becomes the 30 s default"},
		{"zero_timeout", []string{"--timeout", "0"}, "becomes the 30 s default"},
		{"nan_timeout", []string{"--timeout", "NaN"}, "becomes the 30 s default"},
		{"negative_max_body", []string{"--max-body", "-1"}, "becomes the 4 MiB default"},
		{"negative_inflight", []string{"--inflight", "-3"}, "means no cap at all"},
		{"path_without_slash", []string{"--path", "mcp"}, "is never a request path: every request gets 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, tc.args...)
			url, err, stop, _ := startRun(t, args...)
			if url != "" {
				stop()
				t.Errorf("gateway %v started on %s; want a refusal at start (the value %s)", tc.args, url, tc.why)
			} else if err == nil {
				t.Errorf("run returned nil for %v", tc.args)
			}
		})
	}
}

// TestShutdownWaitsForInFlight: on SIGINT/SIGTERM run returns only after
// the in-flight requests are answered and audited (http.Server.Serve
// returns as soon as Shutdown starts; returning then would close the audit
// sink under the running handlers and let the process exit, cutting the
// call and losing its outcome event).
func TestShutdownWaitsForInFlight(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	entered := make(chan struct{})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		close(entered)
		time.Sleep(time.Second)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	t.Cleanup(down.Close)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--audit", auditPath)
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}}`))
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- -1
			return
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-entered
	stop() // returns when run has returned: in the binary, the process exits here
	select {
	case code := <-answered:
		if code != http.StatusOK {
			t.Errorf("in-flight call answered %d during shutdown, want 200", code)
		}
	default:
		t.Errorf("run returned (the process would exit) while a forwarded tools/call was still in flight")
		<-answered
	}
	time.Sleep(100 * time.Millisecond)
	b, _ := os.ReadFile(auditPath)
	if !strings.Contains(string(b), `"outcome"`) {
		t.Errorf("no outcome event in the audit file after shutdown:\n%s\nlogs:\n%s", b, logs)
	}
}

// TestSIGHUPReopensAuditFile: after a rotator renames the JSONL audit file
// and sends SIGHUP, the next records go to a new file at the path and the
// earlier ones are all in the renamed file.
func TestSIGHUPReopensAuditFile(t *testing.T) {
	down := answeringDownstream(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--audit", auditPath)
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	callTool(t, url, "before_rotation", "viewer-token")
	if err := os.Rename(auditPath, auditPath+".1"); err != nil {
		t.Fatal(err)
	}
	signalSelf(syscall.SIGHUP)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "audit file reopened"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reopen logged after SIGHUP:\n%s", logs)
		}
	}
	callTool(t, url, "after_rotation", "viewer-token")
	stop()
	rotated, _ := os.ReadFile(auditPath + ".1")
	current, _ := os.ReadFile(auditPath)
	if !strings.Contains(string(rotated), "before_rotation") || strings.Contains(string(rotated), "after_rotation") {
		t.Errorf("renamed file:\n%s\nwant the record before the rotation only", rotated)
	}
	if !strings.Contains(string(current), "after_rotation") || strings.Contains(string(current), "before_rotation") {
		t.Errorf("file at the path:\n%s\nwant the record after the rotation only", current)
	}
}

// TestSIGHUPWithoutJSONLIgnored: with an SQLite audit, or none, SIGHUP is
// logged and ignored; before, it ended the process without its shutdown,
// losing unwritten records.
func TestSIGHUPWithoutJSONLIgnored(t *testing.T) {
	down := answeringDownstream(t)
	for _, audit := range []string{filepath.Join(t.TempDir(), "audit.db"), ""} {
		args := []string{"--host", "127.0.0.1", "--port", "0", "--upstream", down.URL + "/mcp"}
		if audit != "" {
			args = append(args, "--audit", audit)
		}
		url, err, stop, logs := startRun(t, args...)
		if url == "" {
			t.Fatalf("gateway did not start: %v\n%s", err, logs)
		}
		signalSelf(syscall.SIGHUP)
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "no audit file to reopen"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("audit %q: no log of the SIGHUP:\n%s", audit, logs)
			}
		}
		if code := callTool(t, url, "get_customer_record", "viewer-token"); code != http.StatusOK {
			t.Errorf("audit %q: a call after SIGHUP answered %d", audit, code)
		}
		stop()
	}
}

// answeringDownstream saves the flags and arguments startRun changes, and
// returns a downstream that answers every POST with an empty result.
func answeringDownstream(t *testing.T) *httptest.Server {
	t.Helper()
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	t.Cleanup(down.Close)
	return down
}

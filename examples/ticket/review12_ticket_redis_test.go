package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// served is a `ticket serve-http` server run through run, as its own
// process would run it.
type served struct {
	base   string
	stderr *syncBuffer
	// stop ends the server and returns its exit status; later calls
	// return it again.
	stop func() int
}

// startServeHTTP runs `ticket serve-http --port 0 args...` until the test
// ends (or stop) and returns it once it listens.
func startServeHTTP(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &served{stderr: &syncBuffer{}}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve-http", "--port", "0"}, args...), pw, s.stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("serve-http %q: no address line (exit %d); stderr:\n%s", args, <-done, s.stderr)
	}
	go io.Copy(io.Discard, pr)
	s.base = strings.Fields(strings.TrimPrefix(line, "ticket: serving "))[0]
	var once sync.Once
	var code int
	s.stop = func() int {
		once.Do(func() { cancel(); code = <-done })
		return code
	}
	t.Cleanup(func() {
		if c := s.stop(); c != 0 {
			t.Errorf("serve-http %q: exit %d; stderr:\n%s", args, c, s.stderr)
		}
	})
	return s
}

// configFile writes the shipped server.yaml with each old string replaced
// by its new one (pairs) to a temporary file and returns its path.
func configFile(t *testing.T, pairs ...string) string {
	t.Helper()
	data, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("server.yaml has no %q", pairs[i])
		}
		text = strings.Replace(text, pairs[i], pairs[i+1], 1)
	}
	path := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

const searchBody = `{"arguments": {"query": ""}}`

// TestReview12RedisSharesSessionBudgetsAcrossServers: the seed keeps its
// session limits in memory, so that two server processes behind one
// address give each session twice its budget, and a restart gives it a
// new one. With --redis, two servers on one Redis count one REST session's
// calls together: the server.yaml budget (5 calls) is the session's across
// both, with the same answers as one server in memory, and it survives a
// restart.
func TestReview12RedisSharesSessionBudgetsAcrossServers(t *testing.T) {
	r := testsvc.StartRedis(t)
	a := startServeHTTP(t, "--audit-dir", t.TempDir(), "--redis", r.Addr)
	b := startServeHTTP(t, "--audit-dir", t.TempDir(), "--redis", r.Addr)

	// What one server in memory answers to six calls in one session.
	mem := startServeHTTP(t, "--audit-dir", t.TempDir())
	var want []int
	for range 6 {
		want = append(want, restPost(t, mem.base, "search_docs", "token-alice", "shared", searchBody).status)
	}
	if diff := cmp.Diff([]int{200, 200, 200, 200, 200, 429}, want); diff != "" {
		t.Fatalf("one server in memory (-want +got):\n%s", diff)
	}

	var got []int
	var last restReply
	for i := range 6 {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		last = restPost(t, srv.base, "search_docs", "token-alice", "shared", searchBody)
		got = append(got, last.status)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("one session over two servers on one Redis (-want +got):\n%s", diff)
	}
	if last.code() != "RATE_LIMIT_EXCEEDED" || last.header.Get("Retry-After") == "" {
		t.Errorf("the 6th call: %d %v, Retry-After %q; want RATE_LIMIT_EXCEEDED with a Retry-After", last.status, last.body, last.header.Get("Retry-After"))
	}

	// The same name from another caller, and another name, are other
	// sessions with budgets of their own.
	if r := restPost(t, b.base, "search_docs", "token-bob", "shared", searchBody); r.status != 200 {
		t.Errorf("bob's session shared: %d %v", r.status, r.body)
	}
	if r := restPost(t, a.base, "search_docs", "token-alice", "other", searchBody); r.status != 200 {
		t.Errorf("alice's session other: %d %v", r.status, r.body)
	}

	// A restarted server keeps the session's budget used up.
	if c := a.stop(); c != 0 {
		t.Fatalf("stopping a: exit %d", c)
	}
	c := startServeHTTP(t, "--audit-dir", t.TempDir(), "--redis", r.Addr)
	if r := restPost(t, c.base, "search_docs", "token-alice", "shared", searchBody); r.code() != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("after a restart, the session's 7th call: %d %v, want RATE_LIMIT_EXCEEDED", r.status, r.body)
	}
}

// TestReview12RedisSharesTheCostBudget: the spend cap (cost_per_session) is
// shared as the call rate is: with 3 units a session and search_docs at 1,
// the 4th call across two servers is SPEND_LIMIT_EXCEEDED.
func TestReview12RedisSharesTheCostBudget(t *testing.T) {
	r := testsvc.StartRedis(t)
	cfg := configFile(t, "calls_per_min: 5 ", "calls_per_min: 100 ", "cost_per_session: 10 ", "cost_per_session: 3 ")
	a := startServeHTTP(t, "--config", cfg, "--audit-dir", t.TempDir(), "--redis", r.Addr)
	b := startServeHTTP(t, "--config", cfg, "--audit-dir", t.TempDir(), "--redis", r.Addr)
	for i, srv := range []*served{a, b, a} {
		if r := restPost(t, srv.base, "search_docs", "token-alice", "spend", searchBody); r.status != 200 {
			t.Fatalf("call %d: %d %v", i+1, r.status, r.body)
		}
	}
	if r := restPost(t, b.base, "search_docs", "token-alice", "spend", searchBody); r.code() != "SPEND_LIMIT_EXCEEDED" {
		t.Errorf("call 4 (cost 4 of 3): %d %v, want SPEND_LIMIT_EXCEEDED", r.status, r.body)
	}
	// list_tools costs nothing: still allowed by the spend cap.
	if r := restPost(t, b.base, "list_tools", "token-alice", "spend", `{"arguments": {}}`); r.status != 200 {
		t.Errorf("list_tools (cost 0): %d %v", r.status, r.body)
	}
}

// TestReview12RedisDownFailsClosed: once Redis is gone, no call goes
// through unlimited: reads and writes alike are refused with the guard's
// answer for a limiter that cannot decide (RATE_LIMIT_EXCEEDED, retry in
// 1 s), and audited.
func TestReview12RedisDownFailsClosed(t *testing.T) {
	r := testsvc.StartRedis(t)
	dir := t.TempDir()
	cfg := configFile(t, "allowed_write_tools: []", "allowed_write_tools: [create_ticket]")
	a := startServeHTTP(t, "--config", cfg, "--audit-dir", dir, "--redis", r.Addr)
	if r := restPost(t, a.base, "search_docs", "token-alice", "down", searchBody); r.status != 200 {
		t.Fatalf("with Redis up: %d %v", r.status, r.body)
	}
	r.Stop()
	for _, c := range []struct{ tool, body string }{
		{"search_docs", searchBody},
		{"create_ticket", `{"arguments": {"title": "Broken build", "body": "CI red"}}`},
		{"list_tools", `{"arguments": {}}`},
	} {
		got := restPost(t, a.base, c.tool, "token-alice", "down", c.body)
		e, _ := got.body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if got.status != 429 || got.code() != "RATE_LIMIT_EXCEEDED" || !strings.Contains(msg, "unavailable") ||
			got.header.Get("Retry-After") != "1" || e["correlation_id"] == nil {
			t.Errorf("%s with Redis down: %d %v, Retry-After %q; want 429 RATE_LIMIT_EXCEEDED (limiter unavailable), Retry-After 1, a correlation id",
				c.tool, got.status, got.body, got.header.Get("Retry-After"))
		}
	}
	a.stop()
	evs, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{SessionID: restSessionID("down", "alice"), Phase: audit.PhaseOutcome})
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, e := range evs {
		codes = append(codes, e.Tool+":"+e.Code)
	}
	want := []string{"search_docs:", "search_docs:RATE_LIMIT_EXCEEDED", "create_ticket:RATE_LIMIT_EXCEEDED", "list_tools:RATE_LIMIT_EXCEEDED"}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("audit trail (-want +got):\n%s", diff)
	}
}

// TestReview12RedisFlagIsChecked: a --redis that is empty or not host:port
// is a usage error (exit 2) naming the flag; a Redis that does not answer
// at start is an error (exit 1), never a start with limits in memory.
func TestReview12RedisFlagIsChecked(t *testing.T) {
	for _, c := range []struct {
		name, value string
		code        int
		want        string
	}{
		{"empty", "", 2, "--redis: empty"},
		{"no_port", "127.0.0.1", 2, "host:port"},
		{"url", "redis://127.0.0.1:6379?db=1", 2, "--redis"},
		{"bad_port", "127.0.0.1:redis", 2, "host:port"},
		{"port_zero", "127.0.0.1:0", 2, "host:port"},
		{"no_host", ":6379", 2, "host:port"},
		{"unreachable", closedAddr(t), 1, "--redis"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stderr := &syncBuffer{}
			code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir(), "--redis", c.value}, io.Discard, stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("--redis %q: exit %d, stderr %q; want exit %d mentioning %q", c.value, code, stderr, c.code, c.want)
			}
		})
	}
	// serve-stdio takes the flag too, checked before it serves.
	for _, args := range [][]string{{"--redis", ""}, {"--audit-postgres", "mysql://x"}} {
		cmd := exec.Command(ticketBinary(t), append([]string{"serve-stdio", "--audit-dir", t.TempDir()}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), args[0]) {
			t.Errorf("serve-stdio %q: %v, output %q; want exit 2 naming the flag", args, err, out)
		}
	}
}

// TestReview12FailedStartIsAnError: a start that fails after the app has
// begun to open its parts (here the JSONL file, which is a directory)
// closes what it opened and exits 1; it used to close a nil app and panic.
func TestReview12FailedStartIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, auditJSONL), 0o700); err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", dir}, io.Discard, stderr)
	if code != 1 || !strings.Contains(stderr.String(), auditJSONL) {
		t.Errorf("exit %d, stderr %q; want exit 1 naming %s", code, stderr, auditJSONL)
	}
}

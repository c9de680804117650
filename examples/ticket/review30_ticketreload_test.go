//go:build unix

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reloadBase is the shipped server.yaml with create_ticket allowlisted
// (still dry-run) and caps no test here reaches.
func reloadBase(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return reloadEdit(t, string(data),
		"allowed_write_tools: []", "allowed_write_tools: [create_ticket]",
		"calls_per_min: 5 ", "calls_per_min: 1000 ",
		"cost_per_session: 10 ", "cost_per_session: 1000 ",
		"calls_per_user: 30 ", "calls_per_user: 1000 ",
		"cost_per_user: 60 ", "cost_per_user: 1000 ")
}

// reloadEdit returns text with each pairs[i] replaced by pairs[i+1].
func reloadEdit(t *testing.T, text string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("configuration has no %q", pairs[i])
		}
		text = strings.Replace(text, pairs[i], pairs[i+1], 1)
	}
	return text
}

// writeConfig writes text to path; it returns the text's SHA-256.
func writeConfig(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// awaitReloadLog waits, up to 5 s, until logs holds want n times.
func awaitReloadLog(t *testing.T, logs *syncBuffer, want string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); strings.Count(logs.String(), want) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q not logged %d times in 5 s; log:\n%s", want, n, logs)
		}
	}
}

// listToolsOf returns list_tools' answer: each tool's entry by name.
func listToolsOf(t *testing.T, cs *mcp.ClientSession) map[string]registryEntry {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_tools", Arguments: map[string]any{}})
	if code := toolCode(t, res, err); code != "" {
		t.Fatalf("list_tools refused: %s", code)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out listOut
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	m := map[string]registryEntry{}
	for _, e := range out.Tools {
		m[e.Name] = e
	}
	return m
}

// listedNames returns the names tools/list gives cs.
func listedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func createTicketCall(t *testing.T, cs *mcp.ClientSession, title string) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_ticket",
		Arguments: map[string]any{"title": title, "body": "b"}})
	return toolCode(t, res, err)
}

// TestReview30ReloadRevokesWrite: an operator takes create_ticket off
// allowed_write_tools, lowers search_docs' cost, and sends SIGHUP to the
// running serve-http: the same process (no restart) and the same MCP
// session now get WRITE_NOT_ALLOWED for the write; list_tools and GET
// /tools show it disabled and the new cost, tools/list still lists it
// (the policy shows a write off the allowlist, refusing its calls); the
// reload is logged with what changed and the file's SHA-256. The same
// SIGHUP reopens audit.jsonl, renamed by a rotator just before: the next
// call's records are in the new file. Before, SIGHUP only reopened the
// audit file: revoking a write needed a restart, which ends every
// session.
func TestReview30ReloadRevokesWrite(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "server.yaml")
	base := reloadBase(t)
	writeConfig(t, cfgPath, base)
	auditDir := filepath.Join(dir, "audit")
	r := startReplica(t, nil, "--config", cfgPath, "--audit-dir", auditDir)
	pid := r.cmd.Process.Pid
	cs := connectHTTP(t, r.base, "token-alice")
	sid := cs.ID()
	if code := createTicketCall(t, cs, "before"); code != "" {
		t.Fatalf("before the reload: create_ticket refused %s; stderr:\n%s", code, r.stderr)
	}
	if e := listToolsOf(t, cs)["create_ticket"]; !e.Enabled {
		t.Fatalf("before the reload: list_tools shows create_ticket disabled: %+v", e)
	}
	before := listedNames(t, cs)

	jsonl := filepath.Join(auditDir, auditJSONL)
	if err := os.Rename(jsonl, jsonl+".1"); err != nil {
		t.Fatal(err)
	}
	sum := writeConfig(t, cfgPath, reloadEdit(t, base,
		"allowed_write_tools: [create_ticket]", "allowed_write_tools: []",
		"cost_units: 1\n", "cost_units: 2\n"))
	if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	awaitReloadLog(t, r.stderr, "--config reloaded", 1)
	awaitReloadLog(t, r.stderr, "audit file reopened", 1)
	logs := r.stderr.String()
	for _, want := range []string{"sha256=" + sum, "allowed_write_tools: [create_ticket] -> []", "tools.search_docs.cost_units: 1 -> 2"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the reload's log line lacks %q:\n%s", want, logs)
		}
	}

	if code := createTicketCall(t, cs, "after"); code != "WRITE_NOT_ALLOWED" {
		t.Errorf("after the reload, same session: create_ticket answered %q, want WRITE_NOT_ALLOWED", code)
	}
	reg := listToolsOf(t, cs)
	if e := reg["create_ticket"]; e.Enabled {
		t.Errorf("after the reload: list_tools shows create_ticket enabled: %+v", e)
	}
	if e := reg["search_docs"]; e.CostUnits != 2 {
		t.Errorf("after the reload: list_tools shows search_docs cost %v, want 2", e.CostUnits)
	}
	if after := listedNames(t, cs); !slices.Equal(after, before) {
		t.Errorf("tools/list after the reload %v, want %v (a write off the allowlist stays listed)", after, before)
	}
	resp, err := http.Get(r.base + "/tools")
	if err != nil {
		t.Fatal(err)
	}
	var rest struct{ Tools []registryEntry }
	err = json.NewDecoder(resp.Body).Decode(&rest)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rest.Tools {
		if e.Name == "create_ticket" && e.Enabled {
			t.Errorf("after the reload: GET /tools shows create_ticket enabled")
		}
	}
	if cs.ID() != sid || r.cmd.Process.Pid != pid {
		t.Errorf("session %q pid %d, want %q %d", cs.ID(), r.cmd.Process.Pid, sid, pid)
	}
	select {
	case <-r.done:
		t.Fatalf("the server exited; stderr:\n%s", r.stderr)
	default:
	}

	cs.Close()
	r.signal(t, syscall.SIGTERM)
	old, err := audit.QueryJSONL(jsonl+".1", audit.Filter{Phase: audit.PhaseOutcome, Tool: "create_ticket"})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := audit.QueryJSONL(jsonl, audit.Filter{Phase: audit.PhaseOutcome, Tool: "create_ticket"})
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 1 || !old[0].Allowed || len(cur) != 1 || cur[0].Allowed || cur[0].SessionID != old[0].SessionID {
		t.Errorf("create_ticket outcomes: rotated %+v, current %+v; want one allowed before, one refused after, in one session", old, cur)
	}
}

// TestReview30ReloadRefused: a file the start would refuse (bad YAML, a
// cost above the caps, a write that is not a tool), one that changes
// what only a restart applies (rate_limit, dry_run, a description, a
// tool added), and a path that is no longer a regular file (a named
// pipe, which no process writes to: reading it would hang the handler)
// are each logged as not reloaded, and the server keeps deciding by the
// configuration it had; a good file after them is applied.
func TestReview30ReloadRefused(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "server.yaml")
	base := reloadBase(t)
	writeConfig(t, cfgPath, base)
	r := startReplica(t, nil, "--config", cfgPath, "--audit-dir", filepath.Join(dir, "audit"))
	cs := connectHTTP(t, r.base, "token-bob")

	revoke := func(text string) string {
		return reloadEdit(t, text, "allowed_write_tools: [create_ticket]", "allowed_write_tools: []")
	}
	cases := []struct {
		name string
		text string // "" for a named pipe
		want []string
	}{
		{"bad_yaml", revoke(base) + "  : [\n", []string{"yaml"}},
		{"cost_over_cap", revoke(reloadEdit(t, base, "cost_units: 1\n", "cost_units: 5000\n")),
			[]string{"tools.search_docs.cost_units 5000 is more than rate_limit.cost_per_session"}},
		{"unknown_key", revoke(base) + "rate_limits: {}\n", []string{"rate_limits"}},
		{"rate_limit", revoke(reloadEdit(t, base, "calls_per_min: 1000 ", "calls_per_min: 1 ")),
			[]string{"rate_limit.calls_per_min changed", "restart"}},
		{"window_and_dry_run", revoke(reloadEdit(t, base, "window_seconds: 60 ", "window_seconds: 30 ", "dry_run: true ", "dry_run: false ")),
			[]string{"dry_run, rate_limit.window_seconds changed", "restart"}},
		{"description", revoke(reloadEdit(t, base, "Search internal docs", "Search the docs")),
			[]string{"tools.search_docs.description changed", "restart"}},
		{"tool_added", revoke(base) + "  delete_ticket:\n    read_only: false\n    cost_units: 1\n",
			[]string{"delete_ticket", "is configured but has no implementation"}},
		{"class_changed", revoke(reloadEdit(t, base, "read_only: false", "read_only: true")),
			[]string{"create_ticket", "code declares read_only: false, configuration disagrees"}},
		{"named_pipe", "", []string{"not a regular file"}},
	}
	for i, c := range cases {
		if c.text == "" {
			os.Remove(cfgPath)
			if err := syscall.Mkfifo(cfgPath, 0o600); err != nil {
				t.Fatal(err)
			}
		} else {
			writeConfig(t, cfgPath, c.text)
		}
		r.cmd.Process.Signal(syscall.SIGHUP)
		awaitReloadLog(t, r.stderr, "--config not reloaded", i+1)
		lines := strings.Split(r.stderr.String(), "\n")
		var line string
		for _, l := range lines {
			if strings.Contains(l, "--config not reloaded") {
				line = l // the last
			}
		}
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: the refusal's log line lacks %q:\n%s", c.name, w, line)
			}
		}
		if !strings.Contains(line, "level=ERROR") {
			t.Errorf("%s: the refusal is not logged at level ERROR:\n%s", c.name, line)
		}
		if code := createTicketCall(t, cs, c.name); code != "" {
			t.Errorf("%s: after the refused reload create_ticket answered %s, want the old policy's dry run", c.name, code)
		}
	}
	if strings.Contains(r.stderr.String(), "--config reloaded") {
		t.Fatalf("a refused file logged as reloaded:\n%s", r.stderr)
	}
	os.Remove(cfgPath)
	writeConfig(t, cfgPath, revoke(base))
	r.cmd.Process.Signal(syscall.SIGHUP)
	awaitReloadLog(t, r.stderr, "--config reloaded", 1)
	if code := createTicketCall(t, cs, "good"); code != "WRITE_NOT_ALLOWED" {
		t.Errorf("after the good reload: create_ticket answered %q, want WRITE_NOT_ALLOWED", code)
	}
}

// TestReview30ReloadStdio: serve-stdio reloads --config on SIGHUP too, in
// its one session; without --config (the embedded copy) SIGHUP is logged
// and changes nothing.
func TestReview30ReloadStdio(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "server.yaml")
	base := reloadBase(t)
	writeConfig(t, cfgPath, base)
	cmd := exec.Command(ticketBinary(t), "--config", cfgPath, "serve-stdio", "--audit-dir", filepath.Join(dir, "audit"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tokenEnv + "=token-alice"}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	cs, err := cl.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr:\n%s", err, stderr)
	}
	defer cs.Close()
	if code := createTicketCall(t, cs, "before"); code != "" {
		t.Fatalf("before the reload: create_ticket refused %s; stderr:\n%s", code, stderr)
	}
	writeConfig(t, cfgPath, reloadEdit(t, base, "allowed_write_tools: [create_ticket]", "allowed_write_tools: []"))
	cmd.Process.Signal(syscall.SIGHUP)
	awaitReloadLog(t, stderr, "--config reloaded", 1)
	if code := createTicketCall(t, cs, "after"); code != "WRITE_NOT_ALLOWED" {
		t.Errorf("after the reload: create_ticket answered %q, want WRITE_NOT_ALLOWED", code)
	}

	// The embedded configuration.
	r := startReplica(t, nil, "--audit-dir", filepath.Join(dir, "audit2"))
	r.cmd.Process.Signal(syscall.SIGHUP)
	awaitReloadLog(t, r.stderr, "nothing reloaded", 1)
	if reply := restPost(t, r.base, "search_docs", "token-alice", "s1", `{"arguments":{"query":""}}`); reply.status != http.StatusOK {
		t.Errorf("after SIGHUP without --config: search_docs answered %d %v", reply.status, reply.body)
	}
}

// gatedProxy forwards TCP connections to addr once open is closed;
// accepted is closed at the first connection.
type gatedProxy struct {
	ln       net.Listener
	open     chan struct{}
	accepted chan struct{}
	once     sync.Once
}

func startGatedProxy(t *testing.T, addr string) *gatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedProxy{ln: ln, open: make(chan struct{}), accepted: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	quit := make(chan struct{})
	t.Cleanup(func() {
		close(quit)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.once.Do(func() { close(p.accepted) })
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				select {
				case <-p.open:
				case <-quit:
					c.Close()
					return
				}
				up, err := net.Dial("tcp", addr)
				if err != nil {
					c.Close()
					return
				}
				mu.Lock()
				conns = append(conns, up)
				mu.Unlock()
				go io.Copy(up, c)
				io.Copy(c, up)
				c.Close()
				up.Close()
			})
		}
	})
	return p
}

// TestReview30ReloadDuringStart: a SIGHUP that comes during the start
// (here while the server waits for Redis to answer) does not end the
// process, whose default action it was until newApp caught it for
// audit.jsonl: the file, edited meanwhile, is read again once the server
// is made, and applied.
func TestReview30ReloadDuringStart(t *testing.T) {
	rd := testsvc.StartRedis(t)
	proxy := startGatedProxy(t, rd.Addr)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "server.yaml")
	base := reloadBase(t)
	writeConfig(t, cfgPath, base)
	cmd := exec.Command(ticketBinary(t), "serve-http", "--port", "0", "--config", cfgPath,
		"--audit-dir", filepath.Join(dir, "audit"), "--redis", proxy.ln.Addr().String())
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}) // closed once cmd exited, with waitErr
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	select {
	case <-proxy.accepted:
	case <-done:
		t.Fatalf("exited before dialling Redis: %v; stderr:\n%s", waitErr, stderr)
	case <-time.After(5 * time.Second):
		t.Fatalf("no Redis connection in 5 s; stderr:\n%s", stderr)
	}
	writeConfig(t, cfgPath, reloadEdit(t, base, "allowed_write_tools: [create_ticket]", "allowed_write_tools: []"))
	cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "SIGHUP during the start"); time.Sleep(5 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("SIGHUP during the start ended the process: %v; stderr:\n%s", waitErr, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP during the start not logged in 5 s; stderr:\n%s", stderr)
		}
	}
	close(proxy.open)
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, out)
	}()
	var line string
	select {
	case line = <-lines:
	case <-done:
		t.Fatalf("exited during the start: %v; stderr:\n%s", waitErr, stderr)
	case <-time.After(5 * time.Second):
		t.Fatalf("no address line in 5 s; stderr:\n%s", stderr)
	}
	awaitReloadLog(t, stderr, "--config reloaded", 1)
	base2 := strings.Fields(strings.TrimPrefix(line, "ticket: serving "))[0]
	if reply := restPost(t, base2, "create_ticket", "token-alice", "s1", `{"arguments":{"title":"t","body":"b"}}`); reply.code() != "WRITE_NOT_ALLOWED" {
		t.Errorf("after the start's reload: create_ticket answered %d %v, want WRITE_NOT_ALLOWED", reply.status, reply.body)
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// rawServer is the binary driven through its stdin and stdout pipes, with
// no client library in between.
type rawServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
}

func startRaw(t *testing.T, args []string, env ...string) *rawServer {
	t.Helper()
	cmd, stderr := command(args, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawServer{cmd: cmd, stdin: stdin, lines: make(chan string, 1000), stderr: stderr}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return s
}

// response is a JSON-RPC response as it appears on the wire.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// parseResponse fails the test unless line is one JSON-RPC 2.0 response.
func parseResponse(t *testing.T, line string) response {
	t.Helper()
	var r response
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("stdout line is not JSON: %q (%v)", line, err)
	}
	if r.JSONRPC != "2.0" || r.ID == nil || (r.Result == nil) == (r.Error == nil) {
		t.Fatalf("stdout line is not a JSON-RPC 2.0 response: %q", line)
	}
	return r
}

// send writes one line and, for a request, returns the response line.
func (s *rawServer) send(t *testing.T, line string, wantResponse bool) response {
	t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		t.Fatalf("writing %s: %v; stderr:\n%s", line, err, s.stderr)
	}
	if !wantResponse {
		return response{}
	}
	select {
	case out, ok := <-s.lines:
		if !ok {
			t.Fatalf("stdout closed before the response to %s; stderr:\n%s", line, s.stderr)
		}
		return parseResponse(t, out)
	case <-time.After(20 * time.Second):
		t.Fatalf("no response to %s; stderr:\n%s", line, s.stderr)
	}
	return response{}
}

// finish closes stdin and returns the process's exit error after checking
// every remaining stdout line.
func (s *rawServer) finish(t *testing.T) error {
	t.Helper()
	s.stdin.Close()
	for line := range s.lines {
		t.Errorf("stdout line after the last response: %q", line)
		parseResponse(t, line)
	}
	return s.cmd.Wait()
}

func TestRawStdoutIsOnlyJSONRPC(t *testing.T) {
	s := startRaw(t, []string{"-demo-stray-prints"}, alice)
	call := func(id, tool, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	tests := []struct {
		name     string
		line     string
		wantCode int64 // 0: a result
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, 0},
		{"initialized", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, -1},
		{"tools_list", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 0},
		{"ping_string_id", `{"jsonrpc":"2.0","id":"p-1","method":"ping"}`, 0},
		{"unknown_method", `{"jsonrpc":"2.0","id":3,"method":"customers/delete"}`, -32601},
		{"get", call("4", "get_customer_record", `{"customer_id":"CUST-00001"}`), 0},
		{"get_missing", call("5", "get_customer_record", `{"customer_id":"CUST-77777"}`), 0},
		{"refund", call("6", "trigger_refund", `{"customer_id":"CUST-00001","amount":19.99,"reason":"late delivery refund"}`), 0},
		{"unknown_tool", call("7", "drop_tables", `{}`), -32601},
		{"no_arguments", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_customer_record"}}`, -32602},
		{"arguments_array", call("9", "get_customer_record", `[1]`), -32602},
		{"duplicate_key", call("10", "get_customer_record", `{"customer_id":"CUST-00001","customer_id":"CUST-00002"}`), -32602},
		{"amount_overflows_float", call("11", "trigger_refund", `{"customer_id":"CUST-00001","amount":1e400,"reason":"absurdly large amount"}`), -32602},
		{"amount_underflows_to_zero", call("12", "trigger_refund", `{"customer_id":"CUST-00001","amount":1e-400,"reason":"absurdly small amount"}`), -32602},
		{"amount_fraction_of_cent", call("13", "trigger_refund", `{"customer_id":"CUST-00001","amount":12.345,"reason":"fraction of a cent"}`), -32602},
		{"control_character", call("14", "trigger_refund", `{"customer_id":"CUST-00001","amount":1,"reason":"ok reason\u0000hidden"}`), -32602},
		{"null_id_field", call("15", "get_customer_record", `{"customer_id":null}`), -32602},
		{"after_errors_still_serving", call("16", "get_customer_record", `{"customer_id":"CUST-00002"}`), 0},
	}
	for _, tt := range tests {
		r := s.send(t, tt.line, tt.wantCode != -1)
		switch {
		case tt.wantCode == -1:
		case tt.wantCode == 0 && r.Error != nil:
			t.Errorf("%s: error %d %q, want a result", tt.name, r.Error.Code, r.Error.Message)
		case tt.wantCode != 0 && (r.Error == nil || r.Error.Code != tt.wantCode):
			t.Errorf("%s: got %+v, want error %d", tt.name, r, tt.wantCode)
		}
	}
	if err := s.finish(t); err != nil {
		t.Errorf("exit after stdin closed: %v; stderr:\n%s", err, s.stderr)
	}
	if n := strings.Count(s.stderr.String(), "debug: stray print to stdout"); n != 4 {
		t.Errorf("stderr has %d stray prints, want 4 (one per call that reached a handler):\n%s", n, s.stderr)
	}
}

// readAudit returns the records of the JSONL audit file at path; a line that
// does not read back as a record fails the test.
func readAudit(t *testing.T, path string, f audit.Filter) []audit.Event {
	t.Helper()
	evs, err := audit.QueryJSONL(path, f)
	if err != nil {
		t.Errorf("audit trail %s does not read back: %v", path, err)
	}
	return evs
}

func TestAuditFile(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startRaw(t, []string{"-audit", auditPath}, alice)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, false)
	r := s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":19.99,"reason":"late delivery refund"}}}`, true)
	if r.Error != nil {
		t.Fatalf("refund: %+v", r.Error)
	}
	r = s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":-1,"reason":"negative amount here"}}}`, true)
	if r.Error == nil {
		t.Fatal("negative refund: allowed")
	}
	if err := s.finish(t); err != nil {
		t.Errorf("exit: %v; stderr:\n%s", err, s.stderr)
	}
	if strings.Contains(s.stderr.String(), `"phase"`) {
		t.Errorf("audit records on stderr although -audit names a file:\n%s", s.stderr)
	}

	// The refund's write-ahead intent and its outcome, with the opted-in
	// fields only (not the free-text reason).
	type rec struct {
		Phase   audit.Phase
		Subject string
		Class   string
		Allowed bool
		Code    string
		Args    map[string]any
	}
	var got []rec
	for _, e := range readAudit(t, auditPath, audit.Filter{Tool: "trigger_refund"}) {
		got = append(got, rec{e.Phase, e.Subject, e.Class, e.Allowed, e.Code, e.Args})
	}
	args := map[string]any{"customer_id": "CUST-00001", "amount": 19.99}
	want := []rec{
		{audit.PhaseIntent, "alice@example.com", "write", true, "", args},
		{audit.PhaseOutcome, "alice@example.com", "write", true, "", args},
		// A refused call's arguments are the caller's, not the tool's: none recorded.
		{audit.PhaseOutcome, "alice@example.com", "write", false, "INVALID_ARGUMENTS", nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit records of trigger_refund (-want +got):\n%s", diff)
	}
}

// A caller must not be able to make its own audit record unreadable: a
// refused call's amount 1e400 must not cost the record (the guard records
// opted-in fields only for valid arguments, and the reader keeps numbers a
// float64 cannot hold as json.Number).
func TestAuditSurvivesHostileNumbers(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startRaw(t, []string{"-audit", auditPath}, alice)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
	r := s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":1e400,"reason":"absurdly large amount"}}}`, true)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("amount 1e400: %+v, want -32602", r)
	}
	if err := s.finish(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	if evs := readAudit(t, auditPath, audit.Filter{}); len(evs) != 1 || evs[0].Code != "INVALID_ARGUMENTS" {
		t.Errorf("audit records %+v, want one INVALID_ARGUMENTS outcome", evs)
	}
}

// TestRawMalformedLine: a line that is not JSON is answered with -32700
// (id null) and the session goes on: the next request is served, stdout
// carries nothing but JSON-RPC, and the server exits 0 when stdin closes.
func TestRawMalformedLine(t *testing.T) {
	s := startRaw(t, nil, alice)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
	r := s.send(t, `{not json`, true)
	if r.Error == nil || r.Error.Code != -32700 || string(r.ID) != "null" {
		t.Errorf("malformed line: %+v, want error -32700 with id null", r)
	}
	if r := s.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, true); r.Error != nil || string(r.ID) != "2" {
		t.Errorf("ping after a malformed line: %+v, want a result", r)
	}
	if err := s.finish(t); err != nil {
		t.Errorf("exit after stdin closed: %v; stderr:\n%s", err, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "refused an input line") {
		t.Errorf("the malformed line is not logged on stderr:\n%s", s.stderr)
	}
}

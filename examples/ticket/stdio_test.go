package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

// TestMain removes the binary built for the stdio tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// ticketBinary builds the command once per test run.
func ticketBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "ticket-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "ticket")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("go build: %s", out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// connectStdio launches `ticket serve-stdio` with token tok ("" leaves the
// variable unset) and connects the go-sdk client to it.
func connectStdio(t *testing.T, tok, auditDir string, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(ticketBinary(t), "serve-stdio", "--audit-dir", auditDir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if tok != "" {
		cmd.Env = append(cmd.Env, tokenEnv+"="+tok)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	cs, err := cl.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, opts)
	if err != nil {
		t.Fatalf("connect: %v; stderr:\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

func TestStdioServer(t *testing.T) {
	search := &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}}
	docs := func(t *testing.T, cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), search)
		if c := toolCode(t, res, err); c != "" {
			t.Fatalf("search_docs: %s", c)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}

	t.Run("lists_tools_and_users_differ", func(t *testing.T) {
		dir := t.TempDir()
		alice, stderr := connectStdio(t, "token-alice", dir, nil)
		lt, err := alice.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range lt.Tools {
			names = append(names, tool.Name)
		}
		if diff := cmp.Diff([]string{"create_ticket", "list_tools", "search_docs"}, names); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		// No credential is a tool argument.
		for _, tool := range lt.Tools {
			if strings.Contains(strings.ToLower(toJSON(t, tool.InputSchema)), "token") {
				t.Errorf("%s takes a token argument", tool.Name)
			}
		}
		a := docs(t, alice)
		bob, _ := connectStdio(t, "token-bob", t.TempDir(), nil)
		b := docs(t, bob)
		if !strings.Contains(a, "eng-001") || strings.Contains(a, "sales-001") || !strings.Contains(b, "sales-001") || strings.Contains(b, "eng-001") {
			t.Errorf("alice saw %s\nbob saw %s", a, b)
		}
		bob.Close()

		res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_ticket", Arguments: ticketArgs()})
		if c := toolCode(t, res, err); c != "WRITE_NOT_ALLOWED" {
			t.Errorf("create_ticket: %q", c)
		}
		// A token in the arguments changes nothing: it is refused as an unknown field.
		res, err = alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": "", "token": "token-admin"}})
		if c := toolCode(t, res, err); c != "INVALID_ARGUMENTS" {
			t.Errorf("token argument: %q", c)
		}
		if err := alice.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		// The process's session is named; the trail holds it.
		evs, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{Phase: audit.PhaseOutcome})
		if err != nil {
			t.Fatalf("%v; stderr:\n%s", err, stderr)
		}
		if len(evs) != 3 {
			t.Fatalf("%d records, want 3; stderr:\n%s", len(evs), stderr)
		}
		for _, e := range evs {
			if !strings.HasPrefix(e.SessionID, "stdio-") || e.SessionID != evs[0].SessionID || e.Subject != "alice" {
				t.Errorf("record %+v: want alice in one stdio- session", e)
			}
		}
	})

	t.Run("missing_or_unknown_token_rejected", func(t *testing.T) {
		for _, tok := range []string{"", "token-mallory"} {
			dir := t.TempDir()
			cs, stderr := connectStdio(t, tok, dir, nil)
			res, err := cs.CallTool(t.Context(), search)
			if c := toolCode(t, res, err); c != "UNAUTHENTICATED" {
				t.Errorf("token %q: %q", tok, c)
			}
			cs.Close()
			// The refusal is in the trail under the process's session
			// (which a SessionKey, consulted only once a caller is
			// authenticated, would not give it).
			evs, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{Phase: audit.PhaseOutcome})
			if err != nil || len(evs) != 1 || evs[0].Code != "UNAUTHENTICATED" || !strings.HasPrefix(evs[0].SessionID, "stdio-") {
				t.Errorf("token %q: records %+v, %v; want one UNAUTHENTICATED refusal in a stdio- session; stderr:\n%s", tok, evs, err, stderr)
			}
		}
	})

	t.Run("protocol_2025_11_25", func(t *testing.T) {
		cs, _ := connectStdio(t, "token-alice", t.TempDir(), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		defer cs.Close()
		if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
			t.Errorf("negotiated %q", got)
		}
		if a := docs(t, cs); !strings.Contains(a, "eng-002") || strings.Contains(a, "sales-001") {
			t.Errorf("alice saw %s", a)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_ticket", Arguments: ticketArgs()})
		if c := toolCode(t, res, err); c != "WRITE_NOT_ALLOWED" {
			t.Errorf("create_ticket: %q", c)
		}
	})

	t.Run("rate_limit_per_process_session", func(t *testing.T) {
		cs, _ := connectStdio(t, "token-bob", t.TempDir(), nil)
		defer cs.Close()
		for i := 1; i <= 5; i++ {
			docs(t, cs)
		}
		res, err := cs.CallTool(t.Context(), search)
		if c := toolCode(t, res, err); c != "RATE_LIMIT_EXCEEDED" {
			t.Errorf("call 6: %q", c)
		}
	})
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

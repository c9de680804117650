package main

// Seed items of shared/seeds/mcp-starter-template.txt that had no test of
// their own: each test names the seed's sentence it demonstrates.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// TestReview14SpendDenialConsumesNoCalls: "Las llamadas denegadas no
// consumen presupuesto por sí mismas", for a call refused by the cost
// budget: it takes nothing from the call budget either.
func TestReview14SpendDenialConsumesNoCalls(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false }) // 5 calls, 10 units; a ticket costs 5
	for i := 1; i <= 2; i++ {
		if o := ta.call(t, "token-alice", "s", "create_ticket", ticketArgs()); o.code != "" || o.wire != nil {
			t.Fatalf("ticket %d: %+v", i, o)
		}
	}
	for i := 1; i <= 3; i++ {
		if o := ta.call(t, "token-alice", "s", "create_ticket", ticketArgs()); o.code != "SPEND_LIMIT_EXCEEDED" {
			t.Fatalf("ticket %d on an empty cost budget: %+v, want SPEND_LIMIT_EXCEEDED", i+2, o)
		}
	}
	// Two calls used, three refused: three of the five calls are left for
	// list_tools (cost 0), and the sixth call is refused by the call rate.
	for i := 3; i <= 5; i++ {
		if o := ta.call(t, "token-alice", "s", "list_tools", map[string]any{}); o.code != "" || o.wire != nil {
			t.Fatalf("call %d (list_tools) after three spend refusals: %+v, want allowed (a refused call counts nothing)", i, o)
		}
	}
	if o := ta.call(t, "token-alice", "s", "list_tools", map[string]any{}); o.code != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("call 6: %+v, want RATE_LIMIT_EXCEEDED", o)
	}
	if n := ta.tickets.Calls(); n != 2 {
		t.Errorf("ticket system called %d times, want 2", n)
	}
}

// TestReview14CostComesFromTheRegistry: "el coste de la herramienta
// proviene del registro": a tool's cost_units in server.yaml is what a call
// takes from cost_per_session.
func TestReview14CostComesFromTheRegistry(t *testing.T) {
	ta := newTestApp(t, func(c *config) {
		tc := c.Tools["search_docs"]
		tc.CostUnits = 4
		c.Tools["search_docs"] = tc
	}) // 10 units: two searches of 4, not a third
	search := map[string]any{"query": ""}
	for i := 1; i <= 2; i++ {
		docIDs(t, ta.call(t, "token-bob", "cost", "search_docs", search))
	}
	if o := ta.call(t, "token-bob", "cost", "search_docs", search); o.code != "SPEND_LIMIT_EXCEEDED" {
		t.Errorf("third search of 4 units on a 10-unit budget: %+v, want SPEND_LIMIT_EXCEEDED", o)
	}
	var costs []float64
	for _, e := range ta.events(t, audit.Filter{SessionID: restSessionID("cost", "bob"), Tool: "search_docs"}) {
		costs = append(costs, e.Cost)
	}
	if diff := cmp.Diff([]float64{4, 4, 0}, costs); diff != "" {
		t.Errorf("audited costs of the three searches (-want +got):\n%s", diff)
	}
}

// TestReview14StdioTokenSetButEmptyOrPadded: the seed's
// test_empty_string_token_is_rejected over stdio. TICKET_MCP_TOKEN set to
// "" is no identity, and a token with a blank around it is not the token:
// both are refused, never defaulted or trimmed into someone's identity.
func TestReview14StdioTokenSetButEmptyOrPadded(t *testing.T) {
	for _, tok := range []string{"", " token-alice", "token-alice\n"} {
		cmd := exec.Command(ticketBinary(t), "serve-stdio", "--audit-dir", t.TempDir())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tokenEnv + "=" + tok}
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
		cs, err := cl.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%s=%q: connect: %v; stderr:\n%s", tokenEnv, tok, err, stderr)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
		if c := toolCode(t, res, err); c != "UNAUTHENTICATED" {
			t.Errorf("%s=%q: search_docs answered %q, want UNAUTHENTICATED", tokenEnv, tok, c)
		}
		cs.Close()
	}
}

// TestReview14RegistryMismatchStopsEveryCommand: "un desajuste entre lo que
// el código declara y lo que dice la configuración impide el arranque", for
// every command of the binary, not only for newApp: each exits 1 naming the
// check, and serve-http never listens.
func TestReview14RegistryMismatchStopsEveryCommand(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(base), "create_ticket:\n    read_only: false", "create_ticket:\n    read_only: true", 1)
	if bad == string(base) {
		t.Fatal("server.yaml no longer has create_ticket's read_only: false where this test expects it")
	}
	path := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = `registry check failed: tool "create_ticket": code declares read_only: false`
	for _, args := range [][]string{
		{"--config", path, "tools"},
		{"--config", path, "demo"},
		{"--config", path, "serve-http", "--port", "0", "--audit-dir", t.TempDir()},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, and %q", args, code, out, errOut, want)
		}
	}
	// serve-stdio isolates the process's stdio first: the built binary.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ticketBinary(t), "--config", path, "serve-stdio", "--audit-dir", t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tokenEnv + "=token-alice"}
	stdin, err := cmd.StdinPipe() // held open: the refusal must not wait for it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), want) || stdout.String() != "" {
		t.Errorf("serve-stdio: %v, stdout %q, stderr %q; want exit 1 and %q", err, stdout.String(), stderr.String(), want)
	}
}

// TestReview14RegistryShowsWhatClientsSeeWithoutDescription: server.yaml's
// description is optional ("empty keeps the one in code"); the registry a
// reviewer reads (`tools`, GET /tools, list_tools) must then show the
// code's description too, the one tools/list gives clients and the model,
// not an empty one.
func TestReview14RegistryShowsWhatClientsSeeWithoutDescription(t *testing.T) {
	undescribed := func(c *config) {
		tc := c.Tools["search_docs"]
		tc.Description = ""
		c.Tools["search_docs"] = tc
	}
	ta := newTestApp(t, undescribed)
	ctx := context.WithValue(t.Context(), headerKey{}, http.Header{"Authorization": {"Bearer token-alice"}})
	cs, err := ta.rest.get(ctx, "list", "alice")
	if err != nil {
		t.Fatal(err)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed string
	for _, tool := range lt.Tools {
		if tool.Name == "search_docs" {
			listed = tool.Description
		}
	}
	if listed == "" {
		t.Fatal("tools/list: search_docs has no description (or is not listed)")
	}

	registryDesc := func(entries []registryEntry) string {
		for _, e := range entries {
			if e.Name == "search_docs" {
				return e.Description
			}
		}
		return "(not listed)"
	}
	// GET /tools
	if got := registryDesc(ta.cfg().registry()); got != listed {
		t.Errorf("GET /tools describes search_docs as %q, tools/list as %q", got, listed)
	}
	// list_tools
	o := ta.call(t, "token-alice", "list", "list_tools", map[string]any{})
	var entries []registryEntry
	if err := json.Unmarshal([]byte(toJSON(t, o.content["tools"])), &entries); err != nil {
		t.Fatal(err)
	}
	if got := registryDesc(entries); got != listed {
		t.Errorf("list_tools describes search_docs as %q, tools/list as %q", got, listed)
	}
	// ticket tools
	path := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(path, []byte(toYAML(t, testConfig(t, undescribed))), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "--config", path, "tools")
	if code != 0 {
		t.Fatalf("tools: exit %d: %s", code, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "search_docs") && !strings.HasSuffix(line, " "+listed) {
			t.Errorf("ticket tools line %q does not end with the description clients see, %q", line, listed)
		}
	}
}

// toYAML renders c as server.yaml.
func toYAML(t *testing.T, c *config) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

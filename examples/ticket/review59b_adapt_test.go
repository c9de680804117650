package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests adapt the template as its README tells a user to: a tool
// is added to tools() in code, with its class as the ReadOnlyHint
// annotation, and to server.yaml's tools section.

// pingDef is a tool a user adds; ann nil leaves its Annotations out.
func pingDef(ann *mcp.ToolAnnotations) *toolDef {
	return &toolDef{
		tool: &mcp.Tool{
			Name:        "ping",
			Description: "Answer pong (read-only).",
			InputSchema: map[string]any{"type": "object", "additionalProperties": false},
			Annotations: ann,
		},
		add: func(s *mcp.Server, t *mcp.Tool) {
			mcp.AddTool(s, t, func(context.Context, *mcp.CallToolRequest, listIn) (*mcp.CallToolResult, listIn, error) {
				return nil, listIn{}, nil
			})
		},
	}
}

// A tool added in code without Annotations has no class in code: the
// registry check refuses it, naming the tool (before, it dereferenced
// the nil Annotations and every command panicked).
func TestReview59bRegistryToolWithoutAnnotations(t *testing.T) {
	ro := true
	c := testConfig(t, func(c *config) {
		c.Tools["ping"] = toolConfig{ReadOnly: &ro, CostUnits: 1}
	})
	defs := append(tools(&TicketSystem{}, func() *config { return c }), pingDef(nil))
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("checkRegistry panicked on a tool without Annotations: %v", r)
			}
		}()
		err = checkRegistry("server.yaml", c, defs)
	}()
	if err == nil || !strings.Contains(err.Error(), `"ping"`) ||
		!strings.Contains(err.Error(), "ReadOnlyHint") {
		t.Fatalf("checkRegistry = %v, want an error naming ping and ReadOnlyHint", err)
	}
	// With the annotation it loads.
	defs[len(defs)-1] = pingDef(&mcp.ToolAnnotations{ReadOnlyHint: true})
	if err := checkRegistry("server.yaml", c, defs); err != nil {
		t.Fatal(err)
	}
}

// A tool added in code, with its description in code and none in
// server.yaml, keeps that description in tools/list, `tools`, GET /tools
// and list_tools, as the README says ("empty or missing means the one in
// code, in all four"). Before, only the three shipped tools had one: a
// new tool's was replaced by "" everywhere, the model told nothing. The
// binary is built with tools.go edited as a user would (go build -overlay).
func TestReview59bAddedToolKeepsCodeDescription(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	src, err := os.ReadFile("tools.go")
	if err != nil {
		t.Fatal(err)
	}
	anchor := "\t\t\tadd: func(s *mcp.Server, t *mcp.Tool) { mcp.AddTool(s, t, listTools(cfg)) },\n\t\t},\n"
	if !strings.Contains(string(src), anchor) {
		t.Fatal("tools.go: the list_tools entry is not where the test looks")
	}
	ping := anchor + `		{
			tool: &mcp.Tool{
				Name:        "ping",
				Description: "Answer pong (read-only).",
				InputSchema: map[string]any{"type": "object", "additionalProperties": false},
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			},
			add: func(s *mcp.Server, t *mcp.Tool) {
				mcp.AddTool(s, t, func(context.Context, *mcp.CallToolRequest, listIn) (*mcp.CallToolResult, listIn, error) {
					return nil, listIn{}, nil
				})
			},
		},
`
	dir := t.TempDir()
	edited := filepath.Join(dir, "tools.go")
	if err := os.WriteFile(edited, []byte(strings.Replace(string(src), anchor, ping, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("tools.go")
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: edited}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "mycopy")
	if out, err := exec.Command("go", "build", "-overlay", ov, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	yaml, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "server.yaml")
	yaml = append(yaml, "  ping:\n    read_only: true\n    cost_units: 1\n"...)
	if err := os.WriteFile(conf, yaml, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", conf, "tools").CombinedOutput()
	if err != nil {
		t.Fatalf("tools: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Answer pong (read-only).") {
		t.Errorf("`tools` lost the code's description of the added tool:\n%s", out)
	}

	// tools/list, over stdio.
	cmd := exec.Command(bin, "--config", conf, "serve-stdio", "--audit-dir", filepath.Join(dir, "audit"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TICKET_MCP_TOKEN=token-alice"}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range lt.Tools {
		if tl.Name == "ping" {
			found = true
			if tl.Description != "Answer pong (read-only)." {
				t.Errorf("tools/list gives ping the description %q, want the code's", tl.Description)
			}
		}
	}
	if !found {
		t.Error("tools/list has no ping")
	}
}

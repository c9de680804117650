package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview16ReadOnlyByDefaultOverHTTP: over stateless Streamable HTTP
// (protocol 2026-07-28: no session outlives its request, so no
// tools/list_changed ever reaches the guard), with a raw client. A write
// tool off the allowlist never runs; one annotated read-only stops
// Install. Tools changed after Install: a new one is unknown until the
// guard has checked it, and then a write off the allowlist is
// WRITE_NOT_ALLOWED, one whose annotation lies or that has no rule stays
// unknown and unlisted (to an admin too); a removed one is unknown and
// charged nothing; one re-added with another schema is held to the new one.
func TestReview16ReadOnlyByDefaultOverHTTP(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	var ran atomic.Int64
	run := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		return textResult("done"), nil
	}
	cfg := contractPolicy()
	cfg.Tools = append(cfg.Tools,
		policy.ToolRule{Name: "late_write", Class: policy.Write},
		policy.ToolRule{Name: "late_liar", Class: policy.Write},
	)
	cfg.WriteAllowlist = append(cfg.WriteAllowlist, "late_liar")

	t.Run("lying_annotation_stops_install", func(t *testing.T) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "late_liar", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, run)
		pol, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		g, err := mcpguard.New(pol, r16Tokens(), &mcpguard.Options{Confirmer: testSigner(t, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Install(srv); err == nil || !strings.Contains(err.Error(), "late_liar") {
			t.Errorf("Install with a write annotated read-only: %v, want an error naming it", err)
		}
	})

	s := newR16Server(t, r16New, contractTools(newSlowGate()), cfg, &mcpguard.Options{Limiter: contractLimiter(t)})
	s.srv.AddTool(&mcp.Tool{Name: "delete_all", InputSchema: obj}, run) // replaces the harness's, counted here
	bob, alice := s.connect(t, r16New, "bob-token"), s.connect(t, r16New, "alice-token")
	code := func(a *rawAnswer) string {
		t.Helper()
		if a.msg.Error != nil && strings.HasPrefix(a.msg.Error.Message, "unknown tool ") {
			return string(mcpguard.CodeToolNotFound)
		}
		c, _, _ := a.denial(t)
		return c
	}
	listed := func(c *rawClient) map[string]bool {
		t.Helper()
		a := c.post("tools/list", map[string]any{}, nil)
		var lr struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal(a.msg.Result, &lr); err != nil {
			t.Fatalf("tools/list: %s", a)
		}
		out := map[string]bool{}
		for _, tl := range lr.Tools {
			out[tl.Name] = true
		}
		return out
	}

	time.Sleep(relistWait) // delete_all's replacement is checked
	if got := code(bob.callTool("delete_all", map[string]any{}, nil)); got != string(mcpguard.CodeWriteNotAllowed) || ran.Load() != 0 {
		t.Fatalf("a write off the allowlist: %q, ran %d times; want WRITE_NOT_ALLOWED, never run", got, ran.Load())
	}

	s.srv.AddTool(&mcp.Tool{Name: "late_write", InputSchema: obj}, run)
	s.srv.AddTool(&mcp.Tool{Name: "late_liar", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, run)
	s.srv.AddTool(&mcp.Tool{Name: "late_norule", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, run)
	s.srv.RemoveTools("echo")
	s.srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, run)

	// Before the guard has listed them again.
	args := func(name string) map[string]any {
		if name == "echo" {
			return map[string]any{"text": "hi"}
		}
		return map[string]any{}
	}
	for _, name := range []string{"late_write", "late_liar", "late_norule", "echo"} {
		if got := code(alice.callTool(name, args(name), nil)); got != string(mcpguard.CodeToolNotFound) {
			t.Errorf("%s at once: %q, want TOOL_NOT_FOUND", name, got)
		}
	}
	if ran.Load() != 0 {
		t.Fatalf("a tool changed after Install ran %d times before it was checked", ran.Load())
	}
	time.Sleep(relistWait)
	for name, want := range map[string]mcpguard.Code{
		"late_write":  mcpguard.CodeWriteNotAllowed,
		"late_liar":   mcpguard.CodeToolNotFound,
		"late_norule": mcpguard.CodeToolNotFound,
		"echo":        mcpguard.CodeToolNotFound,
	} {
		if got := code(alice.callTool(name, args(name), nil)); got != string(want) {
			t.Errorf("%s once checked: %q, want %s", name, got, want)
		}
	}
	if ran.Load() != 0 {
		t.Fatalf("ran %d times", ran.Load())
	}
	if got := code(alice.callTool("whoami", map[string]any{"n": 5}, nil)); got != string(mcpguard.CodeInvalidArguments) {
		t.Errorf("whoami against its new schema: %q, want INVALID_ARGUMENTS", got)
	}
	mustSucceed(t, alice.callTool("whoami", map[string]any{"n": 2}, nil))
	l := listed(alice)
	for _, name := range []string{"late_liar", "late_norule", "echo"} {
		if l[name] {
			t.Errorf("%s is listed to the admin", name)
		}
	}
	if !l["late_write"] || !l["whoami"] {
		t.Errorf("listing %v lacks late_write or whoami", l)
	}
	for _, e := range s.sink.all() {
		if (e.Tool == "echo" || e.Tool == "late_liar" || e.Tool == "late_norule") && (e.Allowed || e.Cost != 0) {
			t.Errorf("record %+v: want refused, charged nothing", e)
		}
	}
}

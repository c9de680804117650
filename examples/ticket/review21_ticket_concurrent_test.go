package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review21Burst makes n calls of name at once on cs and counts the answers
// by error code ("" for success).
func review21Burst(t *testing.T, cs *mcp.ClientSession, n int, name string, args func(i int) map[string]any) map[string]int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[string]int{}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args(i)})
			code := "PROTOCOL_ERROR"
			if err == nil {
				code = ""
				if res.IsError {
					e, _ := res.StructuredContent.(map[string]any)["error"].(map[string]any)
					code, _ = e["code"].(string)
				}
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

func review21Search(int) map[string]any { return map[string]any{"query": ""} }

// A model firing calls at once in one session gets no more than the
// session's budgets: over /mcp, 30 searches at once are 5 answers and 25
// RATE_LIMIT_EXCEEDED, and 20 real tickets at once (5 units each, 10 per
// session) create exactly 2; every call has one outcome record.
func TestReview21ConcurrentCallsOverMCPKeepTheBudgets(t *testing.T) {
	t.Run("calls", func(t *testing.T) {
		ta := newTestApp(t, nil)
		cs := connectHTTP(t, startHTTP(t, ta), "token-alice")
		got := review21Burst(t, cs, 30, "search_docs", review21Search)
		if diff := cmp.Diff(map[string]int{"": 5, "RATE_LIMIT_EXCEEDED": 25}, got); diff != "" {
			t.Errorf("30 searches at once (-want +got):\n%s", diff)
		}
		if evs := ta.events(t, audit.Filter{SessionID: cs.ID()}); len(evs) != 30 {
			t.Errorf("%d outcome records in session %s, want 30", len(evs), cs.ID())
		}
	})
	t.Run("cost", func(t *testing.T) {
		ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false; c.RateLimit.CallsPerMin = 100 })
		cs := connectHTTP(t, startHTTP(t, ta), "token-alice")
		got := review21Burst(t, cs, 20, "create_ticket", func(i int) map[string]any {
			return map[string]any{"title": fmt.Sprint("ticket ", i), "body": ""}
		})
		if diff := cmp.Diff(map[string]int{"": 2, "SPEND_LIMIT_EXCEEDED": 18}, got); diff != "" {
			t.Errorf("20 tickets at once (-want +got):\n%s", diff)
		}
		if n := len(ta.tickets.Created()); n != 2 {
			t.Errorf("%d tickets created, want 2", n)
		}
		no := false
		if evs := ta.events(t, audit.Filter{SessionID: cs.ID(), Allowed: &no}); len(evs) != 18 {
			t.Errorf("%d denial records, want 18", len(evs))
		}
	})
}

// The same over stdio, the built binary driven by the go-sdk client: the
// process's one session has 5 calls, however many come at once, and a
// model cannot turn the configuration's dry run off from _meta.
func TestReview21ConcurrentCallsOverStdioKeepTheBudgets(t *testing.T) {
	dir := t.TempDir()
	cfg := configFile(t, "allowed_write_tools: []", "allowed_write_tools: [create_ticket]")
	cmd := exec.Command(ticketBinary(t), "--config", cfg, "serve-stdio", "--audit-dir", dir)
	cmd.Env = []string{tokenEnv + "=token-bob"}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "model", Version: "v1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr:\n%s", err, stderr)
	}
	defer cs.Close()

	var metas []mcp.Meta
	for _, v := range []any{false, "false", 0, nil} {
		metas = append(metas, mcp.Meta{"io.mcpguard/dryRun": v}, mcp.Meta{"IO.MCPGUARD/DRYRUN": v})
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[string]int{}
		real  []string
	)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}}
			if i < len(metas) {
				p = &mcp.CallToolParams{Name: "create_ticket", Meta: metas[i], Arguments: map[string]any{"title": "t", "body": ""}}
			}
			res, err := cs.CallTool(t.Context(), p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				codes["PROTOCOL_ERROR"]++
				return
			}
			if !res.IsError {
				codes[""]++
				if m, _ := res.StructuredContent.(map[string]any); p.Name == "create_ticket" && m["dry_run"] != true {
					real = append(real, fmt.Sprintf("%v: %v", p.Meta, m))
				}
				return
			}
			e, _ := res.StructuredContent.(map[string]any)["error"].(map[string]any)
			c, _ := e["code"].(string)
			codes[c]++
		}()
	}
	wg.Wait()
	if diff := cmp.Diff(map[string]int{"": 5, "RATE_LIMIT_EXCEEDED": 19}, codes); diff != "" {
		t.Errorf("24 calls at once (-want +got):\n%s", diff)
	}
	if len(real) > 0 {
		t.Errorf("a _meta turned the configured dry run off: %v", real)
	}
	cs.Close()
	evs, err := audit.QueryJSONL(filepath.Join(dir, "audit.jsonl"), audit.Filter{Phase: audit.PhaseOutcome})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 24 {
		t.Errorf("%d outcome records, want 24", len(evs))
	}
	for _, e := range evs {
		if e.Tool == "create_ticket" && e.Allowed && !e.DryRun {
			t.Errorf("a real create_ticket was recorded: %+v", e)
		}
	}
}

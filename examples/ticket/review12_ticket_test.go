package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listed decodes a list_tools result's structured content.
func listed(t *testing.T, content any) []registryEntry {
	t.Helper()
	var out struct {
		Tools []registryEntry `json:"tools"`
	}
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("list_tools result %s: %v", raw, err)
	}
	return out.Tools
}

// TestReview12ListToolsOverStdio: the seed's stdio server has a
// list_tools() tool showing the whole registry, writes included with their
// classification and whether allowed_write_tools enables them. Over the
// real stdio server it is listed (read-only, with an output schema) and
// answers the registry of GET /tools; without an identity it is refused
// like every other tool and the refusal shows nothing of the registry.
func TestReview12ListToolsOverStdio(t *testing.T) {
	dir := t.TempDir()
	alice, stderr := connectStdio(t, "token-alice", dir, nil)
	lt, err := alice.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tool *mcp.Tool
	for _, x := range lt.Tools {
		if x.Name == "list_tools" {
			tool = x
		}
	}
	if tool == nil {
		t.Fatalf("tools/list has no list_tools: %s", toJSON(t, lt.Tools))
	}
	if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.OutputSchema == nil {
		t.Errorf("list_tools: annotations %+v, output schema %v; want read-only with an output schema", tool.Annotations, tool.OutputSchema)
	}
	res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_tools", Arguments: map[string]any{}})
	if c := toolCode(t, res, err); c != "" {
		t.Fatalf("list_tools: %s", c)
	}
	if diff := cmp.Diff(testConfig(t, nil).registry(), listed(t, res.StructuredContent)); diff != "" {
		t.Errorf("list_tools (-want +got):\n%s", diff)
	}
	// An argument is refused: the tool takes none (and no credential).
	res, err = alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_tools", Arguments: map[string]any{"token": "token-admin"}})
	if c := toolCode(t, res, err); c != "INVALID_ARGUMENTS" {
		t.Errorf("list_tools with a token argument: %q, want INVALID_ARGUMENTS", c)
	}
	alice.Close()
	evs, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{Tool: "list_tools", Phase: audit.PhaseOutcome})
	if err != nil || len(evs) != 2 || !evs[0].Allowed || evs[0].Class != "read" || evs[0].Subject != "alice" || evs[1].Code != "INVALID_ARGUMENTS" {
		t.Errorf("list_tools records %+v, %v; want alice's allowed read, then the refusal; stderr:\n%s", rows(evs), err, stderr)
	}

	anon, _ := connectStdio(t, "", t.TempDir(), nil)
	res, err = anon.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_tools", Arguments: map[string]any{}})
	if c := toolCode(t, res, err); c != "UNAUTHENTICATED" {
		t.Errorf("list_tools without TICKET_MCP_TOKEN: %q, want UNAUTHENTICATED", c)
	}
	if s := toJSON(t, res); strings.Contains(s, "create_ticket") || strings.Contains(s, "cost_units") {
		t.Errorf("the refusal shows the registry: %s", s)
	}
}

// TestReview12ListToolsOverREST: REST exposes tools generically, so
// list_tools is POST /tools/list_tools/call: the same registry as GET
// /tools, enabled following allowed_write_tools, and 401 without a token.
func TestReview12ListToolsOverREST(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allow_writes_", allow), func(t *testing.T) {
			var mutate func(*config)
			if allow {
				mutate = allowWrites
			}
			ta := newTestApp(t, mutate)
			base := startHTTP(t, ta)
			r := restPost(t, base, "list_tools", "token-bob", "lt", `{"arguments": {}}`)
			if r.status != http.StatusOK {
				t.Fatalf("list_tools: %d %v", r.status, r.body)
			}
			want := ta.cfg().registry()
			if diff := cmp.Diff(want, listed(t, r.body["result"])); diff != "" {
				t.Errorf("list_tools (-want +got):\n%s", diff)
			}
			for _, e := range want {
				if e.Name == "create_ticket" && e.Enabled != allow {
					t.Errorf("create_ticket enabled = %v with allow_writes %v", e.Enabled, allow)
				}
			}
			resp, err := http.Get(base + "/tools")
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Tools []registryEntry `json:"tools"`
			}
			err = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			if diff := cmp.Diff(want, got.Tools); err != nil || diff != "" {
				t.Errorf("GET /tools and list_tools differ (%v) (-list_tools +GET):\n%s", err, diff)
			}
			if r := restPost(t, base, "list_tools", "", "lt", `{"arguments": {}}`); r.status != http.StatusUnauthorized || r.body["result"] != nil {
				t.Errorf("list_tools without a token: %d %v, want 401", r.status, r.body)
			}
		})
	}
}

// TestReview12RESTSessionNameIsNotTakenOverByEviction: at most
// maxRESTSessions REST sessions are kept; the oldest is closed beyond
// that. A caller who opens that many sessions evicts another caller's
// session, and must not then be able to use its name to spend its budget,
// write records under its id, or lock its owner out.
func TestReview12RESTSessionNameIsNotTakenOverByEviction(t *testing.T) {
	ta := newTestApp(t, nil) // 5 calls per session and window
	// The REST routes over ta.rest, so that the test can fill it.
	srv := httptest.NewServer(httpHandler(ta.app, ta.rest, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	base := srv.URL
	const search = `{"arguments": {"query": ""}}`
	if r := restPost(t, base, "search_docs", "token-bob", "victim", search); r.status != http.StatusOK {
		t.Fatalf("bob's first call: %d %v", r.status, r.body)
	}
	ctx := context.Background()
	for i := range maxRESTSessions {
		if _, err := ta.rest.get(ctx, fmt.Sprint("fill-", i), "alice"); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 5; i++ {
		if r := restPost(t, base, "search_docs", "token-alice", "victim", search); r.status != http.StatusOK {
			t.Fatalf("alice's call %d naming bob's session: %d %v; want her own session's budget", i, r.status, r.body)
		}
	}
	for i := 2; i <= 5; i++ {
		if r := restPost(t, base, "search_docs", "token-bob", "victim", search); r.status != http.StatusOK {
			t.Fatalf("bob's call %d in his session: %d %v", i, r.status, r.body)
		}
	}
	if r := restPost(t, base, "search_docs", "token-bob", "victim", search); r.status != http.StatusTooManyRequests {
		t.Errorf("bob's sixth call: %d %v, want 429 (his budget, kept across the eviction)", r.status, r.body)
	}
	bobs := map[string]bool{}
	for _, e := range ta.events(t, audit.Filter{Subject: "bob"}) {
		bobs[e.SessionID] = true
	}
	for _, e := range ta.events(t, audit.Filter{Subject: "alice"}) {
		if bobs[e.SessionID] {
			t.Errorf("alice's call recorded in bob's session %s: %+v", e.SessionID, e)
		}
	}
	if len(bobs) != 1 {
		t.Errorf("bob's records are in sessions %v, want one", bobs)
	}
}

// TestReview12REST404IsARefusalLikeTheOthers: every other REST refusal
// has the {"error": {...}} body, a correlation id and an outcome record
// naming it; so do an unknown tool and an unknown route.
func TestReview12REST404IsARefusalLikeTheOthers(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	send := func(method, path, tok string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{"arguments": {}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", "nf")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("%s %s: %d, body not JSON: %q", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, body
	}
	for _, c := range []struct {
		name, method, path, tok, subject, tool string
	}{
		{"unknown_tool", http.MethodPost, "/tools/drop_tables/call", "token-alice", "alice", "drop_tables"},
		{"unknown_route", http.MethodGet, "/admin", "token-alice", "alice", ""},
		{"unknown_route_no_token", http.MethodGet, "/admin", "", "", ""},
		{"call_without_call", http.MethodPost, "/tools/search_docs", "token-bob", "bob", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := send(c.method, c.path, c.tok)
			e, _ := body["error"].(map[string]any)
			corr, _ := e["correlation_id"].(string)
			if status != http.StatusNotFound || e["code"] != "TOOL_NOT_FOUND" || corr == "" {
				t.Fatalf("%d %v, want 404 TOOL_NOT_FOUND with a correlation id", status, body)
			}
			evs := ta.events(t, audit.Filter{CorrelationID: corr})
			if len(evs) != 1 || evs[0].Allowed || evs[0].Code != "TOOL_NOT_FOUND" || evs[0].Subject != c.subject || evs[0].Tool != c.tool {
				t.Errorf("records %+v, want one TOOL_NOT_FOUND refusal of %q, tool %q", evs, c.subject, c.tool)
			}
		})
	}
	// One record per unknown tool call, not one from the REST adapter and
	// one from the guard.
	if evs := ta.events(t, audit.Filter{Tool: "drop_tables"}); len(evs) != 1 {
		t.Errorf("%d records of the unknown tool call, want 1: %+v", len(evs), rows(evs))
	}
	// Authentication still comes first for a tool call, and a known route
	// with another method is still 405.
	if status, body := send(http.MethodPost, "/tools/drop_tables/call", ""); status != http.StatusUnauthorized {
		t.Errorf("unknown tool without a token: %d %v, want 401", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/tools/search_docs/call", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" {
		t.Errorf("GET of the call route: %d, Allow %q; want 405", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

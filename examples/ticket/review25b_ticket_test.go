package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview25bCrossSiteRequestsAreRefused: a web page the user visits may
// send requests to the server on 127.0.0.1 without a preflight (a text/plain
// POST, an <img> GET) under the server's own Host, which the DNS rebinding
// check lets through. The MCP transport asks servers to validate Origin.
// Before, such a page got every request through to the REST handler, which
// wrote a refusal record to both audit files per request (UNAUTHENTICATED
// create_ticket, TOOL_NOT_FOUND), as many as the page liked. Now a request a
// browser marks as coming from another origin (Sec-Fetch-Site cross-site or
// same-site, or an Origin that is not the server's) is refused 403 before
// any handler, with no record; same-origin requests, a URL typed in the
// address bar (Sec-Fetch-Site none) and clients that send neither header are
// served.
func TestReview25bCrossSiteRequestsAreRefused(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	send := func(method, path, body string, hdr http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range hdr {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	records := func() int {
		t.Helper()
		return len(ta.events(t, audit.Filter{}))
	}
	const evil = "https://evil.example"
	for _, c := range []struct {
		name, method, path string
		hdr                http.Header
	}{
		{"text_plain_post", "POST", "/tools/create_ticket/call", http.Header{"Content-Type": {"text/plain"}, "Origin": {evil}, "Sec-Fetch-Site": {"cross-site"}}},
		{"origin_only", "POST", "/tools/create_ticket/call", http.Header{"Content-Type": {"text/plain"}, "Origin": {evil}}},
		{"null_origin", "POST", "/tools/search_docs/call", http.Header{"Content-Type": {"text/plain"}, "Origin": {"null"}}},
		{"two_origins", "POST", "/tools/search_docs/call", http.Header{"Content-Type": {"text/plain"}, "Origin": {base, evil}}},
		{"img_get", "GET", "/pixel.png", http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		{"same_site_other_port", "GET", "/tools", http.Header{"Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"same-site"}}},
		{"mcp_post", "POST", "/mcp", http.Header{"Content-Type": {"text/plain"}, "Origin": {evil}, "Sec-Fetch-Site": {"cross-site"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := records()
			if status, body := send(c.method, c.path, `{"arguments":{"title":"x","body":"y"}}`, c.hdr); status != http.StatusForbidden {
				t.Errorf("%s %s %v: status %d (%s), want 403", c.method, c.path, c.hdr, status, body)
			}
			if n := records() - before; n != 0 {
				t.Errorf("%d audit records written for a request of another origin, want none", n)
			}
		})
	}
	// base is "http://127.0.0.1:PORT": the origin of a page the server itself would serve.
	for _, c := range []struct {
		name string
		hdr  http.Header
	}{
		{"no_browser_headers", http.Header{}},
		{"same_origin", http.Header{"Origin": {base}, "Sec-Fetch-Site": {"same-origin"}}},
		{"address_bar", http.Header{"Sec-Fetch-Site": {"none"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, _ := send("GET", "/tools", "", c.hdr); status != http.StatusOK {
				t.Errorf("GET /tools with %v: status %d, want 200", c.hdr, status)
			}
			c.hdr.Set("Authorization", "Bearer token-alice")
			c.hdr.Set("X-Session-Id", "xs-"+c.name)
			c.hdr.Set("Content-Type", "application/json")
			if status, body := send("POST", "/tools/search_docs/call", `{"arguments":{"query":""}}`, c.hdr); status != http.StatusOK {
				t.Errorf("search_docs with %v: status %d (%s), want 200", c.hdr, status, body)
			}
		})
	}
}

// TestReview25bAuditFilesAgreeOnEveryDecision: the two audit files hold the
// same records, field for field, for every kind of decision the server
// makes, over REST and /mcp: an allowed read, the refusals decided before
// the guard (no token, unknown tool, no X-Session-Id, a bad body, no route)
// and by it (invalid arguments, a token argument, the call rate, unknown
// tool over MCP, an anonymous MCP call), and writes: dry runs, and real
// ones with their intent records.
func TestReview25bAuditFilesAgreeOnEveryDecision(t *testing.T) {
	for _, dryRun := range []bool{true, false} {
		t.Run(fmt.Sprintf("dry_run_%v", dryRun), func(t *testing.T) { checkAuditFilesAgree(t, dryRun) })
	}
}

// checkAuditFilesAgree makes the calls of
// TestReview25bAuditFilesAgreeOnEveryDecision with create_ticket
// allowlisted and dry_run as given, and compares the audit files.
func checkAuditFilesAgree(t *testing.T, dryRun bool) {
	ta := newTestApp(t, func(c *config) {
		c.AllowedWriteTools = []string{"create_ticket"}
		c.DryRun = dryRun
	})
	base := startHTTP(t, ta)
	search := `{"arguments": {"query": ""}}`
	restPost(t, base, "search_docs", "token-alice", "s1", search)
	restPost(t, base, "search_docs", "", "s1", search)
	restPost(t, base, "nope", "token-alice", "s1", search)
	restPost(t, base, "search_docs", "token-alice", "", search)
	restPost(t, base, "search_docs", "token-alice", "s1", `{"x":1}`)
	restPost(t, base, "search_docs", "token-alice", "s1", `{"arguments":{"query":1}}`)
	restPost(t, base, "create_ticket", "token-bob", "s2", `{"arguments":{"title":"t","body":"b"}}`)
	for range 6 {
		restPost(t, base, "search_docs", "token-bob", "s3", search)
	}
	resp, err := http.Get(base + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	admin := connectHTTP(t, base, "token-admin")
	for _, p := range []*mcp.CallToolParams{
		{Name: "create_ticket", Arguments: map[string]any{"title": "a", "body": "b"}},
		{Name: "list_tools", Arguments: map[string]any{}},
		{Name: "search_docs", Arguments: map[string]any{"query": "x", "token": "token-bob"}},
	} {
		if _, err := admin.CallTool(t.Context(), p); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
	}
	if _, err := admin.CallTool(t.Context(), &mcp.CallToolParams{Name: "ghost", Arguments: map[string]any{}}); err == nil {
		t.Fatal("unknown tool over MCP answered")
	}
	anon := connectHTTP(t, base, "")
	if _, err := anon.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}}); err != nil {
		t.Fatal(err)
	}
	if err := ta.sqlSink.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	fromSQL, err := ta.sqlSink.Query(context.Background(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ta.flush(); err != nil {
		t.Fatal(err)
	}
	fromJSONL, err := audit.QueryJSONL(filepath.Join(ta.dir, auditJSONL), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, evs := range [][]audit.Event{fromSQL, fromJSONL} {
		sort.Slice(evs, func(i, j int) bool {
			if evs[i].CorrelationID != evs[j].CorrelationID {
				return evs[i].CorrelationID < evs[j].CorrelationID
			}
			return evs[i].Phase < evs[j].Phase
		})
	}
	// 19 calls, each one outcome, and each real write (not a dry run) an
	// intent.
	intents := 2
	if dryRun {
		intents = 0
	}
	if len(fromJSONL) != 19+intents {
		t.Errorf("%d records in %s, want %d", len(fromJSONL), auditJSONL, 19+intents)
	}
	if diff := cmp.Diff(fromJSONL, fromSQL, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s and audit_log disagree (-jsonl +sqlite):\n%s", auditJSONL, diff)
	}
	codes := map[string]int{}
	dryRuns := 0
	for _, e := range fromJSONL {
		codes[string(e.Phase)+" "+e.Code]++
		if e.DryRun {
			dryRuns++
		}
	}
	if want := map[bool]int{true: 2, false: 0}[dryRun]; dryRuns != want {
		t.Errorf("%d dry-run records, want %d", dryRuns, want)
	}
	want := map[string]int{
		"outcome ":                    9, // alice's read, bob's write, bob's 5 reads, admin's write and list_tools
		"intent ":                     2,
		"outcome UNAUTHENTICATED":     2,
		"outcome TOOL_NOT_FOUND":      3,
		"outcome INVALID_ARGUMENTS":   4, // no X-Session-Id, a bad body, a wrong type, a token argument
		"outcome RATE_LIMIT_EXCEEDED": 1,
	}
	if dryRun {
		delete(want, "intent ")
	}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("records by phase and code (-want +got):\n%s", diff)
	}
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64nRESTRefusalRecordsLikeTheGuards: the same malformed call of
// a known tool by an authenticated caller (arguments that are not an
// object) is refused INVALID_ARGUMENTS over /mcp by the guard and over
// REST by the body check before it. The README calls the latter "refusals
// like the guard's", but the guard's record says the tool's class (write
// for create_ticket, read for search_docs) and, for a write that would
// have been a dry run, dry_run true, where the REST one said no class and
// dry_run false, in both audit files: a query of the write attempts by
// class (class = 'write'), or of the dry runs, missed every REST attempt
// refused before the guard (a bad body, a bad X-Session-Id). A refusal
// before authentication, or of an unknown tool, has no class on either
// side.
func TestReview64nRESTRefusalRecordsLikeTheGuards(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("dry_run_%v", dryRun), func(t *testing.T) { checkRESTRefusalRecords(t, dryRun) })
	}
}

func checkRESTRefusalRecords(t *testing.T, dryRun bool) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = dryRun })
	base := startHTTP(t, ta)
	cs := connectHTTP(t, base, "token-alice")
	for _, tool := range []string{"create_ticket", "search_docs"} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: []any{}})
		if c := toolCode(t, res, err); c != "INVALID_ARGUMENTS" {
			t.Fatalf("MCP %s with arguments []: %q, want INVALID_ARGUMENTS", tool, c)
		}
		if r := restPost(t, base, tool, "token-alice", "s-"+tool, `{"arguments":[]}`); r.code() != "INVALID_ARGUMENTS" {
			t.Fatalf("REST %s with arguments []: %d %s, want 400 INVALID_ARGUMENTS", tool, r.status, r.code())
		}
		if r := restPost(t, base, tool, "token-alice", "", `{"arguments":{}}`); r.code() != "INVALID_ARGUMENTS" {
			t.Fatalf("REST %s without X-Session-Id: %d %s, want 400 INVALID_ARGUMENTS", tool, r.status, r.code())
		}
	}
	// Refusals with no class on either side: no token, an unknown tool.
	restPost(t, base, "create_ticket", "", "s", `{"arguments":{}}`)
	restPost(t, base, "nope", "token-alice", "s", `{"arguments":{}}`)

	if err := ta.flush(); err != nil {
		t.Fatal(err)
	}
	fromJSONL, err := audit.QueryJSONL(filepath.Join(ta.dir, auditJSONL), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	fromSQL, err := ta.query(context.Background(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	class := map[string]string{"create_ticket": "write", "search_docs": "read"}
	for file, evs := range map[string][]audit.Event{auditJSONL: fromJSONL, "audit_log": fromSQL} {
		n := 0
		for _, e := range evs {
			if e.Code != "INVALID_ARGUMENTS" && e.Code != "UNAUTHENTICATED" && e.Code != "TOOL_NOT_FOUND" {
				continue
			}
			n++
			transport := "MCP"
			if e.SessionID == "" || strings.HasPrefix(e.SessionID, "rest-") {
				transport = "REST"
			}
			wantClass, wantDry := class[e.Tool], dryRun && e.Tool == "create_ticket"
			if e.Code != "INVALID_ARGUMENTS" {
				wantClass, wantDry = "", false
			}
			if e.Class != wantClass || e.DryRun != wantDry {
				t.Errorf("%s: %s %s %s record (session %q): class %q dry_run %v, want %q %v (as the guard's)",
					file, transport, e.Tool, e.Code, e.SessionID, e.Class, e.DryRun, wantClass, wantDry)
			}
		}
		if n != 8 {
			t.Errorf("%s: %d refusal records, want 8: %v", file, n, rows(evs))
		}
	}
}

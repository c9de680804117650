package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65cRESTToolOwnErrorIsNotInternal: a tool's own error result
// (isError, the seed's "nothing found" kind of answer, which the guard
// allows and records as "tool reported an error") was answered over REST
// 500 INTERNAL "the tool failed", with no correlation id and without the
// tool's message, which an /mcp client gets. The README keeps INTERNAL for
// "the server failed" and 500 without a correlation id for "when the call
// itself could not be made"; here it was made, allowed and answered. Now
// it is a client error (422) carrying the tool's text and structured
// result. A handler that fails (a Go error) is still the guard's INTERNAL,
// 500, with the correlation id of its record.
func TestReview65cRESTToolOwnErrorIsNotInternal(t *testing.T) {
	ta := newTestApp(t, nil)
	// search_docs as a template user might write it: "not found" is a
	// tool error, a backend failure a Go error.
	var tool *mcp.Tool
	for _, d := range tools(nil, nil) {
		if d.tool.Name == "search_docs" {
			tool = d.tool
		}
	}
	mcp.AddTool(ta.server, tool, func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
		if in.Query == "fail" {
			return nil, searchOut{}, errors.New("the docs index is down")
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no document matches " + in.Query}}},
			searchOut{Results: []docResult{}}, nil
	})
	base := startHTTP(t, ta)

	cs := connectHTTP(t, base, "token-alice")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": "zzz"}})
	if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "no document matches zzz" {
		t.Fatalf("over /mcp: %v %+v", err, res)
	}

	r := restPost(t, base, "search_docs", "token-alice", "s1", `{"arguments":{"query":"zzz"}}`)
	if r.status >= 500 || r.status < 400 || r.code() == "INTERNAL" {
		t.Errorf("a tool's own error over REST: %d %v, want a 4xx that is not INTERNAL", r.status, r.body)
	}
	if !strings.Contains(toJSON(t, r.body), "no document matches zzz") {
		t.Errorf("the tool's message is not in the REST answer: %v", r.body)
	}
	evs := ta.events(t, audit.Filter{SessionID: restSessionID("s1", "alice")})
	if len(evs) != 1 || !evs[0].Allowed || evs[0].Code != "" || evs[0].Detail != "tool reported an error" {
		t.Fatalf("the REST call's record: %+v", evs)
	}

	r = restPost(t, base, "search_docs", "token-alice", "s1", `{"arguments":{"query":"fail"}}`)
	e, _ := r.body["error"].(map[string]any)
	if r.status != 500 || r.code() != "INTERNAL" || e["correlation_id"] == nil {
		t.Errorf("a failed handler over REST: %d %v, want 500 INTERNAL with a correlation id", r.status, r.body)
	}
}

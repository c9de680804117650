package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// companyWide is the team of documents every caller sees.
const companyWide = "all"

// doc is one document of the static corpus.
type doc struct {
	ID    string `json:"id"`
	Team  string `json:"team"`
	Title string `json:"title"`
	Body  string `json:"snippet"`
}

// corpus is the small in-memory corpus search_docs reads.
func corpus() []doc {
	return []doc{
		{"eng-001", "engineering", "Deploy runbook", "How to deploy the API: build, canary, promote."},
		{"eng-002", "engineering", "On-call guide", "Paging policy and escalation for the API on-call."},
		{"sales-001", "sales", "Q3 pricing", "Discount bands for enterprise deals this quarter."},
		{"sales-002", "sales", "Pipeline review", "How deals move between pipeline stages."},
		{"all-001", companyWide, "Employee handbook", "Company-wide policies: leave, expenses, security."},
	}
}

// devTokens is the development-only static token table: never use it in
// production. Each principal's team is an attribute; admin has the admin role.
func devTokens() (*token.Table, error) {
	return token.New(map[string]*policy.Principal{
		"token-alice": {Subject: "alice", Roles: []string{"engineering"}, Attrs: map[string]string{"team": "engineering"}},
		"token-bob":   {Subject: "bob", Roles: []string{"sales"}, Attrs: map[string]string{"team": "sales"}},
		"token-admin": {Subject: "admin", Roles: []string{"engineering", "admin"}, Attrs: map[string]string{"team": "engineering"}},
	})
}

// ticket is one ticket created in the downstream system.
type ticket struct {
	ID      string
	Title   string
	Body    string
	Creator string
}

// TicketSystem stands in for the downstream ticket API. It records what was
// created, so tests can assert it was (or was never) called. Safe for
// concurrent use.
type TicketSystem struct {
	mu      sync.Mutex
	created []ticket
	calls   int
}

// Create creates a ticket as creator and returns its id.
func (s *TicketSystem) Create(_ context.Context, creator, title, body string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	id := fmt.Sprintf("TICKET-%04d", len(s.created)+1)
	s.created = append(s.created, ticket{ID: id, Title: title, Body: body, Creator: creator})
	return id, nil
}

// Created returns the tickets created so far.
func (s *TicketSystem) Created() []ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ticket(nil), s.created...)
}

// Calls returns how many times Create was called.
func (s *TicketSystem) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Tool arguments and results. The guard validates arguments against the
// input schemas below before a handler runs.
type (
	searchIn struct {
		Query string `json:"query"`
	}
	docResult struct {
		ID      string `json:"id"`
		Title   string `json:"title"`
		Snippet string `json:"snippet"`
		Team    string `json:"team"`
	}
	searchOut struct {
		Results []docResult `json:"results"`
	}
	ticketIn struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}
	ticketOut struct {
		TicketID string `json:"ticket_id"`
		DryRun   bool   `json:"dry_run"`
	}
	listIn  struct{}
	listOut struct {
		Tools []registryEntry `json:"tools"`
	}
)

// The tools' descriptions in code. server.yaml's description of a tool, when
// not empty, replaces its one (config.description).
const (
	searchDocsDescription   = "Search internal docs visible to the calling user's team (read-only)."
	createTicketDescription = "Create a ticket in the downstream ticket system (write, allowlist-gated)."
	listToolsDescription    = "List the tool registry, every tool with its read/write class, cost and whether it is enabled (read-only)."
)

// codeDescription returns the description in code of the tool name (its
// mcp.Tool's in tools), "" for a tool with no code.
func codeDescription(name string) string {
	for _, d := range tools(nil, nil) {
		if d.tool.Name == name {
			return d.tool.Description
		}
	}
	return ""
}

// toolDef is a tool in code: its definition and how to add it to a server.
type toolDef struct {
	tool *mcp.Tool
	add  func(*mcp.Server, *mcp.Tool)
}

// tools returns the tools in code, list_tools showing the registry of the
// configuration cfg returns at the call.
// Their read/write classification is the ReadOnlyHint annotation,
// cross-checked against server.yaml at start.
func tools(ts *TicketSystem, cfg func() *config) []*toolDef {
	return []*toolDef{
		{
			tool: &mcp.Tool{
				Name:        "search_docs",
				Description: searchDocsDescription,
				InputSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"query": map[string]any{"type": "string", "maxLength": 200, "description": "Words to look for in titles and text; empty lists every visible doc."},
					},
					"required":             []string{"query"},
					"additionalProperties": false,
				},
				OutputSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"results": map[string]any{"type": "array", "items": map[string]any{
							"type": "object",
							"properties": map[string]any{
								"id": map[string]any{"type": "string"}, "title": map[string]any{"type": "string"},
								"snippet": map[string]any{"type": "string"}, "team": map[string]any{"type": "string"},
							},
							"required":             []string{"id", "title", "snippet", "team"},
							"additionalProperties": false,
						}},
					},
					"required":             []string{"results"},
					"additionalProperties": false,
				},
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			},
			add: func(s *mcp.Server, t *mcp.Tool) { mcp.AddTool(s, t, searchDocs) },
		},
		{
			tool: &mcp.Tool{
				Name:        "create_ticket",
				Description: createTicketDescription,
				InputSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"title": map[string]any{"type": "string", "minLength": 1, "maxLength": 120},
						"body":  map[string]any{"type": "string", "maxLength": 4000},
					},
					"required":             []string{"title", "body"},
					"additionalProperties": false,
				},
				OutputSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"ticket_id": map[string]any{"type": "string", "pattern": "^(TICKET-[0-9]{4,}|DRYRUN-[0-9a-f]{16})$"},
						"dry_run":   map[string]any{"type": "boolean"},
					},
					"required":             []string{"ticket_id", "dry_run"},
					"additionalProperties": false,
				},
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false)},
			},
			add: func(s *mcp.Server, t *mcp.Tool) { mcp.AddTool(s, t, createTicket(ts)) },
		},
		{
			tool: &mcp.Tool{
				Name:        "list_tools",
				Description: listToolsDescription,
				InputSchema: map[string]any{
					"type":                 "object",
					"properties":           map[string]any{},
					"additionalProperties": false,
				},
				OutputSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"tools": map[string]any{"type": "array", "items": map[string]any{
							"type": "object",
							"properties": map[string]any{
								"name": map[string]any{"type": "string"}, "read_only": map[string]any{"type": "boolean"},
								"enabled": map[string]any{"type": "boolean"}, "cost_units": map[string]any{"type": "number", "minimum": 0},
								"description": map[string]any{"type": "string"},
							},
							"required":             []string{"name", "read_only", "enabled", "cost_units", "description"},
							"additionalProperties": false,
						}},
					},
					"required":             []string{"tools"},
					"additionalProperties": false,
				},
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			},
			add: func(s *mcp.Server, t *mcp.Tool) { mcp.AddTool(s, t, listTools(cfg)) },
		},
	}
}

// searchDocs returns the docs of the caller's team and the company-wide
// ones that match the query: the caller is the guard's authenticated
// principal, never an argument.
func searchDocs(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
	pr := mcpguard.PrincipalFromContext(ctx)
	if pr == nil {
		return nil, searchOut{}, errors.New("no caller")
	}
	team := pr.Attrs["team"]
	q := strings.ToLower(strings.TrimSpace(in.Query))
	out := searchOut{Results: []docResult{}}
	for _, d := range corpus() {
		if d.Team != companyWide && (team == "" || d.Team != team) {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(d.Title+" "+d.Body), q) {
			continue
		}
		out.Results = append(out.Results, docResult{ID: d.ID, Title: d.Title, Snippet: d.Body, Team: d.Team})
	}
	return nil, out, nil
}

// createTicket creates a ticket as the caller. It is dry-run aware: in
// dry-run it returns a synthetic DRYRUN- id and never touches ts.
func createTicket(ts *TicketSystem) mcp.ToolHandlerFor[ticketIn, ticketOut] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in ticketIn) (*mcp.CallToolResult, ticketOut, error) {
		if dryrun.FromContext(ctx) {
			return nil, ticketOut{TicketID: dryrun.NewID(), DryRun: true}, nil
		}
		pr := mcpguard.PrincipalFromContext(ctx)
		if pr == nil {
			return nil, ticketOut{}, errors.New("no caller")
		}
		id, err := ts.Create(ctx, pr.Subject, in.Title, in.Body)
		if err != nil {
			return nil, ticketOut{}, err
		}
		return nil, ticketOut{TicketID: id}, nil
	}
}

// listTools answers the registry of the configuration cfg returns (the
// one in force, after a reload the new one), as `ticket tools` and GET /tools
// show it: every tool, each write with whether allowed_write_tools enables
// it, so that a reviewer sees the whole surface. It is a guarded read like
// search_docs: the caller is authenticated (the seed's list_tools() took no
// token, but here no tool takes one), rate-limited and audited. It hides
// nothing tools/list shows the caller: server.yaml has no role rules, so
// every caller may see every tool.
func listTools(cfg func() *config) mcp.ToolHandlerFor[listIn, listOut] {
	return func(context.Context, *mcp.CallToolRequest, listIn) (*mcp.CallToolResult, listOut, error) {
		return nil, listOut{Tools: cfg().registry()}, nil
	}
}

func ptr[T any](v T) *T { return &v }

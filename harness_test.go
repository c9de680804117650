package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersions are the two protocol generations every end-to-end test
// runs on: the default (2026-07-28, no initialize) and the last stateful one.
var protocolVersions = []string{"", "2025-11-25"}

func versionName(v string) string {
	if v == "" {
		return "default"
	}
	return v
}

// sessionAuth authenticates in-memory sessions: the test binds an identity
// to each server session when it connects it.
type sessionAuth struct {
	mu  sync.Mutex
	ids map[*mcp.ServerSession]*mcpguard.Identity
}

func (a *sessionAuth) Authenticate(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	a.mu.Lock()
	defer a.mu.Unlock()
	if id := a.ids[ss]; id != nil {
		return id, nil
	}
	return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "no identity for this session")
}

// memSink records audit events in memory.
type memSink struct {
	mu     sync.Mutex
	events []audit.Event
	fail   atomic.Bool
}

func (s *memSink) Write(ctx context.Context, e *audit.Event) error {
	if s.fail.Load() {
		return errors.New("sink down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *e)
	return nil
}

func (s *memSink) all() []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Event(nil), s.events...)
}

// spy counts how often the "downstream" of the write tools was touched.
type spy struct{ calls atomic.Int64 }

var (
	alice = &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice", Roles: []string{"user", "admin"}}, Credential: mcpguard.NewCredential("alice-secret")}
	bob   = &mcpguard.Identity{Principal: &policy.Principal{Subject: "bob", Roles: []string{"user"}}, Credential: mcpguard.NewCredential("bob-secret")}
)

type harness struct {
	t    *testing.T
	srv  *mcp.Server
	g    *mcpguard.Guard
	auth *sessionAuth
	sink *memSink
	down *spy
}

type echoIn struct {
	Text string `json:"text"`
}
type echoOut struct {
	Text string `json:"text"`
	By   string `json:"by"`
}

// noteSchema deliberately forgets additionalProperties: strict mode must
// still refuse unknown fields.
var noteSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"title":    {"type": "string", "maxLength": 40},
		"priority": {"type": "integer", "minimum": 1, "maximum": 5},
		"due":      {"type": "string", "format": "date"},
		"amount":   {"type": "number", "exclusiveMinimum": 0}
	},
	"required": ["title"]
}`)

func basePolicy(show bool) policy.Config {
	return policy.Config{
		Tools: []policy.ToolRule{
			{Name: "echo", Class: policy.Read},
			{Name: "add_note", Class: policy.Write, Cost: 1},
			{Name: "delete_all", Class: policy.Write},
			{Name: "admin_stats", Class: policy.Read},
			{Name: "panic_tool", Class: policy.Read},
			{Name: "nil_tool", Class: policy.Read},
			{Name: "err_tool", Class: policy.Read},
			{Name: "bad_output", Class: policy.Read},
			{Name: "wipe", Class: policy.Write, Confirm: true},
			{Name: "whoami", Class: policy.Read},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"add_note", "wipe"},
		ShowForbidden:  show,
	}
}

func rawHandler(f func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)) mcp.ToolHandler {
	return f
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// addTools registers the test tools, typed and raw, on s.
func addTools(s *mcp.Server, down *spy) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			by := ""
			if p := mcpguard.PrincipalFromContext(ctx); p != nil {
				by = p.Subject
			}
			return nil, echoOut{Text: in.Text, By: by}, nil
		})
	s.AddTool(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		down.calls.Add(1)
		if dryrun.FromContext(ctx) {
			return textResult("would add note"), nil
		}
		return textResult("note added"), nil
	}))
	s.AddTool(&mcp.Tool{Name: "delete_all", InputSchema: json.RawMessage(`{"type":"object"}`)}, rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		down.calls.Add(1)
		return textResult("deleted"), nil
	}))
	s.AddTool(&mcp.Tool{Name: "admin_stats", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("42 users"), nil
	}))
	s.AddTool(&mcp.Tool{Name: "panic_tool", InputSchema: json.RawMessage(`{"type":"object"}`)}, rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("boom: secret-internal-state")
	}))
	s.AddTool(&mcp.Tool{Name: "nil_tool", InputSchema: json.RawMessage(`{"type":"object"}`)}, rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, nil
	}))
	s.AddTool(&mcp.Tool{Name: "err_tool", InputSchema: json.RawMessage(`{"type":"object"}`)}, rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("db password=hunter2 refused")
	}))
	s.AddTool(&mcp.Tool{Name: "bad_output", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"n": "not a number"}}, nil
		}))
	s.AddTool(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)},
		rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			down.calls.Add(1)
			return textResult("wiped"), nil
		}))
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, rawHandler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := mcpguard.FromContext(ctx)
		return textResult(id.Principal.Subject + " " + id.Credential.Reveal()), nil
	}))
}

func testSigner(t *testing.T, opts *confirm.Options) *confirm.Signer {
	t.Helper()
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newHarness(t *testing.T, cfg policy.Config, opts *mcpguard.Options) *harness {
	t.Helper()
	h := &harness{t: t, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(h.srv, h.down)
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var o mcpguard.Options
	if opts != nil {
		o = *opts
	}
	if o.Audit == nil {
		o.Audit = h.sink
	}
	if o.Confirmer == nil {
		o.Confirmer = testSigner(t, nil)
	}
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h.g, err = mcpguard.New(pol, h.auth, &o)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(h.srv); err != nil {
		t.Fatal(err)
	}
	return h
}

type clientOpts struct {
	version string
	elicit  func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	noMRTR  bool
}

// connect opens a client session whose server side is bound to id (nil: no identity).
func (h *harness) connect(id *mcpguard.Identity, co clientOpts) *mcp.ClientSession {
	h.t.Helper()
	cs, _ := h.connectBoth(id, co)
	return cs
}

// connectBoth is connect, and returns the server side of the session too.
func (h *harness) connectBoth(id *mcpguard.Identity, co clientOpts) (*mcp.ClientSession, *mcp.ServerSession) {
	h.t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.Connect(ctx, st, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.auth.mu.Lock()
	h.auth.ids[ss] = id
	h.auth.mu.Unlock()
	copts := &mcp.ClientOptions{ElicitationHandler: co.elicit}
	if co.noMRTR {
		copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		if co.version == "" || co.version >= "2026-07-28" {
			// The test answers the input requests: its client declares
			// elicitation, which a guard asks only of a client that does.
			copts.Capabilities = elicitCaps()
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: co.version})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs, ss
}

// errorCode extracts the mcpguard error code of a tool-error result.
func errorCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || !res.IsError {
		return ""
	}
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return body.Error.Code
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
}

func wireError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return nil
}

// elicitCaps returns the capabilities of a client on protocol 2026-07-28
// that answers input requests itself (its multi round-trip disabled): it
// declares form elicitation, which a guard asks only of a client that does.
func elicitCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
}

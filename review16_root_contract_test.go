package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r16Marker is an argument value that must never reach an answer, a log
// line or an audit record (no tool opts in to record arguments here).
const r16Marker = "s3cr3t-marker-4711"

// intentRefusingSink is a memSink that cannot make the write-ahead intent
// of the tool named refuse durable.
type intentRefusingSink struct {
	memSink
	refuse string
}

func (s *intentRefusingSink) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent && e.Tool == s.refuse {
		return errors.New("disk full")
	}
	return s.memSink.Write(ctx, e)
}

// contractTools are the harness tools plus one per cap and failure.
func contractTools(slow *slowGate) func(*mcp.Server) {
	return func(s *mcp.Server) {
		addTools(s, &spy{})
		obj := json.RawMessage(`{"type":"object"}`)
		ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
		ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
		s.AddTool(&mcp.Tool{Name: "rate_tool", InputSchema: obj, Annotations: ro}, ok)
		s.AddTool(&mcp.Tool{Name: "spend_tool", InputSchema: obj, Annotations: ro}, ok)
		s.AddTool(&mcp.Tool{Name: "slow_tool", InputSchema: obj, Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			slow.enter()
			return textResult("slow"), nil
		})
		s.AddTool(&mcp.Tool{Name: "upstream_tool", InputSchema: obj, Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("billing API at 10.0.0.7 said %s: %w", r16Marker, mcpguard.ErrUpstreamUnavailable)
		})
		s.AddTool(&mcp.Tool{Name: "audit_write", InputSchema: obj}, ok)
	}
}

// slowGate holds slow_tool's handler until released.
type slowGate struct {
	entered chan struct{}
	release chan struct{}
}

func newSlowGate() *slowGate {
	return &slowGate{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *slowGate) enter() {
	g.entered <- struct{}{}
	<-g.release
}

func contractPolicy() policy.Config {
	cfg := basePolicy(false)
	cfg.Tools = append(cfg.Tools,
		policy.ToolRule{Name: "rate_tool", Class: policy.Read},
		policy.ToolRule{Name: "spend_tool", Class: policy.Read, Cost: 1},
		policy.ToolRule{Name: "slow_tool", Class: policy.Read},
		policy.ToolRule{Name: "upstream_tool", Class: policy.Read},
		policy.ToolRule{Name: "audit_write", Class: policy.Write},
	)
	for i, r := range cfg.Tools {
		if r.Name == "add_note" {
			cfg.Tools[i].ArgLimits = []policy.ArgLimit{{Field: "amount", Max: 100}}
		}
	}
	cfg.WriteAllowlist = append(cfg.WriteAllowlist, "audit_write")
	return cfg
}

func contractLimiter(t *testing.T) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "rate_tool", Max: 1, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "spend_tool", Max: 1, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "slow_tool", Max: 1},
		// add_note may run once: every refusal of it below must leave
		// that one call to the last row.
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "add_note", Max: 1, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestReview16ErrorContractOverHTTP drives every denial code of the error
// contract through a guarded go-sdk Streamable HTTP server with a raw
// client, on both protocol generations and in both reporting modes, and
// checks for each the JSON-RPC answer (a tool error with the code, or the
// contract's JSON-RPC code with the code in its data), the HTTP status (a
// go-sdk server answers 200 but for -32602, which on 2026-07-28 is 400,
// SEP-2575; Code.HTTPStatus gives a gateway the contract's), and the one
// outcome record of the call: its code, refused, phase outcome, no
// arguments recorded. No answer, record or log line holds an argument
// value. The order of the steps shows: a caller not authenticated, a
// hidden tool and a write off the allowlist are refused as such, though
// their arguments are not even an object; refusals of add_note before it
// runs leave its one allowed call (rate 1) to the last row.
func TestReview16ErrorContractOverHTTP(t *testing.T) {
	type row struct {
		code   mcpguard.Code
		status int // the contract's HTTP status (Code.HTTPStatus)
		tool   string
		args   any
		token  string
		state  string // a forged requestState
		before func(t *testing.T, s *r16Server, c *rawClient)
	}
	rows := map[string]row{
		// Arguments that are not an object: the steps before validation
		// decide first.
		"unauthenticated":   {code: mcpguard.CodeUnauthenticated, status: 401, tool: "admin_stats", args: []any{r16Marker}},
		"tool_not_found":    {code: mcpguard.CodeToolNotFound, status: 404, tool: "admin_stats", args: []any{r16Marker}, token: "bob-token"},
		"forbidden":         {code: mcpguard.CodeForbidden, status: 403, tool: "add_note", args: map[string]any{"title": r16Marker, "amount": 500}, token: "bob-token"},
		"write_not_allowed": {code: mcpguard.CodeWriteNotAllowed, status: 403, tool: "delete_all", args: []any{r16Marker}, token: "bob-token"},
		"invalid_arguments": {code: mcpguard.CodeInvalidArguments, status: 400, tool: "add_note", args: map[string]any{"title": strings.Repeat(r16Marker, 5)}, token: "bob-token"},
		"confirmation_required": {code: mcpguard.CodeConfirmationRequired, status: 403, tool: "wipe", args: map[string]any{"target": r16Marker}, token: "bob-token",
			state: "forged.state"},
		"rate_limit_exceeded": {code: mcpguard.CodeRateLimitExceeded, status: 429, tool: "rate_tool", args: map[string]any{"note": r16Marker}, token: "bob-token",
			before: func(t *testing.T, s *r16Server, c *rawClient) {
				mustSucceed(t, c.callTool("rate_tool", map[string]any{}, nil))
			}},
		"spend_limit_exceeded": {code: mcpguard.CodeSpendLimitExceeded, status: 429, tool: "spend_tool", args: map[string]any{"note": r16Marker}, token: "bob-token",
			before: func(t *testing.T, s *r16Server, c *rawClient) {
				mustSucceed(t, c.callTool("spend_tool", map[string]any{}, nil))
			}},
		"concurrency_limit_exceeded": {code: mcpguard.CodeConcurrencyLimitExceeded, status: 429, tool: "slow_tool", args: map[string]any{"note": r16Marker}, token: "bob-token"},
		"invalid_response":           {code: mcpguard.CodeInvalidResponse, status: 502, tool: "bad_output", args: map[string]any{"note": r16Marker}, token: "bob-token"},
		"upstream_unavailable":       {code: mcpguard.CodeUpstreamUnavailable, status: 502, tool: "upstream_tool", args: map[string]any{"note": r16Marker}, token: "bob-token"},
		"audit_unavailable":          {code: mcpguard.CodeAuditUnavailable, status: 503, tool: "audit_write", args: map[string]any{"note": r16Marker}, token: "bob-token"},
		"internal":                   {code: mcpguard.CodeInternal, status: 500, tool: "panic_tool", args: map[string]any{"note": r16Marker}, token: "bob-token"},
	}
	order := []string{"unauthenticated", "tool_not_found", "forbidden", "write_not_allowed", "invalid_arguments",
		"confirmation_required", "rate_limit_exceeded", "spend_limit_exceeded", "concurrency_limit_exceeded",
		"invalid_response", "upstream_unavailable", "audit_unavailable", "internal"}
	if len(order) != len(rows) {
		t.Fatal("order lists every row")
	}
	for _, v := range r16Versions {
		for _, protocolErrors := range []bool{false, true} {
			mode := "tool_errors"
			if protocolErrors {
				mode = "protocol_errors"
			}
			t.Run(v+"/"+mode, func(t *testing.T) {
				gate := newSlowGate()
				sink := &intentRefusingSink{refuse: "audit_write"}
				s := newR16Server(t, v, contractTools(gate), contractPolicy(), &mcpguard.Options{
					Audit: sink, Limiter: contractLimiter(t), ProtocolErrors: protocolErrors,
				})
				s.sink = &sink.memSink
				for _, name := range order {
					r := rows[name]
					t.Run(name, func(t *testing.T) {
						if got := r.code.HTTPStatus(); got != r.status {
							t.Errorf("%s.HTTPStatus() = %d, want the contract's %d", r.code, got, r.status)
						}
						c := s.connect(t, v, r.token)
						if r.before != nil {
							r.before(t, s, c)
						}
						if r.code == mcpguard.CodeConcurrencyLimitExceeded {
							// One call holds the slot while the other is refused.
							holder := s.connect(t, v, r.token)
							done := make(chan *rawAnswer)
							go func() { done <- holder.callTool("slow_tool", map[string]any{}, nil) }()
							<-gate.entered
							defer func() {
								close(gate.release)
								mustSucceed(t, <-done)
							}()
						}
						before := len(s.sink.all())
						p := map[string]any{"name": r.tool, "arguments": r.args}
						if r.state != "" {
							p["requestState"] = r.state
							p["inputResponses"] = map[string]any{"mcpguard_confirm": map[string]any{"action": "accept"}}
						}
						a := c.post("tools/call", p, nil)
						checkContractAnswer(t, a, v, r.code, protocolErrors)
						if strings.Contains(string(a.body), r16Marker) {
							t.Errorf("the answer holds an argument value: %s", a.body)
						}
						recs := s.sink.all()[before:]
						var outcomes []audit.Event
						intents := 0
						for _, e := range recs {
							if e.Tool != r.tool {
								continue
							}
							if e.Phase == audit.PhaseIntent {
								intents++
								continue
							}
							outcomes = append(outcomes, e)
						}
						if len(outcomes) != 1 {
							t.Fatalf("%d outcome records for the call, want 1: %+v", len(outcomes), recs)
						}
						e := outcomes[0]
						if e.Code != string(r.code) || e.Allowed || e.Phase != audit.PhaseOutcome || e.Args != nil {
							t.Errorf("record: code %q allowed %v phase %q args %v; want %s, refused, outcome, no args", e.Code, e.Allowed, e.Phase, e.Args, r.code)
						}
						if _, _, corr := a.denial(t); corr != "" && corr != e.CorrelationID {
							t.Errorf("the answer names record %q, the record is %q", corr, e.CorrelationID)
						}
						if intents != 0 {
							// Every refusal here comes before step 10, or is a read's.
							t.Errorf("%d intent records, want none", intents)
						}
						raw, _ := json.Marshal(recs)
						if strings.Contains(string(raw), r16Marker) {
							t.Errorf("an audit record holds an argument value: %s", raw)
						}
					})
				}
				t.Run("add_note_still_has_its_call", func(t *testing.T) {
					c := s.connect(t, v, "bob-token")
					mustSucceed(t, c.callTool("add_note", map[string]any{"title": "ok", "amount": 5}, nil))
				})
				if logs := s.logs.String(); strings.Contains(logs, r16Marker) {
					// The handler's own error text goes to the log (it is
					// the operator's); argument values the guard read do not.
					for _, line := range strings.Split(logs, "\n") {
						if strings.Contains(line, r16Marker) && !strings.Contains(line, "billing API") {
							t.Errorf("a log line holds an argument value: %s", line)
						}
					}
				}
			})
		}
	}
}

// checkContractAnswer checks a refusal's JSON-RPC answer and HTTP status.
func checkContractAnswer(t *testing.T, a *rawAnswer, version string, code mcpguard.Code, protocolErrors bool) {
	t.Helper()
	wantStatus := http.StatusOK
	switch {
	case code == mcpguard.CodeToolNotFound:
		if a.msg.Error == nil || a.msg.Error.Code != -32602 || len(a.msg.Error.Data) != 0 || !strings.HasPrefix(a.msg.Error.Message, "unknown tool ") {
			t.Fatalf("answer %s, want the go-sdk's unknown tool error", a)
		}
		if version == r16New {
			wantStatus = http.StatusBadRequest
		}
	case protocolErrors:
		if a.msg.Error == nil {
			t.Fatalf("answer %s, want a JSON-RPC error", a)
		}
		if a.msg.Error.Code != code.JSONRPC() {
			t.Errorf("JSON-RPC code %d, want %d", a.msg.Error.Code, code.JSONRPC())
		}
		if got, _, _ := a.denial(t); got != string(code) {
			t.Errorf("data code %q, want %s: %s", got, code, a)
		}
		if version == r16New && code.JSONRPC() == -32602 {
			wantStatus = http.StatusBadRequest
		}
	default:
		if a.msg.Error != nil {
			t.Fatalf("answer %s, want a tool error", a)
		}
		if got, _, _ := a.denial(t); got != string(code) {
			t.Errorf("tool error code %q, want %s: %s", got, code, a)
		}
	}
	if a.status != wantStatus {
		t.Errorf("HTTP status %d, want %d: %s", a.status, wantStatus, a)
	}
}

func mustSucceed(t *testing.T, a *rawAnswer) {
	t.Helper()
	if a.status != 200 || a.msg.Error != nil || len(a.msg.Result) == 0 {
		t.Fatalf("call failed: %s", a)
	}
	if code, _, _ := a.denial(t); code != "" {
		t.Fatalf("call refused: %s", a)
	}
}

// TestReview16UnauthenticatedBehindRequireBearer: behind the go-sdk's
// auth.RequireBearerToken, a call without a valid token is refused at the
// HTTP layer with the contract's 401 and a WWW-Authenticate challenge,
// before the guard (which records nothing); with one, FromTokenInfo makes
// the token's user the caller.
func TestReview16UnauthenticatedBehindRequireBearer(t *testing.T) {
	for _, v := range r16Versions {
		t.Run(v, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			addTools(srv, &spy{})
			pol, err := policy.New(basePolicy(false))
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			g, err := mcpguard.New(pol, mcpguard.FromTokenInfo(nil), &mcpguard.Options{Audit: sink, Confirmer: testSigner(t, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(srv); err != nil {
				t.Fatal(err)
			}
			verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
				if tok == "bob-token" {
					return &auth.TokenInfo{UserID: "bob", Scopes: []string{"user"}, Expiration: time.Now().Add(time.Hour)}, nil
				}
				return nil, auth.ErrInvalidToken
			}
			h := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: "http://127.0.0.1/.well-known/oauth-protected-resource"})(
				mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: v == r16New}))
			hs := httptest.NewServer(h)
			t.Cleanup(hs.Close)
			rs := &r16Server{url: hs.URL}
			c := &rawClient{t: t, url: hs.URL, version: v, token: "wrong"}
			a := c.callTool("echo", map[string]any{"text": "hi"}, nil)
			if a.status != http.StatusUnauthorized || !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("a bad token: %d, WWW-Authenticate %q; want 401 with a Bearer challenge", a.status, a.header.Get("WWW-Authenticate"))
			}
			if n := len(sink.all()); n != 0 {
				t.Errorf("%d records of a request the HTTP layer refused", n)
			}
			mustSucceed(t, rs.connect(t, v, "bob-token").callTool("echo", map[string]any{"text": "hi"}, nil))
		})
	}
}

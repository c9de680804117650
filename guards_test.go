package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stub is a handler that records whether it ran.
type stub struct {
	ran  int
	ctx  context.Context
	res  *mcp.CallToolResult
	err  error
	boom bool
}

func (s *stub) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.ran++
	s.ctx = ctx
	if s.boom {
		panic("boom")
	}
	if s.res == nil && s.err == nil {
		return textResult("ok"), nil
	}
	return s.res, s.err
}

func req(name, args string) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(args)}}
}

func fixed(id *mcpguard.Identity) mcpguard.Authenticator {
	return mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		if id == nil {
			return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "nobody")
		}
		return id, nil
	})
}

func codeOf(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return "jsonrpc:" + we.Message
		}
		return "error:" + err.Error()
	}
	var de *mcpguard.DenialError
	if errors.As(res.GetError(), &de) {
		return string(de.Code)
	}
	return errorCode(t, res)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestRecoverGuard(t *testing.T) {
	tests := []struct {
		name string
		s    *stub
		want string
	}{
		{"panic", &stub{boom: true}, "INTERNAL"},
		{"nil_nil", &stub{res: nil, err: nil}, ""},
		{"plain_error", &stub{err: errors.New("secret detail")}, "INTERNAL"},
		{"denial_error", &stub{err: mcpguard.Deny(mcpguard.CodeForbidden, "no")}, "FORBIDDEN"},
		{"wire_error_passes", &stub{err: &jsonrpc.Error{Code: -32602, Message: "bad"}}, "jsonrpc:bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mcpguard.Recover(quiet)(tt.s.handle)
			res, err := h(context.Background(), req("x", "{}"))
			if got := codeOf(t, res, err); got != tt.want {
				t.Errorf("code = %q, want %q", got, tt.want)
			}
			if tt.s.ran != 1 {
				t.Errorf("next ran %d times, want 1", tt.s.ran)
			}
		})
	}
	t.Run("nil_nil_normalised", func(t *testing.T) {
		h := mcpguard.Recover(quiet)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
		res, err := h(context.Background(), req("x", "{}"))
		if got := codeOf(t, res, err); got != "INTERNAL" {
			t.Errorf("code = %q, want INTERNAL", got)
		}
	})
}

func TestAuthenticateGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      *mcpguard.Identity
		wantRan int
		want    string
	}{
		{"no_identity", nil, 0, "UNAUTHENTICATED"},
		{"identity", bob, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stub{}
			res, err := mcpguard.Authenticate(fixed(tc.id))(s.handle)(context.Background(), req("x", "{}"))
			if got := codeOf(t, res, err); got != tc.want {
				t.Errorf("code = %q, want %q", got, tc.want)
			}
			if s.ran != tc.wantRan {
				t.Fatalf("next ran %d times, want %d", s.ran, tc.wantRan)
			}
			if tc.id != nil && mcpguard.FromContext(s.ctx) != tc.id {
				t.Error("handler context lacks the identity")
			}
		})
	}
}

func TestAuthorizeGuard(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "read", Class: policy.Read},
			{Name: "admin_x", Class: policy.Read},
			{Name: "write", Class: policy.Write},
			{Name: "refund", Class: policy.Write, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, args, want string
		ran                    int
	}{
		{"allowed", "read", "{}", "", 1},
		{"hidden_is_unknown", "admin_x", "{}", `jsonrpc:unknown tool "admin_x"`, 0},
		{"unknown", "nope", "{}", `jsonrpc:unknown tool "nope"`, 0},
		{"write_not_allowed", "write", "{}", "WRITE_NOT_ALLOWED", 0},
		{"arg_limit_ok", "refund", `{"amount":50}`, "", 1},
		{"arg_limit_exceeded", "refund", `{"amount":500}`, "FORBIDDEN", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stub{}
			h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol))(s.handle)
			res, err := h(context.Background(), req(tt.tool, tt.args))
			if got := codeOf(t, res, err); got != tt.want {
				t.Errorf("code = %q, want %q", got, tt.want)
			}
			if s.ran != tt.ran {
				t.Errorf("next ran %d times, want %d", s.ran, tt.ran)
			}
		})
	}
}

func TestValidateArgumentsGuard(t *testing.T) {
	v, err := mcpguard.NewValidator(noteSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args string
		ran        int
	}{
		{"valid", `{"title":"x"}`, 1},
		{"coercion_refused", `{"title":"x","amount":"10.0"}`, 0},
		{"unknown_field", `{"title":"x","extra":1}`, 0},
		{"trailing_data", `{"title":"x"} {}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stub{}
			mcpguard.ValidateArguments(v)(s.handle)(context.Background(), req("add_note", tc.args))
			if s.ran != tc.ran {
				t.Errorf("next ran %d times, want %d", s.ran, tc.ran)
			}
		})
	}
}

func TestAuditGuard(t *testing.T) {
	sink := &memSink{}
	s := &stub{err: errors.New("x")}
	h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), mustAudit(t, sink, &mcpguard.Options{Logger: quiet}), mcpguard.Recover(quiet))(s.handle)
	h(context.Background(), req("echo", `{"text":"hi"}`))
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	e := evs[0]
	if e.Subject != "bob" || e.Tool != "echo" || e.Allowed || e.Code != "INTERNAL" || e.ArgsSHA256 == "" {
		t.Errorf("event = %+v", e)
	}
}

// TestGuardStepsWithStub runs the whole pipeline around a stub and checks,
// step by step, that a refusal never reaches the handler.
func TestGuardStepsWithStub(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	note := &mcp.Tool{Name: "add_note", InputSchema: noteSchema}
	tests := []struct {
		name string
		id   *mcpguard.Identity
		tool *mcp.Tool
		args string
		opts mcpguard.Options
		want string
		ran  int
	}{
		{"allowed", bob, note, `{"title":"x"}`, mcpguard.Options{}, "", 1},
		{"unauthenticated", nil, note, `{"title":"x"}`, mcpguard.Options{}, "UNAUTHENTICATED", 0},
		{"invalid", bob, note, `{"title":1}`, mcpguard.Options{}, "INVALID_ARGUMENTS", 0},
		{"spend_cap", bob, note, `{"title":"x","amount":11}`, mcpguard.Options{Limiter: lim, Tools: map[string]mcpguard.ToolOptions{
			"add_note": {Cost: func(a map[string]any) (float64, error) { return a["amount"].(json.Number).Float64() }},
		}}, "SPEND_LIMIT_EXCEEDED", 0},
		{"negative_cost_refused", bob, note, `{"title":"x","amount":1}`, mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{
			"add_note": {Cost: func(a map[string]any) (float64, error) { return -1, nil }},
		}}, "INTERNAL", 0},
		{"dry_run", bob, note, `{"title":"x"}`, mcpguard.Options{DryRun: true}, "", 0},
		{"audit_unavailable", bob, note, `{"title":"x"}`, mcpguard.Options{Audit: failingSink{}}, "AUDIT_UNAVAILABLE", 0},
		{"write_not_allowed", bob, &mcp.Tool{Name: "delete_all", InputSchema: json.RawMessage(`{"type":"object"}`)}, `{}`, mcpguard.Options{}, "WRITE_NOT_ALLOWED", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			if o.Audit == nil {
				o.Audit = &memSink{}
			}
			o.Confirmer = testSigner(t, nil)
			o.Logger = quiet
			g, err := mcpguard.New(pol, fixed(tt.id), &o)
			if err != nil {
				t.Fatal(err)
			}
			s := &stub{}
			h, err := g.Wrap(tt.tool, s.handle)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), req(tt.tool.Name, tt.args))
			if got := codeOf(t, res, err); got != tt.want {
				t.Errorf("code = %q, want %q (%s)", got, tt.want, mustJSON(res))
			}
			if s.ran != tt.ran {
				t.Errorf("handler ran %d times, want %d", s.ran, tt.ran)
			}
		})
	}
}

type failingSink struct{}

func (failingSink) Write(context.Context, *audit.Event) error { return errors.New("down") }

func TestWrapChecksRegistration(t *testing.T) {
	pol, _ := policy.New(basePolicy(false))
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Confirmer: testSigner(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	s := &stub{}
	if _, err := g.Wrap(&mcp.Tool{Name: "unruled", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle); err == nil || !strings.Contains(err.Error(), "no rule") {
		t.Errorf("Wrap(unruled) error = %v", err)
	}
	if _, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.handle); err == nil {
		t.Error("Wrap accepted a write tool annotated read-only")
	}
}

func TestNewErrors(t *testing.T) {
	pol, _ := policy.New(basePolicy(false))
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"nil_policy", func() error { _, err := mcpguard.New(nil, fixed(bob), nil); return err }},
		{"nil_authenticator", func() error { _, err := mcpguard.New(pol, nil, nil); return err }},
		{"confirm_without_signer", func() error { _, err := mcpguard.New(pol, fixed(bob), nil); return err }},
		{"options_for_unknown_tool", func() error {
			_, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Confirmer: testSigner(t, nil), Tools: map[string]mcpguard.ToolOptions{"nope": {}}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
}

func TestChainOrderAndWhen(t *testing.T) {
	var order []string
	mw := func(name string) mcpguard.Middleware {
		return func(next mcp.ToolHandler) mcp.ToolHandler {
			return func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				order = append(order, name)
				return next(ctx, r)
			}
		}
	}
	s := &stub{}
	h := mcpguard.Chain(mw("a"), nil, mcpguard.When(mcpguard.ToolNamed("x"), mw("b")), mw("c"))(s.handle)
	h(context.Background(), req("x", "{}"))
	h(context.Background(), req("y", "{}"))
	if diff := cmp.Diff([]string{"a", "b", "c", "a", "c"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestCredentialRedacted(t *testing.T) {
	c := mcpguard.NewCredential("tok-123")
	var sb strings.Builder
	slog.New(slog.NewJSONHandler(&sb, nil)).Info("x", "cred", c, "id", alice)
	for _, s := range []string{sb.String(), c.String(), mustJSON(c), mustJSON(alice)} {
		if strings.Contains(s, "tok-123") || strings.Contains(s, "alice-secret") {
			t.Errorf("credential leaked: %s", s)
		}
	}
}

func TestTokenAuthenticators(t *testing.T) {
	ts, err := token.New(map[string]*policy.Principal{"tok-a": {Subject: "a", Roles: []string{"user"}}, "tok-b": {Subject: "b", Roles: []string{"admin"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPGUARD_TEST_TOKEN", "tok-a")
	a := mcpguard.FromEnv("MCPGUARD_TEST_TOKEN", ts)
	id, err := a.Authenticate(context.Background(), req("x", "{}"))
	if err != nil || id.Principal.Subject != "a" || id.Credential.Reveal() != "tok-a" {
		t.Errorf("FromEnv = %v, %v", id, err)
	}
	for _, bad := range []string{"", "nope"} {
		if _, err := mcpguard.FromToken(bad, ts).Authenticate(context.Background(), req("x", "{}")); !errors.Is(err, mcpguard.ErrUnauthenticated) {
			t.Errorf("FromToken(%q) error = %v, want ErrUnauthenticated", bad, err)
		}
	}
	hr := req("x", "{}")
	hr.Extra = &mcp.RequestExtra{Header: map[string][]string{"Authorization": {"bEaReR tok-b"}}}
	id, err = mcpguard.BearerTokens(ts).Authenticate(context.Background(), hr)
	if err != nil || id.Principal.Subject != "b" {
		t.Errorf("BearerTokens = %v, %v", id, err)
	}
	hr.Extra.Header.Set("Authorization", "Basic tok-b")
	if _, err := mcpguard.BearerTokens(ts).Authenticate(context.Background(), hr); !errors.Is(err, mcpguard.ErrUnauthenticated) {
		t.Errorf("Basic scheme accepted: %v", err)
	}
	// The launching identity is never lent to an HTTP caller.
	if _, err := a.Authenticate(context.Background(), hr); !errors.Is(err, mcpguard.ErrUnauthenticated) {
		t.Errorf("FromEnv over HTTP: %v, want ErrUnauthenticated", err)
	}
}

func TestFromGatewayHeaders(t *testing.T) {
	anon := &policy.Principal{Subject: "anonymous"}
	tests := []struct {
		name    string
		header  map[string][]string
		anon    *policy.Principal
		want    string
		wantErr bool
	}{
		{"gateway_identity", map[string][]string{token.HeaderSubject: {"ann"}, token.HeaderRole: {"admin, viewer"}}, nil, "ann admin,viewer", false},
		{"no_headers_anonymous", nil, anon, "anonymous ", false},
		{"no_headers_refused", nil, nil, "", true},
		{"malformed", map[string][]string{token.HeaderSubject: {"ann\x7f"}}, anon, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req("x", "{}")
			if tt.header != nil {
				r.Extra = &mcp.RequestExtra{Header: tt.header}
			}
			id, err := mcpguard.FromGatewayHeaders(tt.anon).Authenticate(context.Background(), r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil {
				if got := id.Principal.Subject + " " + strings.Join(id.Principal.Roles, ","); got != tt.want {
					t.Errorf("principal = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestDenialErrorUnwraps(t *testing.T) {
	e := mcpguard.Deny(mcpguard.CodeRateLimitExceeded, "slow down")
	e.RetryAfter = 1500 * time.Millisecond
	if !errors.Is(e, mcpguard.ErrRateLimitExceeded) {
		t.Error("DenialError does not unwrap to its sentinel")
	}
	we := e.JSONRPCError(0)
	if we.Code != -32029 {
		t.Errorf("JSON-RPC code = %d, want -32029", we.Code)
	}
	var data map[string]any
	json.Unmarshal(we.Data, &data)
	if data["retry_after_seconds"] != 2.0 || data["code"] != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("data = %v", data)
	}
}

func TestStrictDecoding(t *testing.T) {
	v, err := mcpguard.NewValidator(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"},"n":{"type":"number","maximum":10}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{} x`, `{}}`, `{},`, `{"a":"x"}]`, "{\"a\xff\":1,\"a\xfe\":2}", `{"a":"x","\u0061":"y"}`, `{"n":1e1000001}`} {
		if _, err := v.Validate(json.RawMessage(raw)); !errors.Is(err, mcpguard.ErrInvalidArguments) {
			t.Errorf("Validate(%q) = %v, want ErrInvalidArguments", raw, err)
		}
	}
	for _, raw := range []string{`{}`, ` {"a":"x"} `, "{\"a\":\"x\"}\n", ``, `null`} {
		if _, err := v.Validate(json.RawMessage(raw)); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", raw, err)
		}
	}
}

// temporary is an error a read may be retried after.
type temporary struct{}

func (temporary) Error() string   { return "connection reset" }
func (temporary) Temporary() bool { return true }

func TestExecuteSemantics(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	newGuard := func(t *testing.T, o mcpguard.Options) *mcpguard.Guard {
		t.Helper()
		o.Audit, o.Confirmer, o.Logger = &memSink{}, testSigner(t, nil), quiet
		g, err := mcpguard.New(pol, fixed(bob), &o)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	echo := &mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	note := &mcp.Tool{Name: "add_note", InputSchema: noteSchema}

	t.Run("read_retried_once_on_transient_error", func(t *testing.T) {
		g := newGuard(t, mcpguard.Options{RetryReads: true})
		n := 0
		h, _ := g.Wrap(echo, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n++
			if n == 1 {
				return nil, temporary{}
			}
			return textResult("ok"), nil
		})
		res, err := h(context.Background(), req("echo", `{"text":"x"}`))
		if err != nil || res.IsError || n != 2 {
			t.Errorf("result %s, err %v, handler ran %d times; want success after 2", mustJSON(res), err, n)
		}
	})
	t.Run("write_never_retried", func(t *testing.T) {
		g := newGuard(t, mcpguard.Options{RetryReads: true})
		n := 0
		h, _ := g.Wrap(note, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n++
			return nil, temporary{}
		})
		h(context.Background(), req("add_note", `{"title":"x"}`))
		if n != 1 {
			t.Errorf("write ran %d times, want 1", n)
		}
	})
	t.Run("started_write_not_cancelled_by_client", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGuard(t, mcpguard.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			var sawCancel bool
			h, _ := g.Wrap(note, func(hctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				cancel() // the client goes away mid-write
				select {
				case <-hctx.Done():
					sawCancel = true
				case <-time.After(50 * time.Millisecond):
				}
				return textResult("written"), nil
			})
			res, _ := h(ctx, req("add_note", `{"title":"x"}`))
			if sawCancel || res.IsError {
				t.Errorf("write saw cancellation %v, result %s", sawCancel, mustJSON(res))
			}
		})
	})
	t.Run("read_deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGuard(t, mcpguard.Options{Timeout: 10 * time.Millisecond})
			h, _ := g.Wrap(echo, func(hctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				<-hctx.Done()
				return nil, hctx.Err()
			})
			res, err := h(context.Background(), req("echo", `{"text":"x"}`))
			if got := codeOf(t, res, err); got != "UPSTREAM_UNAVAILABLE" {
				t.Errorf("timed-out read: code %q, want UPSTREAM_UNAVAILABLE", got)
			}
		})
	})
}

// TestAuditRecordsOfOneCall checks the identifiers the pipeline writes into
// its records, for arguments whose canonical form fits the call's own
// buffer and for larger ones: the hash is audit.ArgsSHA256 of what was
// sent, intent and outcome share it and one correlation id of the
// library's shape, and two calls get different ids.
func TestAuditRecordsOfOneCall(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Confirmer: testSigner(t, nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, (&stub{}).handle)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 39)
	for _, args := range []string{
		`{"title":"short"}`,
		`{ "priority": 3, "title": "` + long + `", "due": "2026-12-01", "amount": 12.5 }`,
		`{"title":"` + strings.Repeat("😀", 39) + `","due":"2026-12-01","priority":5,"amount":` + strings.Repeat("9", 128) + `}`,
	} {
		before := len(sink.all())
		res, err := h(context.Background(), req("add_note", args))
		if err != nil || res.IsError {
			t.Fatalf("call with %s: %v %s", args, err, mustJSON(res))
		}
		evs := sink.all()[before:]
		if len(evs) != 2 {
			t.Fatalf("%d records for one write, want intent and outcome", len(evs))
		}
		want := audit.ArgsSHA256(json.RawMessage(args))
		for _, e := range evs {
			if e.ArgsSHA256 != want {
				t.Errorf("%s record of %.40s...: args_sha256 = %q, want %q", e.Phase, args, e.ArgsSHA256, want)
			}
			if len(e.CorrelationID) != 25 || e.CorrelationID != evs[0].CorrelationID {
				t.Errorf("%s record: correlation id %q, want the intent's (%q), 25 characters", e.Phase, e.CorrelationID, evs[0].CorrelationID)
			}
		}
		if before > 0 && sink.all()[before-1].CorrelationID == evs[0].CorrelationID {
			t.Errorf("two calls share the correlation id %q", evs[0].CorrelationID)
		}
	}
}

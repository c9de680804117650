package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview34AuthenticatorAnswerNeedsFullIdentity pins that a call runs only when the
// Authenticator returns an identity with a subject and no error, both in the stand-alone
// Authenticate and in a Guard: an identity returned together with an error (an authenticator
// that resolved the caller, then failed a later check) is refused as UNAUTHENTICATED, and so is
// a nil identity, one without a principal and one whose principal has no subject.
func TestReview34AuthenticatorAnswerNeedsFullIdentity(t *testing.T) {
	full := &mcpguard.Identity{Principal: &policy.Principal{Subject: "bob", Roles: []string{"user"}}}
	tests := []struct {
		name string
		id   *mcpguard.Identity
		err  error
		want string
	}{
		{"identity", full, nil, ""},
		{"identity_with_error", full, errors.New("token revoked"), "UNAUTHENTICATED"},
		{"identity_with_denial", full, mcpguard.Deny(mcpguard.CodeUnauthenticated, "token revoked"), "UNAUTHENTICATED"},
		{"nil_identity", nil, nil, "UNAUTHENTICATED"},
		{"no_principal", &mcpguard.Identity{}, nil, "UNAUTHENTICATED"},
		{"no_subject", &mcpguard.Identity{Principal: &policy.Principal{Roles: []string{"user"}}}, nil, "UNAUTHENTICATED"},
	}
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
			return tt.id, tt.err
		})
		t.Run(tt.name+"/middleware", func(t *testing.T) {
			s := &stub{}
			res, err := mcpguard.Authenticate(authn)(s.handle)(context.Background(), req("echo", `{"text":"hi"}`))
			checkRan(t, codeOf(t, res, err), tt.want, s.ran)
		})
		t.Run(tt.name+"/guard", func(t *testing.T) {
			g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: &memSink{}, Logger: quiet, Confirmer: testSigner(t, nil)})
			if err != nil {
				t.Fatal(err)
			}
			s := &stub{}
			h, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), req("echo", `{"text":"hi"}`))
			checkRan(t, codeOf(t, res, err), tt.want, s.ran)
		})
	}
}

// checkRan fails t unless the call's code is want and the handler ran exactly when want is
// "" (the call was allowed).
func checkRan(t *testing.T, got, want string, ran int) {
	t.Helper()
	if got != want {
		t.Errorf("code = %q, want %q", got, want)
	}
	if wantRan := map[bool]int{true: 1, false: 0}[want == ""]; ran != wantRan {
		t.Errorf("handler ran %d times, want %d", ran, wantRan)
	}
}

// TestReview34GatewayHeadersPrintableEdges pins which gateway identity headers
// FromGatewayHeaders accepts: values of printable ASCII (space to '~'), as long as
// token.CheckPrincipal lets the gateway send (1024 bytes of subject, 16 KiB of roles: a
// principal it passes is read back, 63f; the bound was 256 bytes), in the subject and the
// role header; a longer value, a control character or DEL in either is refused as
// malformed, never cut or cleaned into another principal.
func TestReview34GatewayHeadersPrintableEdges(t *testing.T) {
	tests := []struct {
		name, sub, role string
		want            string // "subject roles", or "" for a refusal
	}{
		{"subject_1024_bytes", strings.Repeat("a", 1024), "user", strings.Repeat("a", 1024) + " user"},
		{"subject_1025_bytes", strings.Repeat("a", 1025), "user", ""},
		{"role_16384_bytes", "ann", strings.Repeat("r", 16384), "ann " + strings.Repeat("r", 16384)},
		{"role_16385_bytes", "ann", strings.Repeat("r", 16385), ""},
		{"space_and_tilde", "ann ~x", " a b ,~", "ann ~x a b,~"},
		{"subject_unit_separator", "ann\x1f", "user", ""},
		{"subject_tab", "ann\tx", "user", ""},
		{"subject_del", "ann\x7f", "user", ""},
		{"subject_del_first", "\x7fann", "user", ""},
		{"role_newline_first", "ann", "\nuser", ""},
		{"role_unit_separator", "ann", "user\x1f", ""},
		{"role_del", "ann", "user\x7f", ""},
		{"subject_non_ascii", "ann\u00e9", "user", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req("echo", "{}")
			r.Extra = &mcp.RequestExtra{Header: map[string][]string{token.HeaderSubject: {tt.sub}, token.HeaderRole: {tt.role}}}
			id, err := mcpguard.FromGatewayHeaders(nil).Authenticate(context.Background(), r)
			if tt.want == "" {
				if !errors.Is(err, mcpguard.ErrUnauthenticated) || id != nil {
					t.Fatalf("got %v, %v; want an UNAUTHENTICATED refusal", id, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := id.Principal.Subject + " " + strings.Join(id.Principal.Roles, ","); got != tt.want {
				t.Errorf("principal = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReview34LaunchIdentityRefusals pins FromToken and FromEnv: the launching identity (the
// token's principal and its credential) is given to calls without HTTP (no headers, no
// TokenInfo, a context of no HTTP request), and refused over HTTP whichever sign of it the call
// shows; a missing token and an unknown one are refused, the refusal saying which.
func TestReview34LaunchIdentityRefusals(t *testing.T) {
	tab, err := token.New(map[string]*policy.Principal{"tok-a": {Subject: "a", Roles: []string{"user"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("REVIEW34_TOKEN", "tok-a")
	t.Setenv("REVIEW34_UNKNOWN", "tok-z")
	bg := context.Background()
	tests := []struct {
		name  string
		authn mcpguard.Authenticator
		ctx   context.Context
		extra *mcp.RequestExtra
		want  string // the refusal's message, or "" for the identity of tok-a
	}{
		{"token", mcpguard.FromToken("tok-a", tab), bg, nil, ""},
		{"env", mcpguard.FromEnv("REVIEW34_TOKEN", tab), bg, nil, ""},
		{"empty_extra", mcpguard.FromToken("tok-a", tab), bg, &mcp.RequestExtra{}, ""},
		{"empty_token", mcpguard.FromToken("", tab), bg, nil, "the token given to FromToken is empty"},
		{"unknown_token", mcpguard.FromToken("tok-z", tab), bg, nil, "the token given to FromToken is not in the token table"},
		{"env_unset", mcpguard.FromEnv("REVIEW34_UNSET", tab), bg, nil, "environment variable REVIEW34_UNSET is not set"},
		{"env_unknown", mcpguard.FromEnv("REVIEW34_UNKNOWN", tab), bg, nil, "environment variable REVIEW34_UNKNOWN holds an unknown token"},
		{"headers", mcpguard.FromToken("tok-a", tab), bg, &mcp.RequestExtra{Header: http.Header{}}, overHTTP},
		{"token_info", mcpguard.FromToken("tok-a", tab), bg, &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "a"}}, overHTTP},
		{"server_context", mcpguard.FromToken("tok-a", tab), context.WithValue(bg, http.ServerContextKey, &http.Server{}), nil, overHTTP},
		{"local_addr_context", mcpguard.FromToken("tok-a", tab), context.WithValue(bg, http.LocalAddrContextKey, &net.TCPAddr{}), nil, overHTTP},
		{"unknown_over_http", mcpguard.FromToken("tok-z", tab), bg, &mcp.RequestExtra{Header: http.Header{}}, overHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req("echo", "{}")
			r.Extra = tt.extra
			id, err := tt.authn.Authenticate(tt.ctx, r)
			checkAuthenticated(t, id, err, tt.want)
		})
	}
}

const overHTTP = "the launching identity is not available over HTTP"

// checkAuthenticated checks an Authenticate answer: refused as UNAUTHENTICATED
// with the message want, or, with want empty, subject "a" with credential tok-a.
func checkAuthenticated(t *testing.T, id *mcpguard.Identity, err error, want string) {
	t.Helper()
	if want != "" {
		var de *mcpguard.DenialError
		if !errors.As(err, &de) || de.Code != mcpguard.CodeUnauthenticated || de.Message != want || id != nil {
			t.Fatalf("got %v, %v; want UNAUTHENTICATED: %s", id, err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if id.Principal.Subject != "a" || id.Credential.Reveal() != "tok-a" {
		t.Errorf("identity = %s with credential %q, want a with tok-a", id.Principal.Subject, id.Credential.Reveal())
	}
}

// TestReview34AuthorizeUnknownLooksLikeSDK pins the stand-alone Authorize's answer to a tool
// the policy does not know and to one the caller may not see: the JSON-RPC error the go-sdk
// sends for a tool it does not have (code -32602, `unknown tool "name"`), the same for both, and
// the handler does not run.
func TestReview34AuthorizeUnknownLooksLikeSDK(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"no_such_tool", "admin_stats"} {
		t.Run(name, func(t *testing.T) {
			s := &stub{}
			ctx := mcpguard.NewContext(context.Background(), bob)
			res, err := mcpguard.Authorize(pol)(s.handle)(ctx, req(name, "{}"))
			var we *jsonrpc.Error
			if !errors.As(err, &we) || res != nil {
				t.Fatalf("got %v, %v; want a JSON-RPC error", res, err)
			}
			want := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "` + name + `"`}
			if we.Code != want.Code || we.Message != want.Message || we.Data != nil {
				t.Errorf("error = %d %q (data %s), want %d %q", we.Code, we.Message, we.Data, want.Code, want.Message)
			}
			if s.ran != 0 {
				t.Errorf("handler ran %d times", s.ran)
			}
		})
	}
}

// TestReview34AuditRecordsProtocolErrors pins how the Audit middleware records a JSON-RPC
// error from below: by the mcpguard code in its data when that is one of the contract's (a step
// in protocol-error mode), as TOOL_NOT_FOUND for an unknown tool's, and otherwise as INTERNAL
// with detail "protocol error", whatever JSON object a handler's error carries as data.
func TestReview34AuditRecordsProtocolErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        *jsonrpc.Error
		code, want string // want: the record's detail
	}{
		{"contract_code", &jsonrpc.Error{Code: -32029, Message: "slow down", Data: json.RawMessage(`{"code":"RATE_LIMIT_EXCEEDED","message":"slow down"}`)}, "RATE_LIMIT_EXCEEDED", ""},
		{"data_without_code", &jsonrpc.Error{Code: -32000, Message: "busy", Data: json.RawMessage(`{"reason":"busy"}`)}, "INTERNAL", "protocol error"},
		{"data_other_code", &jsonrpc.Error{Code: -32000, Message: "busy", Data: json.RawMessage(`{"code":"BUSY"}`)}, "INTERNAL", "protocol error"},
		{"data_not_json", &jsonrpc.Error{Code: -32000, Message: "busy", Data: json.RawMessage(`"code"`)}, "INTERNAL", "protocol error"},
		{"no_data", &jsonrpc.Error{Code: -32000, Message: "busy"}, "INTERNAL", "protocol error"},
		{"unknown_tool", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "x"`}, "TOOL_NOT_FOUND", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &memSink{}
			s := &stub{err: tt.err}
			_, err := mustAudit(t, sink, &mcpguard.Options{Logger: quiet})(s.handle)(context.Background(), req("echo", "{}"))
			if err != tt.err {
				t.Errorf("error = %v, want the handler's", err)
			}
			evs := sink.all()
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			if e := evs[0]; e.Allowed || e.Code != tt.code || e.Detail != tt.want {
				t.Errorf("record: allowed %v, code %q, detail %q; want code %q, detail %q", e.Allowed, e.Code, e.Detail, tt.code, tt.want)
			}
		})
	}
}

// TestReview34BearerTokensRefusals pins BearerTokens' answers: the principal of a known token,
// with it as the credential; UNAUTHENTICATED for a call without headers (stdio, in memory: no
// RequestExtra at all, or one without headers), without a bearer token, or with an unknown one.
func TestReview34BearerTokensRefusals(t *testing.T) {
	tab, err := token.New(map[string]*policy.Principal{"tok-a": {Subject: "a", Roles: []string{"user"}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		extra *mcp.RequestExtra
		want  string // the refusal's message, or "" for the identity of tok-a
	}{
		{"known", &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer tok-a"}}}, ""},
		{"scheme_case", &mcp.RequestExtra{Header: http.Header{"Authorization": {"bearer tok-a"}}}, ""},
		{"no_extra", nil, "no bearer token"},
		{"no_headers", &mcp.RequestExtra{}, "no bearer token"},
		{"other_scheme", &mcp.RequestExtra{Header: http.Header{"Authorization": {"Basic tok-a"}}}, "no bearer token"},
		{"unknown", &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer tok-z"}}}, "invalid bearer token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req("echo", "{}")
			r.Extra = tt.extra
			id, err := mcpguard.BearerTokens(tab).Authenticate(context.Background(), r)
			checkAuthenticated(t, id, err, tt.want)
		})
	}
}

package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review41bConn gives an in-memory server connection the session id id.
type review41bConn struct {
	mcp.Connection
	id string
}

func (c review41bConn) SessionID() string { return c.id }

type review41bTransport struct {
	t  mcp.Transport
	id string
}

func (t review41bTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return review41bConn{c, t.id}, nil
}

// review41bSession returns a server session with the id id ("" for none)
// that a client named "review41b-client" opened on protocol 2025-11-25.
func review41bSession(t *testing.T, id string) *mcp.ServerSession {
	t.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, review41bTransport{st, id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "review41b-client", Version: "1"}, nil).
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return ss
}

// TestReview41bRequestIDCharacters pins which header values requestID
// takes for a request id: exactly one value of 1 to 128 bytes, each a
// letter, a digit or one of ". _ : -", the first byte included.
func TestReview41bRequestIDCharacters(t *testing.T) {
	const name = "X-Request-Id"
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"letters_digits_edges", []string{"azAZ09"}, "azAZ09"},
		{"punctuation", []string{"._:-"}, "._:-"},
		{"first_byte_a", []string{"a"}, "a"},
		{"first_byte_z", []string{"z"}, "z"},
		{"first_byte_A", []string{"A"}, "A"},
		{"first_byte_Z", []string{"Z"}, "Z"},
		{"first_byte_0", []string{"0"}, "0"},
		{"first_byte_9", []string{"9"}, "9"},
		{"first_byte_dot", []string{"."}, "."},
		{"first_byte_underscore", []string{"_"}, "_"},
		{"first_byte_colon", []string{":"}, ":"},
		{"first_byte_hyphen", []string{"-"}, "-"},
		{"backquote_before_a", []string{"`"}, ""},
		{"brace_after_z", []string{"{"}, ""},
		{"at_before_A", []string{"@"}, ""},
		{"bracket_after_Z", []string{"["}, ""},
		{"slash_before_0", []string{"/"}, ""},
		{"semicolon_after_colon", []string{";"}, ""},
		{"comma", []string{","}, ""},
		{"bad_first_byte", []string{"<ab"}, ""},
		{"bad_last_byte", []string{"ab<"}, ""},
		{"empty_value", []string{""}, ""},
		{"two_values", []string{"a", "b"}, ""},
		{"no_value", nil, ""},
		{"max_length", []string{strings.Repeat("a", 128)}, strings.Repeat("a", 128)},
		{"over_max_length", []string{strings.Repeat("a", 129)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: http.Header{name: tt.values}}}
			if got := requestID(req, name); got != tt.want {
				t.Errorf("requestID(%q) = %q, want %q", tt.values, got, tt.want)
			}
		})
	}
	t.Run("no_header_name", func(t *testing.T) {
		req := &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: http.Header{"": {"a"}}}}
		if got := requestID(req, ""); got != "" {
			t.Errorf(`requestID with header name "" = %q, want ""`, got)
		}
	})
	t.Run("no_request_or_extra", func(t *testing.T) {
		if got := requestID(nil, name); got != "" {
			t.Errorf("requestID(nil) = %q, want \"\"", got)
		}
		if got := requestID(&mcp.CallToolRequest{}, name); got != "" {
			t.Errorf("requestID without Extra = %q, want \"\"", got)
		}
	})
}

// TestReview41bCheckHeaderName pins which RequestIDHeader names
// checkHeaderName refuses: a control byte, a space, DEL or a byte over
// 0x7f, or a separator, anywhere in the name (the first byte included).
func TestReview41bCheckHeaderName(t *testing.T) {
	tests := []struct {
		name   string
		header string
		ok     bool
	}{
		{"empty", "", true},
		{"plain", "X-Request-Id", true},
		{"bang_after_space", "!", true},
		{"tilde_before_del", "~", true},
		{"space", "X Request", false},
		{"control", "X\x01", false},
		{"del", "X\x7f", false},
		{"high_byte", "X\x80", false},
		{"quote_first", `"a`, false},
		{"paren_first", "(a", false},
		{"close_brace_last", "a}", false},
		{"colon", "a:b", false},
		{"space_first", " a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkHeaderName(tt.header)
			if (err == nil) != tt.ok {
				t.Errorf("checkHeaderName(%q) = %v, want ok %v", tt.header, err, tt.ok)
			}
		})
	}
}

// TestReview41bLimitDenial pins the denial of each limiter decision: a
// failed decision (a store down or another error, with no limit named)
// and each kind of limit, with and without a wait that helps.
func TestReview41bLimitDenial(t *testing.T) {
	details := func(scope, kind string) map[string]any { return map[string]any{"scope": scope, "limit": kind} }
	tests := []struct {
		name string
		d    limiter.Decision
		want *DenialError
	}{
		{"store_down", limiter.Decision{Err: fmt.Errorf("redis: %w", limiter.ErrStoreUnavailable)},
			&DenialError{Code: CodeRateLimitExceeded, Message: "the rate limiter is unavailable; try again shortly", RetryAfter: time.Second}},
		{"other_error", limiter.Decision{Err: errors.New("bad request")},
			&DenialError{Code: CodeInternal, Message: "the call could not be rate limited"}},
		{"error_with_limit", limiter.Decision{Err: errors.New("x"), Limit: limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute}, RetryAfter: 3 * time.Second},
			&DenialError{Code: CodeRateLimitExceeded, Message: "rate limit per user reached (60 calls per 1m)", RetryAfter: 3 * time.Second, Details: details("user", "rate")}},
		{"rate_wait", limiter.Decision{Limit: limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: 90 * time.Second}, RetryAfter: 2 * time.Second},
			&DenialError{Code: CodeRateLimitExceeded, Message: "rate limit per session reached (5 calls per 1m30s)", RetryAfter: 2 * time.Second, Details: details("session", "rate")}},
		{"rate_never", limiter.Decision{Limit: limiter.Limit{Kind: limiter.Rate, Scope: limiter.Global, Max: 1000000, Window: time.Hour}},
			&DenialError{Code: CodeRateLimitExceeded, Message: "global rate limit reached (1000000 calls per 1h)", RetryAfter: -1, Details: details("global", "rate")}},
		{"spend_wait", limiter.Decision{Limit: limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 2.5, Window: 24 * time.Hour}, RetryAfter: time.Minute},
			&DenialError{Code: CodeSpendLimitExceeded, Message: "spend limit per user reached (2.5 units per 24h)", RetryAfter: time.Minute, Details: details("user", "spend")}},
		{"spend_never", limiter.Decision{Limit: limiter.Limit{Kind: limiter.Spend, Scope: limiter.User}},
			&DenialError{Code: CodeSpendLimitExceeded, Message: "this call costs more than the spend limit allows", RetryAfter: -1, Details: details("user", "spend")}},
		{"concurrency", limiter.Decision{Limit: limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 3}},
			&DenialError{Code: CodeConcurrencyLimitExceeded, Message: "concurrency limit per session reached (3 calls in flight)", Details: details("session", "concurrency")}},
		{"one_tool", limiter.Decision{Limit: limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Tool: "refund", Max: 10, Window: time.Hour}, RetryAfter: time.Second},
			&DenialError{Code: CodeRateLimitExceeded, Message: `rate limit per user of tool "refund" reached (10 calls per 1h)`, RetryAfter: time.Second, Details: details("user", "rate")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, limitDenial(tt.d)); diff != "" {
				t.Errorf("limitDenial(%+v) (-want +got):\n%s", tt.d, diff)
			}
		})
	}
}

// TestReview41bSessionKey pins the limiter key of a call's session: the
// Options.SessionKey function's, else the MCP session's id ("sid:"), else the
// user's, else the session's address.
func TestReview41bSessionKey(t *testing.T) {
	named := review41bSession(t, "sess-1")
	unnamed := review41bSession(t, "")
	alice := &Identity{Principal: &policy.Principal{Subject: "alice"}}
	nobody := &Identity{Principal: &policy.Principal{}}
	tests := []struct {
		name string
		fn   func(*mcp.CallToolRequest, *Identity) string
		ss   *mcp.ServerSession
		id   *Identity
		want string
	}{
		{"options_function", func(*mcp.CallToolRequest, *Identity) string { return "mine" }, named, alice, "mine"},
		{"session_id", nil, named, alice, "sid:sess-1"},
		{"user_without_session_id", nil, unnamed, alice, "user:alice"},
		{"user_without_session", nil, nil, alice, "user:alice"},
		{"no_session_nobody", nil, nil, nobody, "session:0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Guard{opts: Options{SessionKey: tt.fn}}
			if got := g.sessionKey(&mcp.CallToolRequest{Session: tt.ss}, tt.id); got != tt.want {
				t.Errorf("sessionKey = %q, want %q", got, tt.want)
			}
		})
	}
	// A session with neither an id nor a user is known by the session
	// object: its own key, the same on every call.
	t.Run("session_object", func(t *testing.T) {
		other := review41bSession(t, "")
		g := &Guard{}
		k1 := g.sessionKey(&mcp.CallToolRequest{Session: unnamed}, nobody)
		k2 := g.sessionKey(&mcp.CallToolRequest{Session: other}, nobody)
		if k1 == k2 || k1 != g.sessionKey(&mcp.CallToolRequest{Session: unnamed}, nobody) || !strings.HasPrefix(k1, "session:") {
			t.Errorf("keys of two sessions %q and %q: want two stable keys, each \"session:...\"", k1, k2)
		}
	})
}

// TestReview41bBound pins which sessions bound takes for bound to their
// caller: none (a direct call), one without headers outside an HTTP
// request (stdio, in memory), one with headers but no id (stateless), and
// one with an id that a guard saw opened by the subject the gateway names
// or by the verified user the request carries; not one with headers whose
// opening no guard saw, nor one without headers inside an HTTP request
// (the go-sdk's SSE transport).
func TestReview41bBound(t *testing.T) {
	named := review41bSession(t, "sess-1")
	unnamed := review41bSession(t, "")
	httpCtx := context.WithValue(context.Background(), http.ServerContextKey, &http.Server{})
	opened := func(op opener) context.Context {
		return context.WithValue(context.Background(), openersKey{}, &openers{m: map[weak.Pointer[mcp.ServerSession]]opener{weak.Make(named): op}})
	}
	hdr := func(sub string) http.Header {
		h := http.Header{"Accept": {"*/*"}}
		if sub != "" {
			h.Set(token.HeaderSubject, sub)
		}
		return h
	}
	user := func(u string) *auth.TokenInfo { return &auth.TokenInfo{UserID: u} }
	tests := []struct {
		name  string
		ctx   context.Context
		ss    *mcp.ServerSession
		extra *mcp.RequestExtra
		want  bool
	}{
		{"no_session", httpCtx, nil, nil, true},
		{"no_extra_outside_http", context.Background(), named, nil, true},
		{"no_extra_inside_http", httpCtx, named, nil, false},
		{"no_header_outside_http", context.Background(), named, &mcp.RequestExtra{}, true},
		{"no_header_inside_http", httpCtx, named, &mcp.RequestExtra{}, false},
		{"headers_no_session_id", httpCtx, unnamed, &mcp.RequestExtra{Header: hdr("")}, true},
		{"opening_not_seen", context.Background(), named, &mcp.RequestExtra{Header: hdr("alice"), TokenInfo: user("alice")}, false},
		{"gateway_subject_matches", opened(opener{subject: "alice"}), named, &mcp.RequestExtra{Header: hdr("alice")}, true},
		{"gateway_subject_differs", opened(opener{subject: "alice"}), named, &mcp.RequestExtra{Header: hdr("bob")}, false},
		{"no_subject_opened_without", opened(opener{user: "u1"}), named, &mcp.RequestExtra{Header: hdr("")}, false},
		{"user_matches", opened(opener{user: "u1"}), named, &mcp.RequestExtra{Header: hdr(""), TokenInfo: user("u1")}, true},
		{"user_differs", opened(opener{user: "u1"}), named, &mcp.RequestExtra{Header: hdr(""), TokenInfo: user("u2")}, false},
		{"user_without_token", opened(opener{user: "u1"}), named, &mcp.RequestExtra{Header: hdr("")}, false},
		{"subject_opener_empty_user", opened(opener{subject: "alice"}), named, &mcp.RequestExtra{Header: hdr("bob"), TokenInfo: user("")}, false},
		{"user_opener_subject_differs", opened(opener{user: "u1", subject: "alice"}), named, &mcp.RequestExtra{Header: hdr("bob"), TokenInfo: user("u1")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &mcp.CallToolRequest{Session: tt.ss, Extra: tt.extra}
			if got := bound(tt.ctx, req); got != tt.want {
				t.Errorf("bound = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReview41bBuildEvent pins the audit record buildEvent makes of a
// call: each field from where it comes, the intent's cost and verdict,
// the outcome's, the session id's sources in order, and the fields a tool
// records verbatim (only of arguments that passed validation, only those
// present).
func TestReview41bBuildEvent(t *testing.T) {
	named := review41bSession(t, "sess-1")
	unnamed := review41bSession(t, "")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := start.Add(1500 * time.Microsecond)
	raw := json.RawMessage(`{"a":1,"b":"x"}`)
	sum := audit.ArgsSHA256(raw)
	alice := &Identity{Principal: &policy.Principal{Subject: "alice", Roles: []string{"admin"}}}
	rule := &policy.ToolRule{Name: "wipe", Class: policy.Write}
	base := func() *call {
		return &call{start: start, corr: "corr-1", name: "wipe", id: alice, rule: rule, raw: raw, valid: true,
			charged: 2.5, detail: "why", requestID: "req-1"}
	}
	full := audit.Event{Time: now, CorrelationID: "corr-1", ParentID: "parent-1", RequestID: "req-1",
		Tool: "wipe", Class: "write", Phase: audit.PhaseOutcome, Allowed: true, Cost: 2.5, Detail: "why",
		ArgsSHA256: sum, LatencyMS: 1.5, Subject: "alice", Roles: []string{"admin"}, SessionID: "sess-1",
		ProtocolVersion: "2025-11-25", ClientName: "review41b-client"}
	tests := []struct {
		name   string
		edit   func(c *call)
		ss     *mcp.ServerSession
		noReq  bool
		record []string
		phase  audit.Phase
		want   func(ev *audit.Event)
	}{
		{"outcome_allowed", nil, named, false, nil, audit.PhaseOutcome, func(*audit.Event) {}},
		{"outcome_denied", func(c *call) { c.denial = Deny(CodeForbidden, "no") }, named, false, nil, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.Allowed, ev.Code = false, "FORBIDDEN" }},
		{"intent", nil, named, false, nil, audit.PhaseIntent,
			func(ev *audit.Event) { ev.Phase, ev.Cost = audit.PhaseIntent, 0 }},
		{"no_identity", func(c *call) { c.id = nil }, named, false, nil, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.Subject, ev.Roles = "", nil }},
		{"identity_without_principal", func(c *call) { c.id = &Identity{} }, named, false, nil, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.Subject, ev.Roles = "", nil }},
		{"no_rule", func(c *call) { c.rule = nil }, named, false, nil, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.Class = "" }},
		{"session_key_replaced_by_id", func(c *call) { c.session = "key-1" }, named, false, nil, audit.PhaseOutcome,
			func(*audit.Event) {}},
		{"session_key_without_id", func(c *call) { c.session = "key-1" }, unnamed, false, nil, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.SessionID = "key-1" }},
		{"session_key_without_session", func(c *call) { c.session = "key-1" }, nil, false, nil, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.SessionID, ev.ProtocolVersion, ev.ClientName = "key-1", "", "" }},
		{"session_key_without_request", func(c *call) { c.session = "key-1" }, nil, true, nil, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.SessionID, ev.ProtocolVersion, ev.ClientName = "key-1", "", "" }},
		{"recorded_fields", nil, named, false, []string{"b", "missing"}, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.Args = map[string]any{"b": "x"} }},
		{"one_recorded_field", nil, named, false, []string{"a"}, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.Args = map[string]any{"a": json.Number("1")} }},
		{"recorded_fields_of_invalid_arguments", func(c *call) { c.valid = false }, named, false, []string{"b"}, audit.PhaseOutcome,
			func(*audit.Event) {}},
		{"recorded_fields_of_no_object", func(c *call) { c.raw = json.RawMessage(`[1]`) }, named, false, []string{"b"}, audit.PhaseOutcome,
			func(ev *audit.Event) { ev.ArgsSHA256 = audit.ArgsSHA256(json.RawMessage(`[1]`)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			if tt.edit != nil {
				tt.edit(c)
			}
			var req *mcp.CallToolRequest
			if !tt.noReq {
				req = &mcp.CallToolRequest{Session: tt.ss}
			}
			var got audit.Event
			buildEvent(&got, now, tt.record, req, c, "parent-1", tt.phase)
			want := full
			want.Roles = append([]string(nil), full.Roles...)
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("buildEvent (-want +got):\n%s", diff)
			}
		})
	}
}

// review41bCost returns a Cost function that costs cost, or fails.
func review41bCost(cost float64, fail bool) func(map[string]any) (float64, error) {
	return func(map[string]any) (float64, error) {
		if fail {
			return 0, errors.New("cost failed")
		}
		return cost, nil
	}
}

// TestReview41bToolOptions pins the options toolOptions gives a call: its
// name's own when its rule is its name's or the default's; for a name that
// equals a rule's only under case folding, a dry run when either name asks
// for one and the larger of the two costs, each its Cost function's or else
// its rule's (the folded name's combined rule's, the other's own rule's),
// either failing or giving a cost below zero failing it.
func TestReview41bToolOptions(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "wipe", Class: policy.Write, Cost: 3}},
		WriteAllowlist: []string{"wipe"},
		Default:        &policy.ToolRule{Class: policy.Write, Cost: 6},
	})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(name string) *policy.ToolRule {
		r, ok := pol.Resolve(name)
		if !ok {
			t.Fatalf("Resolve(%q): no rule", name)
		}
		return r
	}
	type result struct {
		DryRun, NoCost, Failed bool
		Cost                   float64
	}
	tests := []struct {
		name  string
		call  string
		tools map[string]ToolOptions
		want  result
	}{
		{"own_name", "wipe", map[string]ToolOptions{"wipe": {Cost: review41bCost(1, false)}, "WIPE": {DryRun: true}}, result{Cost: 1}},
		{"default_rule", "other", map[string]ToolOptions{"other": {Cost: review41bCost(1, false)}}, result{Cost: 1}},
		{"default_rule_no_cost", "other", map[string]ToolOptions{"": {DryRun: true, Cost: review41bCost(9, false)}}, result{NoCost: true}},
		{"folded_no_options", "WIPE", nil, result{NoCost: true}},
		{"folded_dry_run_of_other", "WIPE", map[string]ToolOptions{"wipe": {DryRun: true}}, result{DryRun: true, NoCost: true}},
		{"folded_dry_run_of_own", "WIPE", map[string]ToolOptions{"WIPE": {DryRun: true}}, result{DryRun: true, NoCost: true}},
		{"folded_own_cost_below_other_rule", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(1, false)}}, result{Cost: 3}},
		{"folded_own_cost_above_other_rule", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(4, false)}}, result{Cost: 4}},
		{"folded_other_cost_below_own_rule", "WIPE", map[string]ToolOptions{"wipe": {Cost: review41bCost(4, false)}}, result{Cost: 6}},
		{"folded_other_cost_above_own_rule", "WIPE", map[string]ToolOptions{"wipe": {Cost: review41bCost(7, false)}}, result{Cost: 7}},
		{"folded_both_own_larger", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(8, false)}, "wipe": {Cost: review41bCost(2, false)}}, result{Cost: 8}},
		{"folded_both_other_larger", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(2, false)}, "wipe": {Cost: review41bCost(8, false)}}, result{Cost: 8}},
		{"folded_own_fails", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(1, true)}, "wipe": {Cost: review41bCost(2, false)}}, result{Failed: true}},
		{"folded_other_fails", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(1, false)}, "wipe": {Cost: review41bCost(2, true)}}, result{Failed: true}},
		{"folded_own_negative", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(-1, false)}, "wipe": {Cost: review41bCost(2, false)}}, result{Failed: true}},
		{"folded_other_negative", "WIPE", map[string]ToolOptions{"WIPE": {Cost: review41bCost(2, false)}, "wipe": {Cost: review41bCost(-1, false)}}, result{Failed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Guard{opts: Options{Tools: tt.tools}}
			o := g.toolOptions(pol, &call{name: tt.call, rule: resolve(tt.call)})
			got := result{DryRun: o.DryRun, NoCost: o.Cost == nil}
			if o.Cost != nil {
				cost, err := o.Cost(nil)
				got.Failed = err != nil
				if err == nil {
					got.Cost = cost
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("toolOptions of %q (-want +got):\n%s", tt.call, diff)
			}
		})
	}
}

// TestReview41bDeny pins what deny records and answers: the denial's own
// words as the record's detail unless the call has one already or the
// words are the caller's (invalid arguments), an authenticator's or an
// unknown tool's; the denial with the call's correlation id as a tool
// error, or as a JSON-RPC error with ProtocolErrors; an unknown tool as
// the go-sdk's own JSON-RPC error, with NotFoundCode.
func TestReview41bDeny(t *testing.T) {
	type answer struct {
		Detail      string
		Result      bool
		Code        Code
		Message     string
		Correlation string
		WireCode    int64
		WireMessage string
	}
	tests := []struct {
		name   string
		opts   Options
		detail string
		d      *DenialError
		want   answer
	}{
		{"forbidden", Options{}, "", Deny(CodeForbidden, "not for you"),
			answer{Detail: "not for you", Result: true, Code: CodeForbidden, Message: "not for you", Correlation: "corr-1"}},
		{"forbidden_detail_kept", Options{}, "earlier", Deny(CodeForbidden, "not for you"),
			answer{Detail: "earlier", Result: true, Code: CodeForbidden, Message: "not for you", Correlation: "corr-1"}},
		{"invalid_arguments", Options{}, "", Deny(CodeInvalidArguments, "field x"),
			answer{Result: true, Code: CodeInvalidArguments, Message: "field x", Correlation: "corr-1"}},
		{"unauthenticated", Options{}, "", Deny(CodeUnauthenticated, "who"),
			answer{Result: true, Code: CodeUnauthenticated, Message: "who", Correlation: "corr-1"}},
		{"rate_limited", Options{}, "", Deny(CodeRateLimitExceeded, "slow down"),
			answer{Detail: "slow down", Result: true, Code: CodeRateLimitExceeded, Message: "slow down", Correlation: "corr-1"}},
		{"protocol_error", Options{ProtocolErrors: true}, "", Deny(CodeForbidden, "not for you"),
			answer{Detail: "not for you", Code: CodeForbidden, Message: "not for you", Correlation: "corr-1", WireCode: -32001, WireMessage: "not for you"}},
		{"not_found", Options{}, "", notFound("gone"),
			answer{WireCode: jsonrpc.CodeInvalidParams, WireMessage: `unknown tool "gone"`}},
		{"not_found_own_code", Options{NotFoundCode: -32099, ProtocolErrors: true}, "", notFound("gone"),
			answer{WireCode: -32099, WireMessage: `unknown tool "gone"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Guard{opts: tt.opts}
			c := &call{name: "gone", corr: "corr-1", detail: tt.detail}
			res, err := g.deny(c, tt.d)
			if c.denial != tt.d {
				t.Errorf("call's denial = %+v, want %+v", c.denial, tt.d)
			}
			got := answer{Detail: c.detail, Result: res != nil}
			if de, ok := DenialOf(res, err); ok {
				got.Code, got.Message, got.Correlation = de.Code, de.Message, de.CorrelationID
			}
			var we *jsonrpc.Error
			if errors.As(err, &we) {
				got.WireCode, got.WireMessage = we.Code, we.Message
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("deny (-want +got):\n%s", diff)
			}
			if tt.d.CorrelationID != "" {
				t.Errorf("deny set the correlation id of the denial it was given: %q", tt.d.CorrelationID)
			}
		})
	}
}

// review41bPolicy returns the policy of cfg, failing the test on an error.
func review41bPolicy(t *testing.T, cfg policy.Config) *policy.Policy {
	t.Helper()
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReview41bRedecide pins how redecide decides a call once more: by
// the rule that decided it, nothing (its arguments were checked then);
// else each refusal of the new policy as its own code and reason, an
// unknown or hidden tool as one the guard does not know, and the new
// rule's argument limits, the first one included.
func TestReview41bRedecide(t *testing.T) {
	limits := []policy.ArgLimit{{Field: "amount", Max: 10}}
	old := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read, Roles: []string{"payer"}, ArgLimits: limits}}, ShowForbidden: true})
	same := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read, Roles: []string{"payer"}}}})
	limited := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read, ArgLimits: limits}}})
	admins := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read, Roles: []string{"admin"}}}, ShowForbidden: true})
	hidden := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read, Roles: []string{"admin"}}}})
	gone := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "other", Class: policy.Read}}})
	writes := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}})
	rule, ok := old.Resolve("pay")
	if !ok {
		t.Fatal("no rule for pay")
	}
	payer := &Identity{Principal: &policy.Principal{Subject: "bob", Roles: []string{"payer"}}}
	nobody := &Identity{Principal: &policy.Principal{Subject: "eve"}}
	tests := []struct {
		name    string
		p       *policy.Policy
		id      *Identity
		args    map[string]any
		want    *DenialError
		wantWhy string
	}{
		{"same_rule_arguments_not_checked_again", old, payer, map[string]any{"amount": 20.0}, nil, ""},
		{"same_rule_now_refused", old, nobody, nil, Deny(CodeForbidden, "caller lacks a required role"), "caller lacks a required role"},
		{"new_rule_allows", same, payer, map[string]any{"amount": 20.0}, nil, ""},
		{"new_rule_forbids", admins, payer, nil, Deny(CodeForbidden, "caller lacks a required role"), "caller lacks a required role"},
		{"new_rule_hides", hidden, payer, nil, notFound("pay"), "unknown tool"},
		{"tool_gone", gone, payer, nil, notFound("pay"), "unknown tool"},
		{"now_a_write", writes, payer, nil, Deny(CodeWriteNotAllowed, `tool "pay" is a write tool and is not on the write allowlist`), "write tool is not on the write allowlist"},
		{"new_arg_limit_exceeded", limited, payer, map[string]any{"amount": 20.0},
			Deny(CodeForbidden, "argument amount exceeds the limit for this caller"), "argument amount exceeds the limit for this caller"},
		{"new_arg_limit_met", limited, payer, map[string]any{"amount": 5.0}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &call{name: "pay", id: tt.id, rule: rule}
			d, why := redecide(tt.p, c, func() map[string]any { return tt.args })
			if diff := cmp.Diff(tt.want, d); diff != "" || why != tt.wantWhy {
				t.Errorf("redecide: reason %q, want %q; denial (-want +got):\n%s", why, tt.wantWhy, diff)
			}
		})
	}
}

// TestReview41bRecheck pins that recheck records, as the call's detail,
// why the policy of the moment refused a call, and leaves the detail of a
// call it allows alone.
func TestReview41bRecheck(t *testing.T) {
	old := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read}}})
	rule, _ := old.Resolve("pay")
	tests := []struct {
		name       string
		now        *policy.Policy
		wantCode   Code
		wantDetail string
	}{
		{"allowed", old, "", "before"},
		{"refused", review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read, Roles: []string{"admin"}}}, ShowForbidden: true}),
			CodeForbidden, "the policy changed while the user was asked: caller lacks a required role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Guard{}
			g.pol.Store(tt.now)
			c := &call{name: "pay", id: &Identity{Principal: &policy.Principal{Subject: "bob"}}, rule: rule, detail: "before", decoded: true}
			var code Code
			if d := g.recheck(c); d != nil {
				code = d.Code
			}
			if code != tt.wantCode || c.detail != tt.wantDetail {
				t.Errorf("recheck: code %q, detail %q; want %q, %q", code, c.detail, tt.wantCode, tt.wantDetail)
			}
		})
	}
}

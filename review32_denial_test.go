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

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var r32dQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// r32dWire is what a client sees of a denial: the result's JSON (IsError,
// content, structured content) or the JSON-RPC error's code, message, data.
func r32dWire(t *testing.T, res *mcp.CallToolResult, we *jsonrpc.Error) string {
	t.Helper()
	var b []byte
	var err error
	if res != nil {
		b, err = json.Marshal(res)
	} else {
		b, err = json.Marshal(we)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// r32dClientSide is res as a go-sdk client decodes it from the wire.
func r32dClientSide(t *testing.T, res *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestReview32DenialRoundTrip: DenialOf reads back every refusal
// DenialError.Result and DenialError.JSONRPCError write, as the server holds
// it, as a go-sdk client decodes it, and from its text alone, into a
// DenialError that writes the same JSON again and unwraps to its sentinel.
func TestReview32DenialRoundTrip(t *testing.T) {
	codes := []mcpguard.Code{
		mcpguard.CodeUnauthenticated, mcpguard.CodeForbidden, mcpguard.CodeWriteNotAllowed,
		mcpguard.CodeToolNotFound, mcpguard.CodeInvalidArguments, mcpguard.CodeConfirmationRequired,
		mcpguard.CodeRateLimitExceeded, mcpguard.CodeSpendLimitExceeded, mcpguard.CodeConcurrencyLimitExceeded,
		mcpguard.CodeInvalidResponse, mcpguard.CodeUpstreamUnavailable, mcpguard.CodeAuditUnavailable,
		mcpguard.CodeInternal,
	}
	details := map[string]any{"field": "/amount", "n": 3, "nested": map[string]any{"a": []any{1.5, "x", true, nil}}}
	var cases []*mcpguard.DenialError
	for _, c := range codes {
		for _, ra := range []time.Duration{0, 2500 * time.Millisecond, 7 * time.Second, -1} {
			cases = append(cases, &mcpguard.DenialError{Code: c, Message: "no: " + string(c), RetryAfter: ra})
		}
		cases = append(cases,
			&mcpguard.DenialError{Code: c},
			&mcpguard.DenialError{Code: c, Message: "m", CorrelationID: "cid-1", Details: details, RetryAfter: time.Hour},
			&mcpguard.DenialError{Code: c, Message: "unmarshalable details", Details: map[string]any{"ch": make(chan int)}},
		)
	}
	for _, e := range cases {
		name := fmt.Sprintf("%s/%q/%v/%d", e.Code, e.Message, e.RetryAfter, len(e.Details))
		want := e.Result()
		wantRPC := e.JSONRPCError(0)
		text := want.Content[0].(*mcp.TextContent).Text
		for how, got := range map[string]func() (*mcpguard.DenialError, bool){
			"server_result": func() (*mcpguard.DenialError, bool) { return mcpguard.DenialOf(e.Result(), nil) },
			"client_result": func() (*mcpguard.DenialError, bool) { return mcpguard.DenialOf(r32dClientSide(t, e.Result()), nil) },
			"text_only": func() (*mcpguard.DenialError, bool) {
				return mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil)
			},
			"rpc_error": func() (*mcpguard.DenialError, bool) {
				return mcpguard.DenialOf(nil, fmt.Errorf("calling %q: %w", "tools/call", e.JSONRPCError(0)))
			},
		} {
			d, ok := got()
			if !ok {
				t.Errorf("%s %s: DenialOf = false, want the denial %s", name, how, text)
				continue
			}
			if !errors.Is(d, e.Code.Sentinel()) {
				t.Errorf("%s %s: errors.Is(%v, sentinel) = false", name, how, d)
			}
			if diff := cmp.Diff(r32dWire(t, want, nil), r32dWire(t, d.Result(), nil)); diff != "" {
				t.Errorf("%s %s: Result (-want +got):\n%s", name, how, diff)
			}
			if diff := cmp.Diff(r32dWire(t, nil, wantRPC), r32dWire(t, nil, d.JSONRPCError(0))); diff != "" {
				t.Errorf("%s %s: JSONRPCError (-want +got):\n%s", name, how, diff)
			}
			retryable := e.Code.Retryable() && e.RetryAfter >= 0
			if got := d.Code.Retryable() && d.RetryAfter >= 0; got != retryable {
				t.Errorf("%s %s: retryable %v (RetryAfter %v), want %v", name, how, got, d.RetryAfter, retryable)
			}
		}
	}
}

// TestReview32DenialNotFooled: what is not a guard's refusal in the
// contract's shape is not a denial, and nothing panics.
func TestReview32DenialNotFooled(t *testing.T) {
	obj := func(fields string) string { return `{"error":{` + fields + `}}` }
	ok := `"code":"FORBIDDEN","message":"no","retryable":false`
	deep := strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40)
	deeper := strings.Repeat(`[`, 1000) + strings.Repeat("]", 1000)
	huge := `"` + strings.Repeat("x", 70<<10) + `"`
	texts := map[string]string{
		"unknown_code":           obj(`"code":"NOPE","message":"no","retryable":false`),
		"gateway_only_code":      obj(`"code":"INVALID_REQUEST","message":"no","retryable":false`),
		"lower_case_code":        obj(`"code":"forbidden","message":"no","retryable":false`),
		"numeric_code":           obj(`"code":-32001,"message":"no","retryable":false`),
		"no_code":                obj(`"message":"no","retryable":false`),
		"no_message":             obj(`"code":"FORBIDDEN","retryable":false`),
		"empty_message":          obj(`"code":"FORBIDDEN","message":"","retryable":false`),
		"numeric_message":        obj(`"code":"FORBIDDEN","message":7,"retryable":false`),
		"no_retryable":           obj(`"code":"FORBIDDEN","message":"no"`),
		"string_retryable":       obj(`"code":"FORBIDDEN","message":"no","retryable":"false"`),
		"retryable_forbidden":    obj(`"code":"FORBIDDEN","message":"no","retryable":true`),
		"negative_retry_after":   obj(ok + `,"retry_after_seconds":-1`),
		"fractional_retry_after": obj(ok + `,"retry_after_seconds":1.5`),
		"string_retry_after":     obj(ok + `,"retry_after_seconds":"3"`),
		"overflowing_retry":      obj(ok + `,"retry_after_seconds":1e300`),
		"beyond_duration":        obj(ok + `,"retry_after_seconds":9223372037`),
		"numeric_correlation":    obj(ok + `,"correlation_id":5`),
		"string_details":         obj(ok + `,"details":"x"`),
		"array_details":          obj(ok + `,"details":[1]`),
		"deep_details":           obj(ok + `,"details":` + deep),
		"very_deep_details":      obj(ok + `,"details":{"a":` + deeper + `}`),
		"huge_details":           obj(ok + `,"details":{"a":` + huge + `}`),
		"error_not_object":       `{"error":"FORBIDDEN"}`,
		"error_null":             `{"error":null}`,
		"no_error":               `{"code":"FORBIDDEN","message":"no","retryable":false}`,
		"not_json":               `FORBIDDEN: no`,
		"truncated":              obj(ok)[:20],
		"json_null":              `null`,
		"json_array":             `[` + obj(ok) + `]`,
		"empty":                  ``,
	}
	type tc struct {
		res *mcp.CallToolResult
		err error
	}
	cases := map[string]tc{
		"nothing":      {},
		"success":      {res: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}},
		"plain_error":  {err: errors.New("calling \"tools/call\": connection closed")},
		"nil_denial":   {err: fmt.Errorf("x: %w", (*mcpguard.DenialError)(nil))},
		"no_content":   {res: &mcp.CallToolResult{IsError: true}},
		"nil_text":     {res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{(*mcp.TextContent)(nil)}}},
		"image":        {res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.ImageContent{Data: []byte(obj(ok)), MIMEType: "image/png"}}}},
		"two_texts":    {res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: obj(ok)}, &mcp.TextContent{Text: obj(ok)}}}},
		"sc_struct":    {res: &mcp.CallToolResult{IsError: true, StructuredContent: struct{ Error any }{}, Content: []mcp.Content{&mcp.TextContent{Text: obj(ok)}}}},
		"sc_not_ours":  {res: &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"ok": true}, Content: []mcp.Content{&mcp.TextContent{Text: obj(ok)}}}},
		"sc_raw_array": {res: &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(`[1]`), Content: []mcp.Content{&mcp.TextContent{Text: obj(ok)}}}},
		"sc_raw_bad":   {res: &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(`{`)}},
		"sc_cycle": {res: func() *mcp.CallToolResult {
			m := map[string]any{"code": "FORBIDDEN", "message": "no", "retryable": false}
			m["details"] = m
			return &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"error": m}}
		}()},
		"rpc_no_data":      {err: fmt.Errorf("calling: %w", &jsonrpc.Error{Code: -32602, Message: `unknown tool "x"`})},
		"rpc_null_data":    {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`null`)}},
		"rpc_array_data":   {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`[{"code":"FORBIDDEN"}]`)}},
		"rpc_string_data":  {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`"FORBIDDEN"`)}},
		"rpc_bad_data":     {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`{"code":`)}},
		"rpc_no_message":   {err: &jsonrpc.Error{Code: -32001, Data: json.RawMessage(`{"code":"FORBIDDEN"}`)}},
		"rpc_unknown_code": {err: &jsonrpc.Error{Code: -32600, Message: "Invalid Request: x", Data: json.RawMessage(`{"code":"INVALID_REQUEST","correlation_id":"c"}`)}},
		"rpc_wrapped_body": {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(obj(ok))}},
		"rpc_huge":         {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`{"code":"FORBIDDEN","x":` + huge + `}`)}},
		"rpc_deep":         {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`{"code":"FORBIDDEN","x":` + deep + `}`)}},
	}
	for name, text := range texts {
		var sc any
		if json.Unmarshal([]byte(text), &sc) != nil {
			sc = nil
		}
		content := []mcp.Content{&mcp.TextContent{Text: text}}
		cases["text_"+name] = tc{res: &mcp.CallToolResult{IsError: true, Content: content}}
		if sc != nil {
			cases["sc_"+name] = tc{res: &mcp.CallToolResult{IsError: true, Content: content, StructuredContent: sc}}
			cases["raw_"+name] = tc{res: &mcp.CallToolResult{IsError: true, Content: content, StructuredContent: json.RawMessage(text)}}
		}
		// A tool's ordinary result holding a refusal's shape is its own.
		good := obj(ok + `,"correlation_id":"c"`)
		cases["ordinary_"+name] = tc{res: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: good}}, StructuredContent: json.RawMessage(good)}}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if d, ok := mcpguard.DenialOf(c.res, c.err); ok || d != nil {
				t.Errorf("DenialOf = %#v, %v; want nil, false", d, ok)
			}
		})
	}
	// The control: the well-formed one is a denial, in each form.
	good := obj(ok + `,"correlation_id":"c"`)
	var sc any
	json.Unmarshal([]byte(good), &sc)
	for _, res := range []*mcp.CallToolResult{
		{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: good}}},
		{IsError: true, StructuredContent: sc},
		{IsError: true, StructuredContent: json.RawMessage(good)},
	} {
		if d, ok := mcpguard.DenialOf(res, nil); !ok || d.Code != mcpguard.CodeForbidden || d.CorrelationID != "c" {
			t.Errorf("DenialOf(%s) = %v, %v; want FORBIDDEN, correlation id c", mustJSON(res), d, ok)
		}
	}
}

// TestReview32DenialStructuredFirst: when the structured content and the
// text disagree, the structured content decides; the text is read only
// without structured content.
func TestReview32DenialStructuredFirst(t *testing.T) {
	limit := &mcpguard.DenialError{Code: mcpguard.CodeRateLimitExceeded, Message: "slow down", RetryAfter: 3 * time.Second}
	forbid := mcpguard.Deny(mcpguard.CodeForbidden, "no")
	text := forbid.Result().Content
	mixed := limit.Result()
	mixed.Content = text
	for name, tc := range map[string]struct {
		res  *mcp.CallToolResult
		want mcpguard.Code
	}{
		"structured_wins":    {res: mixed, want: mcpguard.CodeRateLimitExceeded},
		"client_side":        {res: r32dClientSide(t, mixed), want: mcpguard.CodeRateLimitExceeded},
		"text_without_sc":    {res: &mcp.CallToolResult{IsError: true, Content: text}, want: mcpguard.CodeForbidden},
		"sc_not_a_denial":    {res: &mcp.CallToolResult{IsError: true, Content: text, StructuredContent: map[string]any{"error": "x"}}},
		"sc_bad_denial_text": {res: &mcp.CallToolResult{IsError: true, Content: text, StructuredContent: map[string]any{"error": map[string]any{"code": "FORBIDDEN"}}}},
	} {
		d, ok := mcpguard.DenialOf(tc.res, nil)
		if tc.want == "" {
			if ok {
				t.Errorf("%s: DenialOf = %v; want none", name, d)
			}
			continue
		}
		if !ok || d.Code != tc.want {
			t.Errorf("%s: DenialOf = %v, %v; want %s", name, d, ok, tc.want)
		}
	}
	if d, _ := mcpguard.DenialOf(mixed, nil); d != nil && d.RetryAfter != 3*time.Second {
		t.Errorf("RetryAfter = %v, want 3s", d.RetryAfter)
	}
}

// r32dServer is a server whose tools a guard refuses in several ways, for
// alice, and some whose own answers look like refusals.
func r32dServer(t *testing.T, protocolErrors bool) *mcp.Server {
	t.Helper()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read}, {Name: "wipe", Class: policy.Write}, {Name: "add", Class: policy.Read},
		{Name: "down", Class: policy.Read}, {Name: "fake", Class: policy.Read}, {Name: "notjson", Class: policy.Read},
	}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: "echo", Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice", Roles: []string{"user"}}}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{Limiter: lim, NoWriteAhead: true, Logger: r32dQuiet, ProtocolErrors: protocolErrors})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("hi"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "wipe", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("wiped"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "add", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("added"), nil })
	srv.AddTool(&mcp.Tool{Name: "down", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("db: %w", mcpguard.ErrUpstreamUnavailable)
	})
	srv.AddTool(&mcp.Tool{Name: "fake", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The tool's own answer, in the shape of a refusal, not IsError.
		body := `{"error":{"code":"FORBIDDEN","message":"no","retryable":false}}`
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: body}}, StructuredContent: json.RawMessage(body)}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "notjson", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "FORBIDDEN: not JSON {"}}}, nil
	})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return srv
}

// r32dConnect connects a client to srv over the named transport.
func r32dConnect(t *testing.T, srv *mcp.Server, transport string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	var ct mcp.Transport
	var opts *mcp.ClientSessionOptions
	switch transport {
	case "memory", "memory_2025":
		c, s := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		ct = c
		if transport == "memory_2025" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
		}
	case "http_stateless", "http_stateful":
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: transport == "http_stateless"}))
		t.Cleanup(hs.Close)
		ct = &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}
	default:
		t.Fatalf("no transport %q", transport)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestReview32DenialOverTransports: a go-sdk client reads a guard's
// refusals with DenialOf, as tool errors and as JSON-RPC errors, in memory
// and over Streamable HTTP, stateless and stateful: the code, the message,
// when to retry, the correlation id and the details, exactly as the server
// wrote them. A tool's own answers that look like refusals are not, nor is
// an unknown tool; nor (a go-sdk limit) UPSTREAM_UNAVAILABLE as a JSON-RPC
// error.
func TestReview32DenialOverTransports(t *testing.T) {
	ctx := context.Background()
	for _, transport := range []string{"memory", "memory_2025", "http_stateless", "http_stateful"} {
		for _, protocolErrors := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/protocol_errors=%v", transport, protocolErrors), func(t *testing.T) {
				cs := r32dConnect(t, r32dServer(t, protocolErrors), transport)
				call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
					return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				}
				// check reads the refusal, then re-encodes it as the
				// server would and compares that with what came over
				// the wire.
				check := func(what string, res *mcp.CallToolResult, err error, want mcpguard.Code, retryable bool) *mcpguard.DenialError {
					t.Helper()
					d, ok := mcpguard.DenialOf(res, err)
					if !ok {
						t.Fatalf("%s: DenialOf(%s, %v) = false; want %s", what, mustJSON(res), err, want)
					}
					if d.Code != want || !errors.Is(d, want.Sentinel()) || d.CorrelationID == "" || d.Message == "" {
						t.Errorf("%s: got %#v; want code %s, a message and a correlation id", what, d, want)
					}
					if got := d.Code.Retryable() && d.RetryAfter >= 0; got != retryable {
						t.Errorf("%s: retryable %v (RetryAfter %v); want %v", what, got, d.RetryAfter, retryable)
					}
					if res != nil {
						wire := res.Content[0].(*mcp.TextContent).Text
						if got := d.Result().Content[0].(*mcp.TextContent).Text; got != wire {
							t.Errorf("%s: re-encoded\n%s\nwant\n%s", what, got, wire)
						}
					} else {
						var we *jsonrpc.Error
						errors.As(err, &we)
						if got := d.JSONRPCError(0); got.Code != we.Code || got.Message != we.Message || string(got.Data) != string(we.Data) {
							t.Errorf("%s: re-encoded %s; want %s", what, r32dWire(t, nil, got), r32dWire(t, nil, we))
						}
					}
					return d
				}
				if res, err := call("echo", nil); err != nil || res.IsError {
					t.Fatalf("first echo: %s, %v", mustJSON(res), err)
				} else if d, ok := mcpguard.DenialOf(res, err); ok {
					t.Errorf("a success read as %v", d)
				}
				res, err := call("echo", nil)
				d := check("second echo", res, err, mcpguard.CodeRateLimitExceeded, true)
				if d.RetryAfter <= 0 || d.RetryAfter > time.Hour || d.Details["limit"] != "rate" {
					t.Errorf("rate limit: RetryAfter %v, details %v; want within the hour, limit rate", d.RetryAfter, d.Details)
				}
				res, err = call("wipe", nil)
				check("wipe", res, err, mcpguard.CodeWriteNotAllowed, false)
				res, err = call("add", map[string]any{"n": "ten"})
				if d := check("add", res, err, mcpguard.CodeInvalidArguments, false); d.Details["field"] != "/n" {
					t.Errorf("add: details %v; want field /n", d.Details)
				}
				res, err = call("down", nil)
				if !protocolErrors {
					check("down", res, err, mcpguard.CodeUpstreamUnavailable, true)
				} else if d, ok := mcpguard.DenialOf(res, err); ok || !errors.Is(err, mcp.ErrConnectionClosed) {
					// go-sdk v1.8.0 reads -32003 as its own "client is
					// closing" and keeps none of the error's data.
					t.Errorf("down: DenialOf = %v, %v (err %v); want false, as the go-sdk drops the data of -32003", d, ok, err)
				}
				for _, name := range []string{"fake", "notjson", "nope"} {
					res, err := call(name, nil)
					if d, ok := mcpguard.DenialOf(res, err); ok {
						t.Errorf("%s: DenialOf(%s, %v) = %v; want false", name, mustJSON(res), err, d)
					}
				}
			})
		}
	}
}

type r32dBearer string

func (b r32dBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestReview32DenialGateway: through mcpguard's gateway, a go-sdk client
// reads the gateway's own refusal of a tool the caller lacks the role for
// (HTTP 403), with its details, and a guarded downstream's refusal relayed;
// but not the gateway's own rate limit: go-sdk v1.8.0 does not read the
// body of an HTTP 429, so the client gets a bare error, as DenialOf's doc
// says.
func TestReview32DenialGateway(t *testing.T) {
	ctx := context.Background()
	tokens, err := token.New(map[string]*policy.Principal{"alice-tok": {Subject: "alice", Roles: []string{"user"}}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read}, {Name: "ping", Class: policy.Read}, {Name: "admin_purge", Class: policy.Read},
	}})
	if err != nil {
		t.Fatal(err)
	}
	downLim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: "echo", Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.FromGatewayHeaders(nil), &mcpguard.Options{Limiter: downLim, Logger: r32dQuiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	for _, name := range []string{"echo", "ping", "admin_purge"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	gwLim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: "ping", Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(hs.URL, gateway.NewTokenStore(tokens), &gateway.Options{Limiter: gwLim, Logger: r32dQuiet})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(gw)
	t.Cleanup(gs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: gs.URL + "/mcp", HTTPClient: &http.Client{Transport: r32dBearer("alice-tok")}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	call := func(name string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	}

	// The gateway's own refusal: its JSON-RPC error, HTTP 403.
	res, err := call("admin_purge")
	d, ok := mcpguard.DenialOf(res, err)
	if !ok {
		t.Fatalf("admin_purge: DenialOf(%s, %v) = false; want FORBIDDEN", mustJSON(res), err)
	}
	if d.Code != mcpguard.CodeForbidden || !errors.Is(d, mcpguard.ErrForbidden) || d.CorrelationID == "" ||
		!strings.HasPrefix(d.Message, "Unauthorized Tool Call") || d.RetryAfter != 0 {
		t.Errorf("admin_purge: %#v", d)
	}
	if diff := cmp.Diff(map[string]any{"tool": "admin_purge", "roles": []any{"user"}, "role": "user",
		"reason": "caller lacks a required role", "required_roles": []any{"admin"}}, d.Details); diff != "" {
		t.Errorf("admin_purge details (-want +got):\n%s", diff)
	}

	// The guarded downstream's refusal, relayed.
	if _, err := call("echo"); err != nil {
		t.Fatal(err)
	}
	res, err = call("echo")
	if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeRateLimitExceeded || d.RetryAfter <= 0 {
		t.Errorf("echo through the gateway: DenialOf(%s, %v) = %v, %v; want RATE_LIMIT_EXCEEDED with a wait", mustJSON(res), err, d, ok)
	}

	// The gateway's own rate limit, HTTP 429: the go-sdk client keeps no
	// data of it.
	if _, err := call("ping"); err != nil {
		t.Fatal(err)
	}
	res, err = call("ping")
	if d, ok := mcpguard.DenialOf(res, err); ok || err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("ping through the gateway's limit: DenialOf(%s, %v) = %v, %v; want false, with the go-sdk's bare 429 error", mustJSON(res), err, d, ok)
	}
}

// FuzzReview32DenialOf: DenialOf never panics on a result's text or a
// JSON-RPC error's data, and what it reads it reads again, the same, from
// its own encodings.
func FuzzReview32DenialOf(f *testing.F) {
	f.Add(`{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"m","retryable":true,"retry_after_seconds":3,"correlation_id":"c","details":{"a":[1,{"b":null}]}}}`)
	f.Add(`{"code":"FORBIDDEN","correlation_id":"c","tool":"t","roles":["user"],"retryable":false}`)
	f.Add(`{"code":"SPEND_LIMIT_EXCEEDED","message":"m","retryable":false}`)
	f.Add(`{"error":{"code":"INTERNAL","message":"\ud800","retryable":false,"details":null}}`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, in := range []struct {
			res *mcp.CallToolResult
			err error
		}{
			{res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: s}}}},
			{res: &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(s)}},
			{err: &jsonrpc.Error{Code: -32001, Message: "msg", Data: json.RawMessage(s)}},
		} {
			d, ok := mcpguard.DenialOf(in.res, in.err)
			if !ok {
				continue
			}
			res := d.Result()
			for how, again := range map[string]func() (*mcpguard.DenialError, bool){
				"result":        func() (*mcpguard.DenialError, bool) { return mcpguard.DenialOf(res, nil) },
				"client_result": func() (*mcpguard.DenialError, bool) { return mcpguard.DenialOf(r32dClientSide(t, res), nil) },
				"rpc":           func() (*mcpguard.DenialError, bool) { return mcpguard.DenialOf(nil, d.JSONRPCError(0)) },
			} {
				d2, ok := again()
				if !ok {
					t.Fatalf("%s: %#v read from %q is not read back", how, d, s)
				}
				if a, b := r32dWire(t, res, nil), r32dWire(t, d2.Result(), nil); a != b {
					t.Fatalf("%s: read from %q: %s, read back %s", how, s, a, b)
				}
			}
		}
	})
}

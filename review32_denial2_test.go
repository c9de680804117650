package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r32d2Denial is a FORBIDDEN refusal whose details hold v under "v".
func r32d2Denial(v any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"error": map[string]any{
		"code": "FORBIDDEN", "message": "no", "retryable": false, "details": map[string]any{"v": v},
	}}}
}

// TestReview32Denial2MapBounds: a StructuredContent map far over the bound
// of a denial, or holding what JSON cannot, is not a denial. Before the
// fix, values that fits counted 0 bytes (an empty string, array or object)
// or 8 whatever their size (a json.Number, a []byte), and values no JSON
// decodes to (NaN, a struct, a channel), passed: a refusal of megabytes,
// or one whose Result silently dropped its details.
func TestReview32Denial2MapBounds(t *testing.T) {
	const n = 1 << 17 // each value at least 3 bytes of JSON: 384 KiB and more
	many := func(v func() any) []any {
		s := make([]any, n)
		for i := range s {
			s[i] = v()
		}
		return s
	}
	keys := make(map[string]any, n)
	for i := range n {
		keys[fmt.Sprint(i)] = ""
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	x := 1
	for name, v := range map[string]any{
		"empty_strings":  many(func() any { return "" }),
		"empty_arrays":   many(func() any { return []any{} }),
		"empty_objects":  many(func() any { return map[string]any{} }),
		"nulls":          many(func() any { return nil }),
		"many_keys":      keys,
		"cyclic":         cyclic,
		"long_number":    json.Number(strings.Repeat("1", n)),
		"invalid_number": json.Number("ten"),
		"bytes":          make([]byte, n),
		"strings":        []string{"a"},
		"string_map":     map[string]string{"a": "b"},
		"int":            3,
		"nan":            math.NaN(),
		"inf":            math.Inf(1),
		"minus_inf":      math.Inf(-1),
		"struct":         struct{ A int }{1},
		"chan":           make(chan int),
		"func":           func() {},
		"pointer":        &x,
		"nil_pointer":    (*int)(nil),
	} {
		start := time.Now()
		if d, ok := mcpguard.DenialOf(r32d2Denial(v), nil); ok {
			t.Errorf("%s: read as a denial (%v); want false", name, d.Code)
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("%s: took %v", name, el)
		}
	}
	// json.Number, as a decoder with UseNumber makes: read.
	res := (&mcpguard.DenialError{Code: mcpguard.CodeRateLimitExceeded, Message: "slow", RetryAfter: 7 * time.Second,
		Details: map[string]any{"n": 3, "f": 2.5}}).Result()
	dec := json.NewDecoder(strings.NewReader(res.Content[0].(*mcp.TextContent).Text))
	dec.UseNumber()
	var sc map[string]any
	if err := dec.Decode(&sc); err != nil {
		t.Fatal(err)
	}
	d, ok := mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, StructuredContent: sc}, nil)
	if !ok || d.RetryAfter != 7*time.Second || d.Details["n"] != json.Number("3") {
		t.Fatalf("UseNumber: %#v, %v", d, ok)
	}
	if got, want := d.Result().Content[0].(*mcp.TextContent).Text, res.Content[0].(*mcp.TextContent).Text; got != want {
		t.Errorf("UseNumber: re-encoded %s; want %s", got, want)
	}
}

// TestReview32Denial2MapAgreesWithText: a refusal is read alike from the
// JSON the server holds and from the map a go-sdk client decodes it into,
// on either side of the 64 KiB bound. Before the fix, each number counted
// 8 bytes in the map: a refusal of 40 KiB whose details held numbers was
// read from its text and not from what the client receives.
func TestReview32Denial2MapAgreesWithText(t *testing.T) {
	for _, n := range []int{10, 10_000, 20_000, 32_700, 32_740, 32_760, 32_800, 40_000} {
		xs := make([]any, n)
		for i := range xs {
			xs[i] = float64(i % 10)
		}
		res := (&mcpguard.DenialError{Code: mcpguard.CodeInvalidArguments, Message: "bad", Details: map[string]any{"xs": xs}}).Result()
		size := len(res.Content[0].(*mcp.TextContent).Text)
		_, server := mcpguard.DenialOf(res, nil)
		_, client := mcpguard.DenialOf(r32dClientSide(t, res), nil)
		if want := size <= 64<<10; server != want || client != want {
			t.Errorf("%d numbers (%d bytes): read from the server's %v, from the client's %v; want %v", n, size, server, client, want)
		}
	}
}

// TestReview32Denial2OddInputs: nothing DenialOf is given makes it panic,
// and what is not a refusal of the contract's shape is none.
func TestReview32Denial2OddInputs(t *testing.T) {
	body := `{"error":{"code":"FORBIDDEN","message":"no","retryable":false}}`
	raw := json.RawMessage(body)
	text := []mcp.Content{&mcp.TextContent{Text: body}}
	for name, res := range map[string]*mcp.CallToolResult{
		"struct":          {IsError: true, StructuredContent: struct{ Error map[string]any }{map[string]any{"code": "FORBIDDEN"}}},
		"bytes":           {IsError: true, StructuredContent: []byte(body)},
		"raw_pointer":     {IsError: true, StructuredContent: &raw},
		"string":          {IsError: true, StructuredContent: body},
		"nil_map":         {IsError: true, StructuredContent: map[string]any(nil), Content: []mcp.Content{&mcp.TextContent{Text: "x"}}},
		"nil_raw":         {IsError: true, StructuredContent: json.RawMessage(nil), Content: []mcp.Content{&mcp.TextContent{Text: "x"}}},
		"error_not_map":   {IsError: true, StructuredContent: map[string]any{"error": map[string]string{"code": "FORBIDDEN"}}},
		"nil_text":        {IsError: true, Content: []mcp.Content{(*mcp.TextContent)(nil)}},
		"image":           {IsError: true, Content: []mcp.Content{&mcp.ImageContent{Data: []byte(body)}}},
		"nil_content":     {IsError: true, Content: []mcp.Content{nil}},
		"two_texts":       {IsError: true, Content: append(text, text...)},
		"not_is_error":    {StructuredContent: raw, Content: text},
		"array":           {IsError: true, StructuredContent: json.RawMessage(`[` + body + `]`)},
		"null_error":      {IsError: true, StructuredContent: json.RawMessage(`{"error":null}`)},
		"error_in_string": {IsError: true, StructuredContent: json.RawMessage(`{"error":` + fmt.Sprintf("%q", body) + `}`)},
	} {
		if d, ok := mcpguard.DenialOf(res, nil); ok {
			t.Errorf("%s: read as %v", name, d)
		}
	}
	for name, err := range map[string]error{
		"nil_rpc":        fmt.Errorf("x: %w", (*jsonrpc.Error)(nil)),
		"nil_denial":     fmt.Errorf("x: %w", (*mcpguard.DenialError)(nil)),
		"rpc_null_data":  &jsonrpc.Error{Code: -32001, Message: "m", Data: json.RawMessage(`null`)},
		"rpc_array_data": &jsonrpc.Error{Code: -32001, Message: "m", Data: json.RawMessage(`[{"code":"FORBIDDEN"}]`)},
		"rpc_no_message": &jsonrpc.Error{Code: -32001, Data: json.RawMessage(`{"code":"FORBIDDEN"}`)},
	} {
		if d, ok := mcpguard.DenialOf(nil, err); ok {
			t.Errorf("%s: read as %v", name, d)
		}
	}
	var nilRes *mcp.CallToolResult
	if _, ok := mcpguard.DenialOf(nilRes, nil); ok {
		t.Error("nil result read as a denial")
	}
}

// TestReview32Denial2Forged: a tool's own error result in the shape of a
// refusal is read as one: DenialOf reads what the server says, not who in
// it said it (its doc says so).
func TestReview32Denial2Forged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	body := `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"wait a year","retryable":true,"retry_after_seconds":31536000}}`
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: body}}}, nil
		})
	cs := r32dConnect(t, srv, "memory")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t"})
	d, ok := mcpguard.DenialOf(res, err)
	if !ok || d.Code != mcpguard.CodeRateLimitExceeded || d.RetryAfter != 365*24*time.Hour {
		t.Fatalf("a tool's own refusal-shaped error: %v, %v, %v", d, ok, err)
	}
}

// r32d2Every answers tools/call "CODE.rpc" or "CODE.result" with a refusal
// of that code, encoded as the guard encodes it (Result, JSONRPCError).
func r32d2Every(d func(mcpguard.Code) *mcpguard.DenialError) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			name := req.(*mcp.CallToolRequest).Params.Name
			code, mode, _ := strings.Cut(name, ".")
			if mode == "rpc" {
				return nil, d(mcpguard.Code(code)).JSONRPCError(0)
			}
			return d(mcpguard.Code(code)).Result(), nil
		}
	})
	return srv
}

var r32d2Codes = []mcpguard.Code{
	mcpguard.CodeUnauthenticated, mcpguard.CodeForbidden, mcpguard.CodeToolNotFound, mcpguard.CodeInvalidArguments,
	mcpguard.CodeWriteNotAllowed, mcpguard.CodeConfirmationRequired, mcpguard.CodeRateLimitExceeded,
	mcpguard.CodeSpendLimitExceeded, mcpguard.CodeConcurrencyLimitExceeded, mcpguard.CodeInvalidResponse,
	mcpguard.CodeUpstreamUnavailable, mcpguard.CodeAuditUnavailable, mcpguard.CodeInternal,
}

// r32d2Connect connects to srv over transport: those of r32dConnect, and
// "sse" (the go-sdk's SSE transports).
func r32d2Connect(t *testing.T, srv *mcp.Server, transport string) *mcp.ClientSession {
	t.Helper()
	if transport != "sse" {
		return r32dConnect(t, srv, transport)
	}
	hs := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestReview32Denial2EveryCode: every code, in both modes, over every
// transport a go-sdk client has in-process (the 2026-07-28 protocol in
// memory and over stateless HTTP, older ones in memory, over stateful HTTP
// and over SSE), is read back exactly as the server encoded it, but for
// UPSTREAM_UNAVAILABLE as a JSON-RPC error, whose -32003 the go-sdk client
// drops the data of on every transport.
func TestReview32Denial2EveryCode(t *testing.T) {
	mk := func(c mcpguard.Code) *mcpguard.DenialError {
		d := &mcpguard.DenialError{Code: c, Message: "refused: " + string(c), CorrelationID: "corr-1",
			Details: map[string]any{"n": 3, "f": 0.5, "s": "<&>", "deep": map[string]any{"a": []any{"x", true, nil}}}}
		switch {
		case c == mcpguard.CodeSpendLimitExceeded:
			d.RetryAfter = -1
		case c.Retryable():
			d.RetryAfter = 7 * time.Second
		}
		return d
	}
	ctx := context.Background()
	for _, transport := range []string{"memory", "memory_2025", "http_stateless", "http_stateful", "sse"} {
		t.Run(transport, func(t *testing.T) {
			cs := r32d2Connect(t, r32d2Every(mk), transport)
			for _, c := range r32d2Codes {
				for _, mode := range []string{"result", "rpc"} {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: string(c) + "." + mode})
					d, ok := mcpguard.DenialOf(res, err)
					if mode == "rpc" && c == mcpguard.CodeUpstreamUnavailable {
						if ok || !errors.Is(err, mcp.ErrConnectionClosed) {
							t.Errorf("%s.%s: %v, %v (err %v); want false and ErrConnectionClosed", c, mode, d, ok, err)
						}
						continue
					}
					if !ok {
						t.Errorf("%s.%s: not read (%s, %v)", c, mode, mustJSON(res), err)
						continue
					}
					want := mk(c)
					if mode == "result" {
						got, wire := d.Result().Content[0].(*mcp.TextContent).Text, res.Content[0].(*mcp.TextContent).Text
						if got != wire || got != want.Result().Content[0].(*mcp.TextContent).Text {
							t.Errorf("%s.%s: re-encoded %s; wire %s", c, mode, got, wire)
						}
					} else {
						var we *jsonrpc.Error
						errors.As(err, &we)
						got, sent := d.JSONRPCError(0), want.JSONRPCError(0)
						if got.Code != we.Code || got.Message != we.Message || string(got.Data) != string(we.Data) ||
							got.Code != sent.Code || got.Message != sent.Message || string(got.Data) != string(sent.Data) {
							t.Errorf("%s.%s: re-encoded %s; wire %s", c, mode, r32dWire(t, nil, got), r32dWire(t, nil, we))
						}
					}
					if !errors.Is(d, c.Sentinel()) || d.RetryAfter != want.RetryAfter {
						t.Errorf("%s.%s: %#v", c, mode, d)
					}
				}
			}
		})
	}
}

// TestReview32Denial2StdioChild is the server TestReview32Denial2GuardTransports
// runs over stdio, in a child process.
func TestReview32Denial2StdioChild(t *testing.T) {
	mode := os.Getenv("MCPGUARD_R32D2_STDIO")
	if mode == "" {
		return // run as the child of TestReview32Denial2GuardTransports only
	}
	srv := r32dServer(t, mode == "rpc")
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(0)
}

// TestReview32Denial2GuardTransports: a guard's refusals over the
// transports TestReview32DenialOverTransports leaves out, SSE and stdio,
// in both modes, read back as the server wrote them.
func TestReview32Denial2GuardTransports(t *testing.T) {
	if os.Getenv("MCPGUARD_R32D2_STDIO") != "" {
		return // in the child
	}
	ctx := context.Background()
	for _, transport := range []string{"sse", "stdio"} {
		for _, mode := range []string{"result", "rpc"} {
			t.Run(transport+"/"+mode, func(t *testing.T) {
				var cs *mcp.ClientSession
				if transport == "stdio" {
					cmd := exec.Command(os.Args[0], "-test.run=^TestReview32Denial2StdioChild$", "-test.count=1")
					cmd.Env = append(os.Environ(), "MCPGUARD_R32D2_STDIO="+mode)
					var err error
					cs, err = mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
						Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { cs.Close() })
				} else {
					cs = r32d2Connect(t, r32dServer(t, mode == "rpc"), transport)
				}
				call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
					return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				}
				if _, err := call("echo", nil); err != nil {
					t.Fatal(err)
				}
				for _, tc := range []struct {
					tool string
					args map[string]any
					want mcpguard.Code
				}{
					{"echo", nil, mcpguard.CodeRateLimitExceeded},
					{"wipe", nil, mcpguard.CodeWriteNotAllowed},
					{"add", map[string]any{"n": "ten"}, mcpguard.CodeInvalidArguments},
				} {
					res, err := call(tc.tool, tc.args)
					d, ok := mcpguard.DenialOf(res, err)
					if !ok || d.Code != tc.want || d.CorrelationID == "" {
						t.Errorf("%s: %v, %v (%s, %v); want %s", tc.tool, d, ok, mustJSON(res), err, tc.want)
						continue
					}
					if mode == "result" {
						if got, wire := d.Result().Content[0].(*mcp.TextContent).Text, res.Content[0].(*mcp.TextContent).Text; got != wire {
							t.Errorf("%s: re-encoded %s; wire %s", tc.tool, got, wire)
						}
					} else {
						var we *jsonrpc.Error
						errors.As(err, &we)
						if got := d.JSONRPCError(0); got.Code != we.Code || got.Message != we.Message || string(got.Data) != string(we.Data) {
							t.Errorf("%s: re-encoded %s; wire %s", tc.tool, r32dWire(t, nil, got), r32dWire(t, nil, we))
						}
					}
				}
				res, err := call("down", nil)
				if d, ok := mcpguard.DenialOf(res, err); ok != (mode == "result") {
					t.Errorf("down: %v, %v (err %v)", d, ok, err)
				}
			})
		}
	}
}

// TestReview32Denial2UseNumberSeconds: retry_after_seconds is read alike
// from the text and from a map decoded with UseNumber. Before the fix,
// 7.0 (a whole number) was read from the text but not as a json.Number.
func TestReview32Denial2UseNumberSeconds(t *testing.T) {
	for _, secs := range []string{"7", "7.0", "7e0", "7.5", "-1", "1e300", "9223372036", "9223372037"} {
		body := `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"m","retryable":true,"retry_after_seconds":` + secs + `}}`
		_, text := mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: body}}}, nil)
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		var sc map[string]any
		if err := dec.Decode(&sc); err != nil {
			t.Fatal(err)
		}
		_, num := mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, StructuredContent: sc}, nil)
		if text != num {
			t.Errorf("retry_after_seconds %s: read from the text %v, as a json.Number %v", secs, text, num)
		}
	}
}

package mcpguard_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r44aText is a tool-error result whose one text content is body.
func r44aText(body string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: body}}}
}

// r44aUseNumber is a tool-error result whose structured content is body
// decoded with UseNumber, as a client that keeps numbers exact decodes it.
func r44aUseNumber(t *testing.T, body string) *mcp.CallToolResult {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var sc map[string]any
	if err := dec.Decode(&sc); err != nil {
		t.Fatal(err)
	}
	return &mcp.CallToolResult{IsError: true, StructuredContent: sc}
}

// TestReview44aDenialNumbers: a json.Number in a refusal's map is read when
// it is a JSON number, whatever digit it starts or ends with, and not when
// it is anything else: empty, with blanks around it (json.Valid takes
// those), or another JSON value. A refusal read must re-encode.
func TestReview44aDenialNumbers(t *testing.T) {
	for _, tc := range []struct {
		n    json.Number
		want bool
	}{
		{"0", true}, {"9", true}, {"-9", true}, {"10", true}, {"19", true}, {"90", true},
		{"0.5", true}, {"-0", true}, {"1e9", true}, {"2.5E-3", true},
		{"", false}, {" 7", false}, {"7 ", false}, {"\t7", false}, {"7\n", false},
		{" 7 ", false}, {"true", false}, {"null", false}, {`"7"`, false}, {"-", false},
		{"1.", false}, {"+1", false}, {"07", false}, {"-a", false}, {"9a", false},
	} {
		res := &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"error": map[string]any{
			"code": "FORBIDDEN", "message": "no", "retryable": false, "details": map[string]any{"n": tc.n},
		}}}
		d, ok := mcpguard.DenialOf(res, nil)
		if ok != tc.want {
			t.Errorf("details {\"n\": json.Number(%q)}: read %v, want %v", tc.n, ok, tc.want)
			continue
		}
		if !ok {
			continue
		}
		if got := d.Details["n"]; got != tc.n {
			t.Errorf("json.Number(%q): Details[n] = %#v", tc.n, got)
		}
		if _, err := json.Marshal(d.Result().StructuredContent); err != nil {
			t.Errorf("json.Number(%q): the refusal read does not re-encode: %v", tc.n, err)
		}
	}
}

// TestReview44aDenialRetryAfterBounds: retry_after_seconds is read from 0
// up to the largest whole number of seconds a time.Duration holds, from the
// text, the map a go-sdk client decodes and a map decoded with UseNumber.
func TestReview44aDenialRetryAfterBounds(t *testing.T) {
	const most = 9223372036 // math.MaxInt64 / int64(time.Second)
	for _, tc := range []struct {
		secs string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"0.0", 0, true},
		{"1", time.Second, true},
		{"9223372036", most * time.Second, true},
		{"9223372036.0", most * time.Second, true},
		{"9223372037", 0, false},
		{"-0.5", 0, false},
	} {
		body := `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"m","retryable":true,"retry_after_seconds":` + tc.secs + `}}`
		var sc map[string]any
		if err := json.Unmarshal([]byte(body), &sc); err != nil {
			t.Fatal(err)
		}
		for how, res := range map[string]*mcp.CallToolResult{
			"text":       r44aText(body),
			"map":        {IsError: true, StructuredContent: sc},
			"use_number": r44aUseNumber(t, body),
		} {
			d, ok := mcpguard.DenialOf(res, nil)
			if ok != tc.ok || ok && d.RetryAfter != tc.want {
				t.Errorf("retry_after_seconds %s from the %s: %v, %v; want RetryAfter %v, %v", tc.secs, how, d, ok, tc.want, tc.ok)
			}
		}
	}
}

// TestReview44aDenialReadsBackAsWritten: a guard's refusals read back as
// the DenialError it wrote, RetryAfter -1 of a limit no wait helps included.
func TestReview44aDenialReadsBackAsWritten(t *testing.T) {
	for _, e := range []*mcpguard.DenialError{
		{Code: mcpguard.CodeRateLimitExceeded, Message: "rate limit per global reached", RetryAfter: -1, CorrelationID: "c-1"},
		{Code: mcpguard.CodeSpendLimitExceeded, Message: "too dear", RetryAfter: -1},
		{Code: mcpguard.CodeRateLimitExceeded, Message: "slow down", RetryAfter: 3 * time.Second},
		{Code: mcpguard.CodeForbidden, Message: "no", Details: map[string]any{"tool": "pay"}},
	} {
		for how, got := range map[string]func() (*mcpguard.DenialError, bool){
			"result": func() (*mcpguard.DenialError, bool) { return mcpguard.DenialOf(e.Result(), nil) },
			"rpc":    func() (*mcpguard.DenialError, bool) { return mcpguard.DenialOf(nil, e.JSONRPCError(0)) },
		} {
			d, ok := got()
			if !ok {
				t.Errorf("%v from its %s: not read", e, how)
				continue
			}
			if diff := cmp.Diff(e, d); diff != "" {
				t.Errorf("%v from its %s (-wrote +read):\n%s", e, how, diff)
			}
		}
	}
}

// TestReview44aDenialRPCRetryableOptional: in a JSON-RPC error's data (the
// gateway's shape) retryable may be missing, and then the code decides: a
// limit's wait is kept, not made "no wait helps".
func TestReview44aDenialRPCRetryableOptional(t *testing.T) {
	for _, tc := range []struct {
		data string
		want time.Duration
	}{
		{`{"code":"RATE_LIMIT_EXCEEDED","message":"m","retry_after_seconds":3}`, 3 * time.Second},
		{`{"code":"RATE_LIMIT_EXCEEDED","retry_after_seconds":3}`, 3 * time.Second},
		{`{"code":"CONCURRENCY_LIMIT_EXCEEDED"}`, 0},
		{`{"code":"RATE_LIMIT_EXCEEDED","retryable":false,"retry_after_seconds":3}`, -1},
	} {
		d, ok := mcpguard.DenialOf(nil, &jsonrpc.Error{Code: -32001, Message: "limited", Data: json.RawMessage(tc.data)})
		if !ok || d.RetryAfter != tc.want || d.Message == "" {
			t.Errorf("JSON-RPC data %s: %#v, %v; want RetryAfter %v", tc.data, d, ok, tc.want)
		}
	}
}

// TestReview44aDenialOtherFieldsIgnored: in a tool-error result's refusal,
// fields beside the contract's are ignored, with details or without; only
// in a JSON-RPC error's data without details are they its details (the
// gateway's shape).
func TestReview44aDenialOtherFieldsIgnored(t *testing.T) {
	const extra = `"code":"FORBIDDEN","message":"no","retryable":false,"tool":"pay","reason":"r"`
	for how, tc := range map[string]struct {
		res  *mcp.CallToolResult
		err  error
		want map[string]any
	}{
		"text":              {res: r44aText(`{"error":{` + extra + `}}`)},
		"raw":               {res: &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(`{"error":{` + extra + `}}`)}},
		"map":               {res: r44aUseNumber(t, `{"error":{`+extra+`}}`)},
		"text_with_details": {res: r44aText(`{"error":{` + extra + `,"details":{"a":"b"}}}`), want: map[string]any{"a": "b"}},
		"rpc":               {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`{` + extra + `}`)}, want: map[string]any{"tool": "pay", "reason": "r"}},
		"rpc_with_details":  {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`{` + extra + `,"details":{"a":"b"}}`)}, want: map[string]any{"a": "b"}},
		"rpc_null_details":  {err: &jsonrpc.Error{Code: -32001, Message: "no", Data: json.RawMessage(`{` + extra + `,"details":null}`)}},
	} {
		d, ok := mcpguard.DenialOf(tc.res, tc.err)
		if !ok {
			t.Errorf("%s: not read", how)
			continue
		}
		if diff := cmp.Diff(tc.want, d.Details); diff != "" {
			t.Errorf("%s: Details (-want +got):\n%s", how, diff)
		}
	}
}

// TestReview44aDenialMapSizeBound: a refusal whose JSON is exactly 64 KiB
// is read from the map a go-sdk client decodes it into (and from one
// decoded with UseNumber) as from its text, whatever values it holds
// (strings, keys, arrays, objects, one-digit numbers, true, false, null); one byte
// more is read from none. Its last value is a number, which the walk of the
// map reaches last when details is the error object's last member in the
// map's order: each is read 40 times. (Each false counted 4 bytes, as true,
// let a map with falses in it be read up to a byte per false over the bound;
// it holds more falses than trues.)
func TestReview44aDenialMapSizeBound(t *testing.T) {
	const head = `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"no","retryable":true,"details":` +
		`{"pad":[[1,2,true,false,null,{"k":"v","b":false},["w",true,false]],null,{"e":7,"f":[8,false]},"`
	const tail = `",7]}}}`
	for _, size := range []int{64<<10 - 1, 64 << 10, 64<<10 + 1} {
		text := head + strings.Repeat("x", size-len(head)-len(tail)) + tail
		var sc map[string]any
		if err := json.Unmarshal([]byte(text), &sc); err != nil {
			t.Fatal(err)
		}
		want := size <= 64<<10
		for how, res := range map[string]*mcp.CallToolResult{
			"text":       r44aText(text),
			"map":        {IsError: true, StructuredContent: sc},
			"use_number": r44aUseNumber(t, text),
		} {
			for range 40 {
				if _, ok := mcpguard.DenialOf(res, nil); ok != want {
					t.Errorf("a refusal of %d bytes from the %s: read %v, want %v", size, how, ok, want)
					break
				}
			}
		}
	}
}

// TestReview44aDenialMapArrays: arrays in a refusal's map are held to its
// bounds as objects are: nested exactly 32 levels deep, the envelope's
// included, it is read; one level deeper, or with a value JSON cannot hold
// inside an array, it is not.
func TestReview44aDenialMapArrays(t *testing.T) {
	body := func(details string) string {
		return `{"error":{"code":"FORBIDDEN","message":"no","retryable":false,"details":` + details + `}}`
	}
	for _, depth := range []int{32, 33} {
		// The envelope, the error object and details are 3 levels.
		text := body(`{"a":` + strings.Repeat(`[`, depth-3) + `1` + strings.Repeat(`]`, depth-3) + `}`)
		var sc map[string]any
		if err := json.Unmarshal([]byte(text), &sc); err != nil {
			t.Fatal(err)
		}
		want := depth <= 32
		_, fromText := mcpguard.DenialOf(r44aText(text), nil)
		_, fromMap := mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, StructuredContent: sc}, nil)
		if fromText != want || fromMap != want {
			t.Errorf("arrays nested %d levels: read from the text %v, from the map %v; want %v", depth, fromText, fromMap, want)
		}
	}
	for name, v := range map[string]any{
		"nan":            []any{1.0, math.NaN()},
		"inf":            []any{math.Inf(-1)},
		"invalid_number": []any{json.Number("ten")},
		"struct":         []any{struct{}{}},
		"nested_nan":     []any{[]any{map[string]any{"x": math.NaN()}}},
	} {
		res := &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"error": map[string]any{
			"code": "FORBIDDEN", "message": "no", "retryable": false, "details": map[string]any{"v": v},
		}}}
		if d, ok := mcpguard.DenialOf(res, nil); ok {
			t.Errorf("%s in an array: read as %v; want none", name, d)
		}
	}
}

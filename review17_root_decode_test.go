package mcpguard_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// limitIn is a typed tool's input whose fields Go cannot hold every value
// of that their schema (made by the go-sdk from the type) accepts.
type limitIn struct {
	N     int       `json:"n"`
	Small float32   `json:"small,omitempty"`
	Big   uint64    `json:"big,omitempty"`
	At    time.Time `json:"at,omitzero"`
	Items []struct {
		N int `json:"n"`
	} `json:"items,omitempty"`
	ByName map[string]int `json:"by_name,omitempty"`
}

// decodeGuard installs a guard on a server with the typed write tool
// set_limit (a rate of one call an hour per user, audit to sink), whose
// handler counts its runs in ran and returns what fail returns.
func decodeGuard(t *testing.T, sink *memSink, ran *atomic.Int64, fail func(limitIn) error) *mcp.ClientSession {
	t.Helper()
	return decodeGuardOpts(t, &mcpguard.Options{Audit: sink, Logger: quiet}, ran, fail)
}

// decodeGuardOpts is decodeGuard with opts (its Limiter is set here).
func decodeGuardOpts(t *testing.T, opts *mcpguard.Options, ran *atomic.Int64, fail func(limitIn) error) *mcp.ClientSession {
	t.Helper()
	return writeToolGuard(t, "set_limit", opts, func(srv *mcp.Server) {
		mcp.AddTool(srv, &mcp.Tool{Name: "set_limit"}, func(ctx context.Context, req *mcp.CallToolRequest, in limitIn) (*mcp.CallToolResult, any, error) {
			ran.Add(1)
			if err := fail(in); err != nil {
				return nil, nil, err
			}
			return textResult("set"), nil, nil
		})
	})
}

// writeToolGuard installs a guard with opts (its Limiter set here: a rate
// of one call an hour per user) on a server with the write tool name
// (cost 1, allowlisted), which add registers, and connects a client as
// bob: the rig of the day's tests of calls the go-sdk refuses before
// their handler runs, where a refund shows as the next call running.
func writeToolGuard(t *testing.T, name string, opts *mcpguard.Options, add func(*mcp.Server)) *mcp.ClientSession {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: name, Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{name},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	add(srv)
	opts.Limiter = lim
	g, err := mcpguard.New(pol, fixed(bob), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return connectPlain(t, srv, nil)
}

// A typed tool's arguments that its schema accepts but that the go-sdk's
// wrapper cannot decode into the tool's Go type (1e30 for an int; the
// wrapper also reads every number as a float64 first, so even
// 9223372036854775807 overflows an int) never reach the handler: the call
// is INVALID_ARGUMENTS, as any argument the tool cannot take, not INTERNAL
// "the write may have been made". Its write-ahead intent is followed by
// an outcome that says so, and the call is given back its charge. (A
// float32's 1e300 and a time.Time's "yesterday" cannot be told from a
// handler's own error: see TestReview17bUnprovableDecodeFailure.)
func TestReview17TypedDecodeFailureIsInvalidArguments(t *testing.T) {
	for _, tc := range []struct{ name, args string }{
		{"int_exponent", `{"n":1e30}`},
		// 2^63, a float64's: 9223372036854775807, which a float64
		// cannot hold, is refused before the wrapper (wideints.go).
		{"int_max_after_float", `{"n":9223372036854775808}`},
		{"uint64_overflow", `{"n":1,"big":1e20}`},
		{"nested_in_array", `{"n":1,"items":[{"n":1},{"n":-1e19}]}`},
		{"map_value", `{"n":1,"by_name":{"a.b":1e30}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var ran atomic.Int64
			cs := decodeGuard(t, sink, &ran, func(limitIn) error { return nil })
			res, err := call(t, cs, "set_limit", json.RawMessage(tc.args))
			code, msg, retry := refusalOf(t, res, err)
			if code != string(mcpguard.CodeInvalidArguments) || strings.Contains(msg, "may have been made") {
				t.Errorf("set_limit %s: %s %q (retryable %v), want INVALID_ARGUMENTS, nothing written", tc.args, code, msg, retry)
			}
			if n := ran.Load(); n != 0 {
				t.Fatalf("the handler ran %d times", n)
			}
			evs := sink.all()
			if len(evs) != 2 || evs[0].Phase != audit.PhaseIntent || evs[1].Phase != audit.PhaseOutcome {
				t.Fatalf("records %+v, want the intent and the outcome", evs)
			}
			out := evs[1]
			if out.Code != string(mcpguard.CodeInvalidArguments) || out.Allowed || out.Cost != 0 || !strings.Contains(out.Detail, "not run") {
				t.Errorf("outcome record: code %q allowed %v cost %v detail %q; want INVALID_ARGUMENTS, not allowed, cost 0, a detail saying the handler was not run",
					out.Code, out.Allowed, out.Cost, out.Detail)
			}
			// The refused call consumed nothing: the hour's one call is left.
			res, err = call(t, cs, "set_limit", map[string]any{"n": 1})
			if err != nil || res.IsError {
				t.Fatalf("a valid call after the refusal: %s, %v; want it run (the refused call was charged)", mustJSON(res), err)
			}
		})
	}
}

// In protocol-error mode the refusal is the contract's -32602.
func TestReview17TypedDecodeFailureProtocolError(t *testing.T) {
	var ran atomic.Int64
	cs := decodeGuardOpts(t, &mcpguard.Options{Audit: &memSink{}, ProtocolErrors: true, Logger: quiet}, &ran, func(limitIn) error { return nil })
	res, err := call(t, cs, "set_limit", json.RawMessage(`{"n":1e30}`))
	we := wireError(err)
	if we == nil || we.Code != -32602 || strings.Contains(we.Message, "1e") {
		t.Fatalf("set_limit {\"n\":1e30}: %s, %v; want JSON-RPC -32602 without the value", mustJSON(res), err)
	}
	if !strings.Contains(string(we.Data), string(mcpguard.CodeInvalidArguments)) || ran.Load() != 0 {
		t.Errorf("data %s, handler runs %d; want INVALID_ARGUMENTS, none", we.Data, ran.Load())
	}
}

// The handler's own failures keep their warning: a typed write whose
// handler ran, wrote, and then failed to decode its downstream's answer
// (an error of the very same type, even naming a field of its arguments)
// may have written.
func TestReview17TypedHandlerDecodeErrorMayHaveWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func() error
	}{
		{"encoding_json", func() error {
			var reply struct {
				N int `json:"n"`
			}
			return json.Unmarshal([]byte(`{"n":1e30}`), &reply)
		}},
		{"same_field_offset_zero", func() error {
			return &json.UnmarshalTypeError{Value: `"1e+30"`, Type: reflect.TypeFor[int](), Struct: "downstream.Reply", Field: "n"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var ran atomic.Int64
			cs := decodeGuard(t, sink, &ran, func(limitIn) error { return tc.err() })
			res, err := call(t, cs, "set_limit", map[string]any{"n": 5})
			code, msg, retry := refusalOf(t, res, err)
			if code != string(mcpguard.CodeInternal) || !strings.Contains(msg, "may have been made") || retry {
				t.Errorf("%s %q (retryable %v), want INTERNAL, the write may have been made, not retryable", code, msg, retry)
			}
			if n := ran.Load(); n != 1 {
				t.Errorf("the handler ran %d times, want 1", n)
			}
		})
	}
}

// refusalOf returns the code, message and retryable flag of the refusal a
// tool-error result carries on the wire.
func refusalOf(t *testing.T, res *mcp.CallToolResult, err error) (code, msg string, retryable bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || json.Unmarshal(raw, &body) != nil || body.Error.Code == "" {
		t.Fatalf("result %s carries no refusal", mustJSON(res))
	}
	return body.Error.Code, body.Error.Message, body.Error.Retryable
}

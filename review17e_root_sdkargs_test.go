package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// priceIn is the input of a typed write tool whose input schema is written
// by hand (the go-sdk then validates with it, not with one of its own).
type priceIn struct {
	Amount float64 `json:"amount"`
	Note   string  `json:"note,omitempty"`
}

// priceSchema is a hand-written input schema: an amount in cents (a
// multiple of 0.01) under 1, and a note.
const priceSchema = `{"type":"object","properties":{"amount":{"type":"number","multipleOf":0.01,"exclusiveMaximum":1},"note":{"type":"string"}},"required":["amount"],"additionalProperties":false}`

// priceGuard installs a guard on a server with the write tool price (cost
// 1, one call an hour per user, audit to sink), typed with priceSchema, or,
// with raw, a raw tool with the same schema that decodes its arguments
// itself. Its handler counts its runs in ran (the price is set there) and
// then returns what fail returns.
func priceGuard(t *testing.T, sink *memSink, ran *atomic.Int64, raw bool, fail func(priceIn) error) *mcp.ClientSession {
	t.Helper()
	return writeToolGuard(t, "price", &mcpguard.Options{Audit: sink, Logger: quiet}, func(srv *mcp.Server) {
		tool := &mcp.Tool{Name: "price", InputSchema: json.RawMessage(priceSchema)}
		if raw {
			srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var in priceIn
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
				ran.Add(1)
				if err := fail(in); err != nil {
					var res mcp.CallToolResult
					res.SetError(err)
					return &res, nil
				}
				return textResult("set"), nil
			})
		} else {
			mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, in priceIn) (*mcp.CallToolResult, any, error) {
				ran.Add(1)
				if err := fail(in); err != nil {
					return nil, nil, err
				}
				return textResult("set"), nil, nil
			})
		}
	})
}

// checkNotRunRefusal checks that a write call that the go-sdk refused
// before its handler ran was answered INVALID_ARGUMENTS, recorded as not
// run and charged nothing (the next valid call, for which an hour's rate of
// one leaves room only if the charge was given back, runs).
func checkNotRunRefusal(t *testing.T, cs *mcp.ClientSession, tool, args string, ran *atomic.Int64, sink *memSink, valid any) {
	t.Helper()
	res, err := call(t, cs, tool, json.RawMessage(args))
	code, msg, _ := refusalOf(t, res, err)
	if n := ran.Load(); n != 0 {
		t.Fatalf("%s %s: the handler ran %d times; the test needs arguments the go-sdk refuses", tool, args, n)
	}
	if code != string(mcpguard.CodeInvalidArguments) || strings.Contains(msg, "may have been made") {
		t.Errorf("%s %s, refused by the go-sdk before the handler: %s %q; want INVALID_ARGUMENTS, with no claim that the write may have been made", tool, args, code, msg)
	}
	if evs := sink.all(); len(evs) != 2 || evs[1].Phase != audit.PhaseOutcome || evs[1].Code != string(mcpguard.CodeInvalidArguments) || evs[1].Cost != 0 || !strings.Contains(evs[1].Detail, "not run") {
		t.Errorf("records %+v; want the intent and an INVALID_ARGUMENTS outcome of cost 0 saying the handler was not run", evs)
	}
	res, err = call(t, cs, tool, valid)
	if err != nil || res.IsError {
		t.Errorf("a valid call after the refusal: %s, %v; want it run (the refused call's charge given back)", mustJSON(res), err)
	}
}

// Arguments the guard's validation accepts and the go-sdk's typed-tool
// wrapper refuses before the handler runs: the go-sdk's validator
// (github.com/google/jsonschema-go) checks multipleOf in float64 (0.07 is
// not a multiple of 0.01 there), where the guard's is exact; and its
// decoder cannot read a number beyond float64's range, which the guard
// accepts up to 1e400. Such a call was answered INTERNAL "the write may
// have been made", its charge kept and its record saying the handler
// failed, though the handler never ran: the go-sdk's refusal is an error
// with a text of its own, which 16fd78c no longer recognised.
func TestReview17eSDKRefusedArgumentsAreInvalidArguments(t *testing.T) {
	t.Run("multiple_of_in_float64", func(t *testing.T) {
		sink := &memSink{}
		var ran atomic.Int64
		cs := priceGuard(t, sink, &ran, false, func(priceIn) error { return nil })
		checkNotRunRefusal(t, cs, "price", `{"amount":0.07}`, &ran, sink, map[string]any{"amount": 0.5})
	})
	t.Run("multiple_of_with_a_note", func(t *testing.T) {
		sink := &memSink{}
		var ran atomic.Int64
		cs := priceGuard(t, sink, &ran, false, func(priceIn) error { return nil })
		checkNotRunRefusal(t, cs, "price", `{"note":"x","amount":0.29}`, &ran, sink, map[string]any{"amount": 0.5})
	})
	for _, tc := range []struct{ name, args string }{
		{"float_beyond_float64", `{"amount":1e400}`},
		{"integer_beyond_float64", `{"amount":1,"count":-1e309}`},
		{"nested_arrays", `{"amount":1,"rows":[[1],[2,1E+400]]}`},
		{"map_dotted_key_long_literal", `{"amount":1,"by_key":{"a.b":1.000000000000000000000000000000000000000000e400}}`},
		{"the_first_of_two", `{"amount":1,"count":1e309,"max":1e400}`},
		// The go-sdk's decoder quotes the literal whole up to 31 bytes and
		// cuts one of 32 or more at 32, with "...".
		{"literal_of_31_bytes", `{"amount":1,"max":1.` + strings.Repeat("0", 25) + `e400}`},
		{"literal_of_32_bytes", `{"amount":1,"max":1.` + strings.Repeat("0", 26) + `e400}`},
		{"literal_of_33_bytes", `{"amount":1,"max":1.` + strings.Repeat("0", 27) + `e400}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var ran atomic.Int64
			cs := payGuard(t, sink, &ran, func(payIn) error { return nil })
			checkNotRunRefusal(t, cs, "pay", tc.args, &ran, sink, map[string]any{"amount": 1})
		})
	}
}

// The go-sdk's refusal is recognised by its whole text, which the guard
// works out from the call's arguments and the tool's schema, not by its
// start: a handler that ran (a raw tool, which the go-sdk does not check,
// with the same schema and arguments it would refuse) and failed with an
// error that starts as the go-sdk's would, with a text the caller chose,
// or that is the go-sdk's text wrapped, is the handler's (INTERNAL, may
// have been made, its charge kept).
func TestReview17eHandlerErrorLikeSDKRefusal(t *testing.T) {
	const sdkText = `validating "arguments": validating root: validating /properties/amount: multipleOf: 1261007895663739/18014398509481984 is not a multiple of 0.010000`
	for _, tc := range []struct {
		name string
		fail func(priceIn) error
	}{
		{"callers_text_first", func(in priceIn) error { return errors.New(in.Note + ": receipt not sent") }},
		{"wrapped", func(priceIn) error { return &wrapped{errors.New(sdkText)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var ran atomic.Int64
			cs := priceGuard(t, sink, &ran, true, tc.fail)
			res, err := call(t, cs, "price", map[string]any{"amount": json.Number("0.07"), "note": sdkText})
			code, msg, retry := refusalOf(t, res, err)
			if n := ran.Load(); n != 1 {
				t.Fatalf("the handler ran %d times, want 1", n)
			}
			if code != string(mcpguard.CodeInternal) || !strings.Contains(msg, "may have been made") || retry {
				t.Errorf("%s %q (retryable %v); want INTERNAL, the write may have been made, not retryable", code, msg, retry)
			}
			if evs := sink.all(); len(evs) != 2 || evs[1].Cost != 1 || strings.Contains(evs[1].Detail, "not run") {
				t.Errorf("records %+v; want the intent and an outcome of cost 1 that does not say the handler was not run", evs)
			}
		})
	}
}

// wrapped is an error with the text of the error it wraps.
type wrapped struct{ err error }

func (w *wrapped) Error() string { return w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

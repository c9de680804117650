package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// payIn is a typed write tool's input. Its fields take every value their
// schemas (made by the go-sdk from the type) accept, except that an int64
// or a uint64 cannot hold every integer.
type payIn struct {
	Amount float64        `json:"amount"`
	When   string         `json:"when,omitempty"`
	Count  int64          `json:"count,omitempty"`
	Max    *int           `json:"max,omitempty"`
	Rows   [][]uint64     `json:"rows,omitempty"`
	ByKey  map[string]int `json:"by_key,omitempty"`
	payBase
}

type payBase struct {
	Ref int `json:"ref,omitempty"`
}

// payGuard installs a guard on a server with the typed write tool pay (cost
// 1, a rate of one call an hour per user, audit to sink), whose handler
// counts its runs in ran and then returns what fail returns.
func payGuard(t *testing.T, sink *memSink, ran *atomic.Int64, fail func(payIn) error) *mcp.ClientSession {
	t.Helper()
	return writeToolGuard(t, "pay", &mcpguard.Options{Audit: sink, Logger: quiet}, func(srv *mcp.Server) {
		mcp.AddTool(srv, &mcp.Tool{Name: "pay"}, func(ctx context.Context, req *mcp.CallToolRequest, in payIn) (*mcp.CallToolResult, any, error) {
			ran.Add(1) // the payment is made here
			if err := fail(in); err != nil {
				return nil, nil, err
			}
			return textResult("paid"), nil, nil
		})
	})
}

// segmentioError is the error github.com/segmentio/encoding/json (the
// go-sdk's decoder, which a handler may use too) returns for a value at
// field that a Go value of type typ cannot hold: no offset.
func segmentioError(field string, typ reflect.Type) error {
	return &json.UnmarshalTypeError{Value: "number", Type: typ, Struct: "legacyInput", Field: field}
}

// A typed write whose handler ran (the payment was made) and then failed
// with an error of the kind the go-sdk's decoder gives, about a field of
// its own arguments that the call's value does not fit in another type
// than the tool's (it decoded its arguments a second time, or a
// downstream's echo of them, into a legacy struct), was refused as
// INVALID_ARGUMENTS, its charge given back and its record saying the
// handler was not run: the error's type and field are the handler's to
// say, and were taken on trust. A write that ran may have been made.
func TestReview17bHandlersOwnDecodeErrorIsNoDecodeRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		args string
		err  error
	}{
		{"int_for_a_float_field", `{"amount":1.5}`, segmentioError("amount", reflect.TypeFor[int]())},
		{"time_for_a_string_field", `{"amount":1,"when":"next week"}`, segmentioError("when", reflect.TypeFor[time.Time]())},
		{"int8_for_an_int64_field", `{"amount":1,"count":1000}`, segmentioError("count", reflect.TypeFor[int8]())},
		{"interface_type", `{"amount":1}`, segmentioError("amount", reflect.TypeFor[io.Reader]())},
		{"uint_for_an_int_field", `{"amount":1,"ref":-1}`, segmentioError("ref", reflect.TypeFor[uint]())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var ran atomic.Int64
			cs := payGuard(t, sink, &ran, func(payIn) error { return tc.err })
			res, err := call(t, cs, "pay", json.RawMessage(tc.args))
			code, msg, retry := refusalOf(t, res, err)
			if n := ran.Load(); n != 1 {
				t.Fatalf("the handler ran %d times, want 1", n)
			}
			if code != string(mcpguard.CodeInternal) || !strings.Contains(msg, "may have been made") || retry {
				t.Errorf("pay %s, handler failed after paying: %s %q (retryable %v); want INTERNAL, the write may have been made, not retryable", tc.args, code, msg, retry)
			}
			evs := sink.all()
			if len(evs) != 2 {
				t.Fatalf("records %+v, want the intent and the outcome", evs)
			}
			if out := evs[1]; out.Code != string(mcpguard.CodeInternal) || out.Cost != 1 || strings.Contains(out.Detail, "not run") {
				t.Errorf("outcome record: code %q cost %v detail %q; want INTERNAL, cost 1, no claim that the handler did not run", out.Code, out.Cost, out.Detail)
			}
			// The payment was made: its charge stands.
			res, err = call(t, cs, "pay", map[string]any{"amount": 1})
			if code, _, _ := refusalOf(t, res, err); code != string(mcpguard.CodeRateLimitExceeded) {
				t.Errorf("the next call: %s, want RATE_LIMIT_EXCEEDED (the hour's one call was used)", code)
			}
		})
	}
}

// The go-sdk's own validation refusal is recognised by its text alone,
// `validating "arguments": ...`, which a handler's error may begin with
// too, with a value the client chose. A write that ran was answered
// INVALID_ARGUMENTS (no "may have been made"), its charge given back, its
// record saying the handler did not run.
func TestReview17bHandlerErrorLikeSDKValidation(t *testing.T) {
	sink := &memSink{}
	var ran atomic.Int64
	cs := payGuard(t, sink, &ran, func(in payIn) error { return fmt.Errorf("%s: receipt not sent", in.When) })
	res, err := call(t, cs, "pay", map[string]any{"amount": 1, "when": `validating "arguments": when`})
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
	res, err = call(t, cs, "pay", map[string]any{"amount": 1})
	if code, _, _ := refusalOf(t, res, err); code != string(mcpguard.CodeRateLimitExceeded) {
		t.Errorf("the next call: %s, want RATE_LIMIT_EXCEEDED (the hour's one call was used)", code)
	}
}

// Arguments the go-sdk's decoder cannot take because no Go integer type
// the tool's schema stands for holds them are still refused as
// INVALID_ARGUMENTS, charged nothing, wherever they are: behind a pointer,
// in an embedded struct's field, in nested arrays, under a dotted map key.
func TestReview17bTypedDecodeFailureStillInvalidArguments(t *testing.T) {
	for _, tc := range []struct{ name, args string }{
		// 2^63, a float64's: 9223372036854775807, which a float64
		// cannot hold, is refused before the wrapper (wideints.go).
		{"int64", `{"amount":1,"count":9223372036854775808}`},
		{"pointer", `{"amount":1,"max":1e30}`},
		{"embedded", `{"amount":1,"ref":-1e19}`},
		{"nested_arrays", `{"amount":1,"rows":[[1],[2,1e20]]}`},
		{"dotted_map_key", `{"amount":1,"by_key":{"a.0":1e300}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var ran atomic.Int64
			cs := payGuard(t, sink, &ran, func(payIn) error { return nil })
			res, err := call(t, cs, "pay", json.RawMessage(tc.args))
			code, msg, _ := refusalOf(t, res, err)
			if code != string(mcpguard.CodeInvalidArguments) || strings.Contains(msg, "may have been made") || ran.Load() != 0 {
				t.Errorf("pay %s: %s %q, handler runs %d; want INVALID_ARGUMENTS, not run", tc.args, code, msg, ran.Load())
			}
			if evs := sink.all(); len(evs) != 2 || evs[1].Phase != audit.PhaseOutcome || evs[1].Cost != 0 || !strings.Contains(evs[1].Detail, "not run") {
				t.Errorf("records %+v; want the intent and an outcome of cost 0 saying the handler was not run", evs)
			}
			res, err = call(t, cs, "pay", map[string]any{"amount": 1})
			if err != nil || res.IsError {
				t.Errorf("a valid call after the refusal: %s, %v; want it run", mustJSON(res), err)
			}
		})
	}
}

// A value whose schema does not rule it out for the tool's Go type (a
// float32's 1e300: "number" stands for a float64 too; a time.Time's
// "yesterday": "string" stands for a string too) cannot be told from a
// handler's own error about a field of that name: it is answered as one,
// the safe way (INTERNAL, the write may have been made, charged), though
// the handler did not run.
func TestReview17bUnprovableDecodeFailure(t *testing.T) {
	for _, tc := range []struct{ name, args string }{
		{"float32_overflow", `{"n":1,"small":1e300}`},
		{"time_not_rfc3339", `{"n":1,"at":"yesterday"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			var ran atomic.Int64
			cs := decodeGuard(t, sink, &ran, func(limitIn) error { return nil })
			res, err := call(t, cs, "set_limit", json.RawMessage(tc.args))
			code, msg, retry := refusalOf(t, res, err)
			if code != string(mcpguard.CodeInternal) || !strings.Contains(msg, "may have been made") || retry || ran.Load() != 0 {
				t.Errorf("set_limit %s: %s %q (retryable %v), handler runs %d; want INTERNAL, may have been made, not retryable, not run",
					tc.args, code, msg, retry, ran.Load())
			}
			if evs := sink.all(); len(evs) != 2 || evs[1].Code != string(mcpguard.CodeInternal) || evs[1].Cost != 1 {
				t.Errorf("records %+v; want the intent and an INTERNAL outcome of cost 1", evs)
			}
		})
	}
}

package mcpguard

import (
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/mcpguard/mcpguard/internal/jsondepth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bounds of a denial [DenialOf] reads: its JSON at most maxDenialBytes
// long (for one the go-sdk client has decoded, the JSON it encodes to, but
// for each float64 counted as 1 byte) and nested at most maxDenialDepth
// levels deep, the envelope's levels included. mcpguard's own are flat and
// far smaller; a larger one is not a denial.
const (
	maxDenialBytes = 64 << 10
	maxDenialDepth = 32
)

// maxRetrySeconds is the largest retry_after_seconds a time.Duration holds.
const maxRetrySeconds = math.MaxInt64 / int64(time.Second)

// DenialOf returns the refusal of a guard that a tools/call's outcome
// carries, given res and err as mcp.ClientSession.CallTool returns them,
// and whether there is one. The *DenialError unwraps to the sentinel of its
// code (errors.Is(d, ErrRateLimitExceeded)), and tells a client whether to
// retry: d.Code.Retryable() && d.RetryAfter >= 0, after RetryAfter;
// RetryAfter is negative for a refusal that says it is not retryable
// although its code would be (no wait can help, or a write may have been
// made). Read from a refusal in a shape DenialError writes, d.Result() and
// d.JSONRPCError encode as it was encoded (but for an integer in Details
// beyond float64's precision).
//
// A refusal is the server's word, not the guard's signature: a tool's own
// error result, or a server without a guard, can send one in this shape,
// and DenialOf reads it alike. A client trusts what it reads (a code, a
// wait of a year) no more than it trusts the server.
//
// A refusal is read in two shapes. A result with IsError set whose
// StructuredContent holds {"error":{"code","message","retryable",
// "retry_after_seconds"?,"correlation_id"?,"details"?}}, the default
// ([DenialError.Result]): when StructuredContent is set, it alone decides,
// a map[string]any (as the go-sdk client decodes it: its values of the
// types encoding/json decodes into an any, or json.Number) or a
// json.RawMessage (as Result sets it); the text is read only when
// StructuredContent is nil, from a result of one text content. Or, with
// [Options.ProtocolErrors], an err that wraps a *jsonrpc.Error whose data
// is that error object, not wrapped in "error"
// ([DenialError.JSONRPCError]); its message is the error's when the data
// has none. An err that wraps a *DenialError is returned as is.
//
// DenialOf reports false for anything else: a result without IsError,
// whatever it holds; a code outside the error contract, or not a string;
// no message, or an empty one; a field of another type than the
// contract's (retry_after_seconds a whole number of seconds); retryable
// missing from a result, or true for a code that is not retryable; a
// refusal over about 64 KiB or nested over 32 levels; text that is not
// JSON; a JSON-RPC error without such data, as the go-sdk's own for an
// unknown tool, which a guard answers for a hidden tool too. Other fields
// are ignored (but see the gateway's below). Numbers in Details are
// float64s, as the go-sdk client decodes them (json.Number in a map decoded
// with UseNumber); Details may be a map that res holds.
//
// The gateway's own refusals are JSON-RPC errors whose data holds "code",
// "correlation_id" and, beside them, its details ("tool", "reason",
// "required_roles"...): DenialOf reads them, with their details gathered
// into Details, when the code is the contract's (the gateway's
// INVALID_REQUEST, TOOL_CHANGED and TOOL_NOT_PINNED are not). But go-sdk
// v1.8.0's Streamable HTTP client does not read the body of an HTTP 429,
// 500, 502, 503 or 504 answer (nor, with MCPGODEBUG=noprotocolerrorbody=1,
// of any answer but a 2xx): the gateway's refusals by its limits, for its
// audit, INTERNAL and UPSTREAM_UNAVAILABLE reach the caller as bare
// errors, which DenialOf reports false for. Nor does the go-sdk v1.8.0
// client, over any transport, keep the data of a JSON-RPC error -32003
// (see the package documentation): a guard's UPSTREAM_UNAVAILABLE in
// protocol-error mode is not read either.
func DenialOf(res *mcp.CallToolResult, err error) (*DenialError, bool) {
	if err != nil {
		var de *DenialError
		if errors.As(err, &de) {
			return de, de != nil
		}
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we == nil {
			return nil, false
		}
		return rpcDenial(we)
	}
	if res == nil || !res.IsError {
		return nil, false
	}
	switch sc := res.StructuredContent.(type) {
	case nil:
	case map[string]any:
		o, ok := sc["error"].(map[string]any)
		if !ok || !knownCode(o) {
			return nil, false
		}
		budget := maxDenialBytes
		if !fits(sc, 0, &budget) {
			return nil, false
		}
		return readDenial(o, "", false)
	case json.RawMessage:
		return resultDenial(sc)
	default:
		return nil, false
	}
	if len(res.Content) != 1 {
		return nil, false
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || tc == nil || len(tc.Text) > maxDenialBytes {
		return nil, false
	}
	return resultDenial([]byte(tc.Text))
}

// resultDenial reads b, the JSON of a tool-error result's denial.
func resultDenial(b []byte) (*DenialError, bool) {
	top, ok := decodeDenial(b)
	if !ok {
		return nil, false
	}
	o, ok := top["error"].(map[string]any)
	if !ok {
		return nil, false
	}
	return readDenial(o, "", false)
}

// rpcDenial reads the denial in the data of we.
func rpcDenial(we *jsonrpc.Error) (*DenialError, bool) {
	o, ok := decodeDenial(we.Data)
	if !ok {
		return nil, false
	}
	return readDenial(o, we.Message, true)
}

// decodeDenial decodes b, a JSON object within the bounds of a denial.
func decodeDenial(b []byte) (map[string]any, bool) {
	if len(b) == 0 || len(b) > maxDenialBytes || jsondepth.Of(b) > maxDenialDepth {
		return nil, false
	}
	var o map[string]any
	if json.Unmarshal(b, &o) != nil || o == nil {
		return nil, false
	}
	return o, true
}

// knownCode reports whether o's code is a string of the error contract.
func knownCode(o map[string]any) bool {
	c, ok := o["code"].(string)
	return ok && Code(c).Sentinel() != nil
}

// fits reports whether v, decoded JSON whose containers are nested depth
// levels deep, stays within maxDenialDepth levels and the bytes *budget has
// left, which it takes its own from: at most the length of v's JSON, each
// float64 counted 1 byte, and at least 1 byte for each value, so that the
// walk ends within the budget. A value of a type encoding/json does not
// decode into an any (but json.Number), or one JSON cannot hold (a NaN, an
// infinity, a json.Number that is not a number), does not fit.
func fits(v any, depth int, budget *int) bool {
	switch x := v.(type) {
	case map[string]any:
		if depth++; depth > maxDenialDepth {
			return false
		}
		*budget-- // the braces, less the comma one of its members does not have
		for k, e := range x {
			if *budget -= len(k) + 4; *budget < 0 || !fits(e, depth, budget) {
				return false
			}
		}
	case []any:
		if depth++; depth > maxDenialDepth {
			return false
		}
		*budget--
		for _, e := range x {
			if *budget--; *budget < 0 || !fits(e, depth, budget) {
				return false
			}
		}
	case string:
		*budget -= len(x) + 2
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		*budget--
	case json.Number:
		if *budget -= len(x); *budget < 0 || !isNumber(x) {
			return false
		}
	case bool:
		*budget -= 4
		if !x {
			*budget-- // "false"
		}
	case nil:
		*budget -= 4
	default:
		return false
	}
	return *budget >= 0
}

// isNumber reports whether n is a JSON number.
func isNumber(n json.Number) bool {
	return n != "" && (n[0] == '-' || '0' <= n[0] && n[0] <= '9') &&
		'0' <= n[len(n)-1] && n[len(n)-1] <= '9' && json.Valid([]byte(n))
}

// readDenial reads o, an error object of the contract. For a JSON-RPC
// error's data (rpc), message is the error's, for data without one;
// retryable may be missing; and when details is, the fields beside the
// contract's are the details, as the gateway writes them.
func readDenial(o map[string]any, message string, rpc bool) (*DenialError, bool) {
	if !knownCode(o) {
		return nil, false
	}
	d := &DenialError{Code: Code(o["code"].(string))}
	if v, ok := o["message"]; ok {
		if message, ok = v.(string); !ok {
			return nil, false
		}
	} else if !rpc {
		return nil, false
	}
	if message == "" {
		return nil, false
	}
	d.Message = message
	retryable := true
	if v, ok := o["retryable"]; ok {
		if retryable, ok = v.(bool); !ok || retryable && !d.Code.Retryable() {
			return nil, false
		}
	} else if !rpc {
		return nil, false
	}
	if v, ok := o["retry_after_seconds"]; ok {
		s, ok := wholeSeconds(v)
		if !ok {
			return nil, false
		}
		d.RetryAfter = time.Duration(s) * time.Second
	}
	if !retryable && d.Code.Retryable() {
		d.RetryAfter = -1
	}
	if v, ok := o["correlation_id"]; ok {
		if d.CorrelationID, ok = v.(string); !ok {
			return nil, false
		}
	}
	if v, ok := o["details"]; ok {
		if v != nil {
			if d.Details, ok = v.(map[string]any); !ok {
				return nil, false
			}
		}
	} else if rpc {
		for k, v := range o {
			switch k {
			case "code", "message", "retryable", "retry_after_seconds", "correlation_id":
				continue
			}
			if d.Details == nil {
				d.Details = make(map[string]any, len(o))
			}
			d.Details[k] = v
		}
	}
	return d, true
}

// wholeSeconds returns v, a number of seconds decoded from JSON, if it is a
// whole number that a time.Duration holds.
// A json.Number is read as the go-sdk client reads a number, a float64.
func wholeSeconds(v any) (int64, bool) {
	n, ok := v.(float64)
	if x, isNumber := v.(json.Number); isNumber {
		f, err := x.Float64()
		n, ok = f, err == nil
	}
	if ok && n >= 0 && n <= float64(maxRetrySeconds) && n == math.Trunc(n) {
		return int64(n), true
	}
	return 0, false
}

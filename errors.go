package mcpguard

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Code is a machine-readable denial code of the error contract. Codes are
// stable strings; a model or a client may switch on them.
type Code string

// The codes of the error contract. See the package documentation for the
// JSON-RPC and HTTP mapping.
const (
	CodeUnauthenticated          Code = "UNAUTHENTICATED"
	CodeForbidden                Code = "FORBIDDEN"
	CodeWriteNotAllowed          Code = "WRITE_NOT_ALLOWED"
	CodeToolNotFound             Code = "TOOL_NOT_FOUND"
	CodeInvalidArguments         Code = "INVALID_ARGUMENTS"
	CodeConfirmationRequired     Code = "CONFIRMATION_REQUIRED"
	CodeRateLimitExceeded        Code = "RATE_LIMIT_EXCEEDED"
	CodeSpendLimitExceeded       Code = "SPEND_LIMIT_EXCEEDED"
	CodeConcurrencyLimitExceeded Code = "CONCURRENCY_LIMIT_EXCEEDED"
	CodeInvalidResponse          Code = "INVALID_RESPONSE"
	CodeUpstreamUnavailable      Code = "UPSTREAM_UNAVAILABLE"
	CodeAuditUnavailable         Code = "AUDIT_UNAVAILABLE"
	CodeInternal                 Code = "INTERNAL"
)

// Sentinel errors, one per [Code]. Every [*DenialError] unwraps to the
// sentinel of its code, so callers test with errors.Is.
var (
	ErrUnauthenticated          = errors.New("mcpguard: unauthenticated")
	ErrForbidden                = errors.New("mcpguard: forbidden")
	ErrWriteNotAllowed          = errors.New("mcpguard: write not allowed")
	ErrToolNotFound             = errors.New("mcpguard: tool not found")
	ErrInvalidArguments         = errors.New("mcpguard: invalid arguments")
	ErrConfirmationRequired     = errors.New("mcpguard: confirmation required")
	ErrRateLimitExceeded        = errors.New("mcpguard: rate limit exceeded")
	ErrSpendLimitExceeded       = errors.New("mcpguard: spend limit exceeded")
	ErrConcurrencyLimitExceeded = errors.New("mcpguard: concurrency limit exceeded")
	ErrInvalidResponse          = errors.New("mcpguard: invalid response")
	ErrUpstreamUnavailable      = errors.New("mcpguard: upstream unavailable")
	ErrAuditUnavailable         = errors.New("mcpguard: audit unavailable")
	ErrInternal                 = errors.New("mcpguard: internal error")
)

// Sentinel returns the sentinel error of c, or nil for an unknown code.
func (c Code) Sentinel() error {
	switch c {
	case CodeUnauthenticated:
		return ErrUnauthenticated
	case CodeForbidden:
		return ErrForbidden
	case CodeWriteNotAllowed:
		return ErrWriteNotAllowed
	case CodeToolNotFound:
		return ErrToolNotFound
	case CodeInvalidArguments:
		return ErrInvalidArguments
	case CodeConfirmationRequired:
		return ErrConfirmationRequired
	case CodeRateLimitExceeded:
		return ErrRateLimitExceeded
	case CodeSpendLimitExceeded:
		return ErrSpendLimitExceeded
	case CodeConcurrencyLimitExceeded:
		return ErrConcurrencyLimitExceeded
	case CodeInvalidResponse:
		return ErrInvalidResponse
	case CodeUpstreamUnavailable:
		return ErrUpstreamUnavailable
	case CodeAuditUnavailable:
		return ErrAuditUnavailable
	case CodeInternal:
		return ErrInternal
	}
	return nil
}

// JSONRPC returns the JSON-RPC error code of c in protocol-error mode. For
// [CodeToolNotFound] it returns -32602, the code the go-sdk itself uses for
// an unknown tool; [Options.NotFoundCode] overrides it.
func (c Code) JSONRPC() int64 {
	switch c {
	case CodeUnauthenticated:
		return -32000
	case CodeForbidden, CodeWriteNotAllowed, CodeConfirmationRequired:
		return -32001
	case CodeToolNotFound, CodeInvalidArguments:
		return jsonrpc.CodeInvalidParams
	case CodeRateLimitExceeded, CodeSpendLimitExceeded, CodeConcurrencyLimitExceeded:
		return -32029
	case CodeUpstreamUnavailable:
		return -32003
	}
	return jsonrpc.CodeInternalError
}

// HTTPStatus returns the HTTP status of c for gateways and HTTP routes: 502
// for UPSTREAM_UNAVAILABLE (a gateway answers 504 when the downstream timed
// out), and 500 for INTERNAL and for an unknown code.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeUnauthenticated:
		return 401
	case CodeForbidden, CodeWriteNotAllowed, CodeConfirmationRequired:
		return 403
	case CodeToolNotFound:
		return 404
	case CodeInvalidArguments:
		return 400
	case CodeRateLimitExceeded, CodeSpendLimitExceeded, CodeConcurrencyLimitExceeded:
		return 429
	case CodeInvalidResponse, CodeUpstreamUnavailable:
		return 502
	case CodeAuditUnavailable:
		return 503
	}
	return 500
}

// Retryable reports whether retrying the same call later can succeed.
func (c Code) Retryable() bool {
	switch c {
	case CodeRateLimitExceeded, CodeSpendLimitExceeded, CodeConcurrencyLimitExceeded,
		CodeUpstreamUnavailable, CodeAuditUnavailable:
		return true
	}
	return false
}

// A DenialError is a refusal by a guard. It unwraps to the sentinel of its
// Code, so errors.Is(err, ErrForbidden) works. Its message is safe to show
// to a model: it never contains credentials or argument values.
type DenialError struct {
	// Code is the error-contract code.
	Code Code
	// Message is a short, safe explanation.
	Message string
	// RetryAfter is set for limit denials: a retry after it can succeed.
	// Negative means that the call must not simply be retried: no wait can
	// make it succeed (it costs more than a limit allows in all), or it is
	// a write whose handler failed after it started (it may have written).
	// Such a denial is not retryable.
	RetryAfter time.Duration
	// CorrelationID ties the denial to its audit record; set by the guard.
	CorrelationID string
	// Details holds extra safe, structured information (e.g. the field that
	// failed validation). Nil means none.
	Details map[string]any
}

// Deny returns a *DenialError with code c and message msg.
func Deny(c Code, msg string) *DenialError { return &DenialError{Code: c, Message: msg} }

// Error returns "CODE: message", or "CODE" without a message. Without a
// code (no refusal of the contract: a Guard answers a handler's as the
// handler's failure, INTERNAL) it reads "(no code)" in its place, so that
// its text is never empty.
func (e *DenialError) Error() string {
	code := string(e.Code)
	if code == "" {
		code = "(no code)"
	}
	if e.Message == "" {
		return code
	}
	return code + ": " + e.Message
}

// Unwrap returns the sentinel error of e.Code.
func (e *DenialError) Unwrap() error { return e.Code.Sentinel() }

// Retryable reports whether the same call may succeed if made again later
// (after RetryAfter, when it is set): its code is one a retry can get
// past ([Code.Retryable]) and RetryAfter is not negative. It is the
// "retryable" member of the refusal on the wire.
func (e *DenialError) Retryable() bool { return e.Code.Retryable() && e.RetryAfter >= 0 }

// retryAfterSeconds rounds up, so that a retry after the stated number of
// whole seconds is never early, but to no more than the largest number of
// seconds a time.Duration holds (about 292 years: a store's "for ever"),
// which DenialOf reads back.
func (e *DenialError) retryAfterSeconds() (int64, bool) {
	if e.RetryAfter < 0 {
		return 0, false
	}
	if e.RetryAfter == 0 {
		if e.Code == CodeRateLimitExceeded || e.Code == CodeSpendLimitExceeded || e.Code == CodeConcurrencyLimitExceeded {
			return 1, true
		}
		return 0, false
	}
	return min(int64(math.Ceil(e.RetryAfter.Seconds())), maxRetrySeconds), true
}

// errorBody is the wire shape {"error":{...}} of both modes.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code              Code           `json:"code"`
	Message           string         `json:"message"`
	Retryable         bool           `json:"retryable"`
	RetryAfterSeconds *int64         `json:"retry_after_seconds,omitempty"`
	CorrelationID     string         `json:"correlation_id,omitempty"`
	Details           map[string]any `json:"details,omitempty"`
}

func (e *DenialError) object() errorObject {
	o := errorObject{
		Code:          e.Code,
		Message:       e.Message,
		Retryable:     e.Retryable(),
		CorrelationID: e.CorrelationID,
		Details:       e.Details,
	}
	if o.Message == "" {
		o.Message = string(e.Code)
	}
	if s, ok := e.retryAfterSeconds(); ok {
		o.RetryAfterSeconds = &s
	}
	return o
}

// Result returns e as a tool-error result: IsError set, StructuredContent
// and a text content both holding {"error":{"code","message","retryable",
// "retry_after_seconds"?,"correlation_id"?,"details"?}}. The result's
// GetError returns e.
func (e *DenialError) Result() *mcp.CallToolResult {
	body := errorBody{Error: e.object()}
	text, err := json.Marshal(body)
	if err != nil { // details that do not marshal: drop them
		body.Error.Details = nil
		text, _ = json.Marshal(body)
	}
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: json.RawMessage(text),
	}
	res.SetError(e)
	return res
}

// JSONRPCError returns e as a JSON-RPC error object: the code of the
// contract table (or notFoundCode for TOOL_NOT_FOUND when non-zero), the
// message, and data {"code","message","retryable","retry_after_seconds"?,
// "correlation_id"?,"details"?}.
func (e *DenialError) JSONRPCError(notFoundCode int64) *jsonrpc.Error {
	code := e.Code.JSONRPC()
	if e.Code == CodeToolNotFound && notFoundCode != 0 {
		code = notFoundCode
	}
	o := e.object()
	data, err := json.Marshal(o)
	if err != nil {
		o.Details = nil
		data, _ = json.Marshal(o)
	}
	return &jsonrpc.Error{Code: code, Message: o.Message, Data: data}
}

// notFound is the TOOL_NOT_FOUND denial. Its message mirrors the go-sdk's
// own for an unknown tool, so a hidden tool is indistinguishable from one
// that does not exist.
func notFound(name string) *DenialError {
	return &DenialError{Code: CodeToolNotFound, Message: "unknown tool " + strconv.Quote(name)}
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpguard/mcpguard/internal/gaveup"
	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// JSON-RPC error codes the gateway answers with itself. Everything else is
// relayed from the downstream.
const (
	// CodeParseError: the body is not JSON (HTTP 400).
	CodeParseError = -32700
	// CodeInvalidRequest: not a JSON-RPC envelope (HTTP 400).
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: a tool the policy has no rule for, or hides
	// (HTTP 404; 400 on a request that names a session, where a 404 would
	// tell the client its session has ended).
	CodeMethodNotFound = -32601
	// CodeInvalidParams: a request whose authorization cannot be decided (HTTP 400).
	CodeInvalidParams = -32602
	// CodeInternal: the gateway could not make the write-ahead audit record
	// (HTTP 503), or could not compute a call's cost (Options.Cost panicked
	// or returned a negative, NaN or infinite one) or send it (a custom
	// Transport's RoundTrip panicked) (HTTP 500).
	CodeInternal = -32603
	// CodeUnauthenticated: no or bad bearer token (HTTP 401).
	CodeUnauthenticated = -32000
	// CodeForbidden: the policy refuses the call (HTTP 403).
	CodeForbidden = -32001
	// CodeUpstreamUnavailable: the downstream is down or timed out (HTTP 502 / 504).
	CodeUpstreamUnavailable = -32003
	// CodeLimitExceeded: a rate, spend or in-flight cap (HTTP 429).
	CodeLimitExceeded = -32029
)

// rpcError is a refusal the gateway answers locally.
type rpcError struct {
	code       int
	status     int    // HTTP status for a single-message request
	contract   string // error-contract name, e.g. "FORBIDDEN"
	message    string
	data       map[string]any
	retryAfter time.Duration
	challenge  string // WWW-Authenticate value of a 401
	// unsent says the request was refused before anything of it was sent
	// downstream, so a tools/call it carried is given back its charge.
	unsent bool
	// cause is why the downstream's exchange failed, for a call's outcome
	// record ([callState.answeredErr]).
	cause failKind
	// why is, for a token refused, the token package's reason (expired,
	// wrong audience, unknown kid), for the log only: the client is told
	// "invalid bearer token". Never the token.
	why string
}

func errParse() *rpcError {
	return &rpcError{code: CodeParseError, status: http.StatusBadRequest, contract: "INVALID_REQUEST", message: "Parse error: body is not valid UTF-8 JSON"}
}

func errInvalidRequest(why string) *rpcError {
	return &rpcError{code: CodeInvalidRequest, status: http.StatusBadRequest, contract: "INVALID_REQUEST", message: "Invalid Request: " + why}
}

func errInvalidParams(why string) *rpcError {
	return &rpcError{code: CodeInvalidParams, status: http.StatusBadRequest, contract: "INVALID_ARGUMENTS", message: "Invalid params: " + why}
}

// errUnauthenticated is the 401 refusal. invalidToken marks a presented but
// unknown or malformed credential (RFC 6750 error="invalid_token"); a request
// without credentials gets the bare challenge.
func errUnauthenticated(why string, invalidToken bool) *rpcError {
	c := `Bearer realm="mcp-gateway"`
	if invalidToken {
		c += `, error="invalid_token"`
	}
	return &rpcError{code: CodeUnauthenticated, status: http.StatusUnauthorized, contract: "UNAUTHENTICATED", message: "Unauthenticated: " + why, challenge: c}
}

// errClientGone is the refusal of a request whose client went away (HTTP
// 499, never written): before it was sent downstream (unsent), or, for a
// GET or DELETE, while it was. One whose context ended at a deadline is
// answered errDeadlinePassed instead ([Gateway.unanswered]).
func errClientGone(unsent bool) *rpcError {
	return &rpcError{code: CodeUpstreamUnavailable, status: 499, contract: "UPSTREAM_UNAVAILABLE", message: "client went away", unsent: unsent}
}

// errDeadlinePassed answers a request refused as errClientGone whose
// context ended at its deadline (an embedder's middleware's, an
// http.TimeoutHandler's), or whose deadline passed: not as its client hung
// up (net/http cancels the context then), so the client may still wait
// for an answer.
func errDeadlinePassed() *rpcError {
	e := errUpstream(true)
	e.message = "Request timed out: its deadline passed before the upstream answered"
	return e
}

// deadlineAnswer returns the answer to e, a request's refusal as its client
// went away (errClientGone, or a limiter's refusal as its context had
// ended): errDeadlinePassed when the request's context (ctx) ended at its
// deadline, or its deadline passed; e otherwise.
func deadlineAnswer(ctx context.Context, e *rpcError) *rpcError {
	if errors.Is(gaveup.Err(ctx), context.DeadlineExceeded) {
		return errDeadlinePassed()
	}
	return e
}

func errUpstream(timeout bool) *rpcError {
	if timeout {
		return &rpcError{code: CodeUpstreamUnavailable, status: http.StatusGatewayTimeout, contract: "UPSTREAM_UNAVAILABLE", message: "Upstream timed out"}
	}
	return &rpcError{code: CodeUpstreamUnavailable, status: http.StatusBadGateway, contract: "UPSTREAM_UNAVAILABLE", message: "Upstream unavailable"}
}

// errAuthUnavailable is the refusal of a request whose token the
// authenticator could not judge (see ErrAuthenticatorUnavailable).
func errAuthUnavailable(timeout bool) *rpcError {
	e := errUpstream(timeout)
	e.message = "Authorization server unavailable: the token could not be checked"
	if timeout {
		e.message = "Authorization server timed out: the token could not be checked"
	}
	return e
}

// errCostFailed refuses a call whose cost Options.Cost could not give
// ([Gateway.callCost]).
func errCostFailed() *rpcError {
	return &rpcError{code: CodeInternal, status: http.StatusInternalServerError, contract: "INTERNAL",
		message: "Internal error: the cost of the call could not be computed"}
}

// errAuthFailed refuses a request whose Authenticator panicked
// ([Gateway.callAuthenticator]).
func errAuthFailed() *rpcError {
	return &rpcError{code: CodeInternal, status: http.StatusInternalServerError, contract: "INTERNAL",
		message: "Internal error: the token could not be checked"}
}

// errTransportFailed answers a call whose custom Transport's RoundTrip
// panicked ([errTransportPanic]).
func errTransportFailed() *rpcError {
	return &rpcError{code: CodeInternal, status: http.StatusInternalServerError, contract: "INTERNAL",
		message: "Internal error: the request could not be sent downstream"}
}

func errTooLarge(limit int64) *rpcError {
	return &rpcError{code: CodeInvalidRequest, status: http.StatusRequestEntityTooLarge, contract: "INVALID_REQUEST", message: "Invalid Request: body exceeds " + strconv.FormatInt(limit, 10) + " bytes"}
}

// errMethod refuses a request to the MCP path with a method the gateway
// does not serve (405; the caller sets Allow).
func errMethod(method string) *rpcError {
	return &rpcError{code: CodeInvalidRequest, status: http.StatusMethodNotAllowed, contract: "INVALID_REQUEST",
		message: "Invalid Request: HTTP method " + quoted(method) + " not allowed"}
}

// errUnsupportedBody refuses a POST whose body is declared in a form the
// gateway does not read (415): see [checkBodyCoding].
func errUnsupportedBody(why string) *rpcError {
	return &rpcError{code: CodeInvalidRequest, status: http.StatusUnsupportedMediaType, contract: "INVALID_REQUEST", message: "Invalid Request: " + why}
}

// maxQuoted bounds the bytes of a client's string that [quoted] shows.
const maxQuoted = 128

// quoted returns s, a string a client chose (a tool name, an HTTP method),
// quoted, escaped and cut at maxQuoted bytes for a record or a log line
// ([textsafe.Quoted]).
func quoted(s string) string { return textsafe.Quoted(s, maxQuoted) }

// shortName returns tool, a tool name a refusal shows (not quoted: it
// passed [policy.CheckName]), cut as [quoted] cuts, with "..." after it.
func shortName(tool string) string {
	if cut, more := textsafe.CutBytes(tool, maxQuoted); more {
		return cut + "..."
	}
	return tool
}

// appendResponse appends the JSON-RPC error response for id (nil means null).
func (e *rpcError) appendResponse(dst []byte, id []byte, correlationID string) []byte {
	if id == nil {
		id = []byte("null")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendJSON(dst, e.message)
	data := map[string]any{"code": e.contract, "correlation_id": correlationID}
	for k, v := range e.data {
		data[k] = v
	}
	if e.retryAfter > 0 {
		data["retry_after_seconds"] = retryAfterSeconds(e.retryAfter)
	}
	dst = append(dst, `,"data":`...)
	dst = appendJSON(dst, data)
	return append(dst, "}}"...)
}

func appendJSON(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// retryAfterSeconds rounds d up to whole seconds, at least 1, and at most
// the seconds a time.Duration holds (as mcpguard.DenialOf reads them back).
func retryAfterSeconds(d time.Duration) int64 {
	s := int64(d / time.Second) // rounded up below: d + 999999999 overflows
	if d%time.Second > 0 && s < math.MaxInt64/int64(time.Second) {
		s++
	}
	if s < 1 {
		s = 1
	}
	return s
}

// writeError answers a single refused message with its semantic status.
// The answer echoes the message's id, which its client chose (as long as
// the body, at most): it is written as [Gateway.writeOwn] writes.
func (g *Gateway) writeError(w http.ResponseWriter, e *rpcError, id []byte, correlationID string) {
	g.writeErrorOf(w, e, id, correlationID, id != nil)
}

// writeErrorOf is writeError of a refused message that is a request
// (request: a JSON-RPC request, which has an id) or not (a client's
// response to a server's request, whose id is the server's): only a
// request's refusal may be answered 200 (Options.TransientStatusOK); a
// client reads a 200 to its response as taken.
func (g *Gateway) writeErrorOf(w http.ResponseWriter, e *rpcError, id []byte, correlationID string, request bool) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.challenge != "" {
		h.Set("WWW-Authenticate", e.challenge)
	}
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(e.retryAfter), 10))
	}
	if e.status == http.StatusUnsupportedMediaType {
		// The body codings the gateway takes (RFC 9110 section 12.5.3).
		h.Set("Accept-Encoding", "identity")
	}
	status := e.status
	if g.transientOK && request && transientStatus(status) {
		status = http.StatusOK // see Options.TransientStatusOK
	}
	w.WriteHeader(status)
	g.writeOwn(w, e.appendResponse(nil, id, correlationID))
}

// transientStatus reports whether a go-sdk client (v1.8.0) takes status
// for a transient failure of its transport, whose body it does not read.
func transientStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// smallAnswer is the largest answer of the gateway's own that
// [Gateway.writeOwn] writes without a guard: net/http's servers buffer
// that much of an answer (HTTP/1 2 KiB, HTTP/2 4 KiB) and write it once
// the handler has returned, holding nothing of the request's then but its
// connection, as for a client that keeps one open (the server's
// WriteTimeout, if any, bounds that write).
const smallAnswer = 2 << 10

// writeOwn writes p, an answer of the gateway's own whose header is
// written (a refusal, the health check's), to w. One larger than
// smallAnswer is written as a relayed answer is ([writeGuard]): a write
// that does not complete within the timeout (the client stopped reading)
// ends it, and the handler returns, instead of holding the request's body
// buffer and the answer for as long as the client keeps its connection.
func (g *Gateway) writeOwn(w http.ResponseWriter, p []byte) {
	if len(p) <= smallAnswer {
		w.Write(p)
		return
	}
	out := writeGuard{w: w, timeout: g.timeout, origin: time.Now()}
	defer out.watch()()
	out.write(p)
}

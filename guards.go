package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/corrid"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The guards below are the pipeline's steps as stand-alone [Middleware],
// for servers that compose their own chain (the write-path steps, which
// take a Guard's [Options], are in steps.go). They report denials as tool
// errors. [Guard] runs the same checks in one pass, in the order of the
// package documentation, and is what most servers want.

// Recover turns a panic in the wrapped handler into an INTERNAL tool error
// (the go-sdk has no recover: a panic would end the process), and
// normalises the two returns the go-sdk mishandles: (nil, nil) and a plain
// error (which would reach the client as JSON-RPC code 0, text and all).
// A *DenialError the handler returns is rendered as a tool error of its own
// code (one without a code is no refusal of the error contract, and becomes
// INTERNAL, as in a [Guard]), a *jsonrpc.Error is passed on as it is, and
// any other error becomes INTERNAL. The panic value and stack, and the text
// of such an error, go to log (nil means [slog.Default]), never to the
// client; the tool's name and that text are shown there as
// [Options].Logger says. An error that wraps context.Canceled once ctx was
// cancelled (the client went away while the handler ran) is no failure of
// the tool's: it is logged at Info, without its text, and an [Audit]
// outside records it so. A tool-error result that carries an error set
// with SetError is that error (a *DenialError's Result is its refusal; any
// other error's text is not shown), as in a Guard. The steps inside tell
// Recover what a Guard knows: the failure of a write's handler (the
// write-path steps, [Confirm], [Limit], [DryRun] and [WriteAhead], know
// the tool's class and whether the call is a dry run) is answered not
// retryable, saying the write may have been made, as is a write's own
// refusal but for a cap's or AUDIT_UNAVAILABLE; and a step's panic before
// the tool ran (a Cost or Describe function's bug) is logged as such.
func Recover(log *slog.Logger) Middleware {
	if log == nil {
		log = slog.Default()
	}
	log = logsafe.Logger(log)
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			rc := &recoverCtx{Context: ctx, req: req}
			defer func() {
				if r := recover(); r != nil {
					if rc.before {
						log.Error("mcpguard: a step panicked before the tool ran (a callback's bug: its stack says which)", "tool", logName(toolName(req)), "panic", panicText(r), "stack", string(debug.Stack()))
					} else {
						log.Error("mcpguard: tool handler panicked", "tool", logName(toolName(req)), "panic", panicText(r), "stack", string(debug.Stack()))
					}
					res, err = denied(ctx, req, rc.failed(Deny(CodeInternal, "the tool failed unexpectedly"))), nil
				}
			}()
			res, err = next(rc, req)
			res, err = handlerError(req, res, err)
			switch {
			case err != nil:
				// One without a code is no refusal of the contract: a
				// failure of the handler's, INTERNAL, as the Guard has it.
				var de *DenialError
				if errors.As(err, &de) && de != nil && de.Code != "" {
					// Its details held to the nesting a go-sdk client
					// reads, as a Guard holds them (see ValidateOutput).
					if oerr := structuredEncodes(de.Result().StructuredContent, -1); oerr != nil {
						if ac := auditCall(ctx, req); ac != nil {
							ac.detail = "refused by the tool; its refusal: output: " + oerr.Error()
						}
						return denied(ctx, req, rc.failed(Deny(CodeInvalidResponse, "the tool returned a malformed refusal"))), nil
					}
					return denied(ctx, req, de), nil
				}
				if we := wireError(err); we != nil {
					return nil, we
				}
				if clientLeft(ctx, err) {
					// Its client went away while it ran: no failure of the
					// tool's (see Guard's settle).
					log.Info(clientLeftLog, "tool", logName(toolName(req)))
					if ac := auditCall(ctx, req); ac != nil {
						ac.detail = clientLeftDetail
					}
				} else {
					log.Error("mcpguard: tool handler failed", "tool", logName(toolName(req)), "err", logText(err.Error()))
				}
				return denied(ctx, req, rc.failed(Deny(CodeInternal, "the tool failed"))), nil
			case res == nil:
				return denied(ctx, req, rc.failed(Deny(CodeInternal, "the tool returned no result"))), nil
			}
			return res, nil
		}
	}
}

// recoverCtx is the context [Recover] gives its call of req: the steps
// inside tell it what it cannot see from outside, so that it answers as a
// Guard does.
type recoverCtx struct {
	context.Context
	req    *mcp.CallToolRequest
	write  bool // a step handed a write (not a dry run) on to its handler
	before bool // a step panicked before the tool ran (see stepRun.end)
}

// recoverKey is the context key of a recoverCtx.
type recoverKey struct{}

func (r *recoverCtx) Value(key any) any {
	if key == (recoverKey{}) {
		return r
	}
	return r.Context.Value(key)
}

// recoverCall returns the recoverCtx of the Recover around ctx's call of
// req, or nil: not another call's (a call made in-process by a handler).
func recoverCall(ctx context.Context, req *mcp.CallToolRequest) *recoverCtx {
	r, _ := ctx.Value(recoverKey{}).(*recoverCtx)
	if r == nil || r.req != req {
		return nil
	}
	return r
}

// failed marks d, the refusal of a call whose handler failed, as a Guard
// does (see call.failedWrite): a write's handler may have written.
func (r *recoverCtx) failed(d *DenialError) *DenialError {
	if r.write && !r.before {
		d.RetryAfter = -1
		d.Message += "; the write may have been made: check before repeating it"
	}
	return d
}

// Authenticate resolves the caller with a and puts the [Identity] in the
// context for the handler ([FromContext]); a call without a valid identity
// is refused as [Guard] refuses it (see [Authenticator]) and the handler
// does not run. A nil a refuses every call as UNAUTHENTICATED.
func Authenticate(a Authenticator) Middleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if a == nil {
				return denied(ctx, req, Deny(CodeUnauthenticated, "authentication required")), nil
			}
			// a's panic (the operator's bug) is one before the tool ran.
			var s stepRun
			defer s.end(ctx, req)
			id, err := a.Authenticate(ctx, req)
			s.done = true
			if err != nil || noIdentity(id) {
				if ac := auditCall(ctx, req); ac != nil && ac.detail == "" {
					ac.detail = authDetail(err) // why, as a Guard records it
				}
				// Before resolution: SchemaSafe keeps its StructuredContent,
				// as a Guard's refusal before resolution does.
				res := denied(ctx, req, authDenial(err))
				if g, ok := res.GetError().(refusedByGuard); ok {
					g.unresolved = true
					res.SetError(g)
				}
				return res, nil
			}
			if ac := auditCall(ctx, req); ac != nil {
				ac.id = id
			}
			return next(NewContext(ctx, id), req)
		}
	}
}

// authDenial is the refusal of a call whose caller could not be
// authenticated (err from the Authenticator, or nil for no identity): a
// *DenialError of the authenticator with one of the codes an
// [Authenticator] may report, as it is (its message, and for a cap its
// wait), anything else UNAUTHENTICATED with a message of the guard's (an
// error's text may hold a credential).
func authDenial(err error) *DenialError {
	var de *DenialError
	if errors.As(err, &de) {
		switch de.Code {
		case CodeUnauthenticated, CodeUpstreamUnavailable:
			return Deny(de.Code, de.Message)
		case CodeRateLimitExceeded, CodeConcurrencyLimitExceeded:
			d := Deny(de.Code, de.Message)
			d.RetryAfter = de.RetryAfter
			return d
		}
	}
	return Deny(CodeUnauthenticated, "authentication required")
}

// Authorize applies p to the principal in the context (see [Authenticate],
// which must run first: without a principal every call is refused). Tools
// the principal may not see are refused exactly as unknown tools are.
// Argument limits are checked against the raw arguments, before a
// [ValidateArguments] inside Authorize sees them: a call whose arguments
// both fail the tool's schema and break a limit (or that a limit cannot
// read, "50" for a number) is refused FORBIDDEN, where a [Guard], which
// validates first, answers INVALID_ARGUMENTS (and an [Audit] outside
// records FORBIDDEN). Both refuse it. A nil p refuses every call as
// INTERNAL (fail closed).
func Authorize(p *policy.Policy) Middleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if p == nil {
				return denied(ctx, req, Deny(CodeInternal, "the call cannot be authorized: no policy")), nil
			}
			pr := PrincipalFromContext(ctx)
			if pr == nil {
				return denied(ctx, req, Deny(CodeUnauthenticated, "authentication required")), nil
			}
			name := toolName(req)
			d := p.Authorize(pr, name)
			if d.Code == policy.NotFound {
				return nil, notFoundWire(name, 0)
			}
			ac := auditCall(ctx, req)
			if ac != nil {
				ac.rule = d.Rule
			}
			// Refused in the Guard's words, which its record says too.
			refuse := func(de *DenialError) (*mcp.CallToolResult, error) {
				if ac != nil && ac.detail == "" {
					ac.detail = de.Message
				}
				return denied(ctx, req, de), nil
			}
			if d.Code != policy.Allowed {
				return refuse(policyDenial(d, name))
			}
			if len(d.Rule.ArgLimits) > 0 {
				var args map[string]any
				if req.Params != nil {
					if doc, err := decodeStrict(orEmpty(req.Params.Arguments)); err == nil {
						args, _ = doc.(map[string]any)
					}
				}
				if d := p.CheckArgs(pr, d.Rule, policy.MapArgs(args)); !d.Allowed() {
					return refuse(Deny(CodeForbidden, d.Reason))
				}
			}
			return next(ctx, req)
		}
	}
}

// ValidateArguments checks the call's arguments with v (see [NewValidator])
// and refuses invalid ones with INVALID_ARGUMENTS; the handler does not run.
// A nil v refuses every call as INTERNAL (fail closed).
func ValidateArguments(v *Validator) Middleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if v == nil {
				return denied(ctx, req, Deny(CodeInternal, "the arguments cannot be validated: no schema")), nil
			}
			var raw []byte
			if req.Params != nil {
				raw = req.Params.Arguments
			}
			if _, err := v.Validate(raw); err != nil {
				var de *DenialError
				if errors.As(err, &de) {
					return denied(ctx, req, de), nil
				}
				return denied(ctx, req, Deny(CodeInvalidArguments, "arguments failed validation")), nil
			}
			if ac := auditCall(ctx, req); ac != nil {
				ac.valid = true
			}
			return next(ctx, req)
		}
	}
}

// Audit writes one outcome event per call to sink: the tool, the caller,
// whether the call was allowed and the mcpguard code of a denial. The call's
// correlation id goes into the context, and the guards inside Audit
// ([Recover], [Authenticate], [Authorize], [ValidateArguments], [Confirm],
// [Limit], [DryRun], [WriteAhead], [ValidateOutput]) put it in their
// refusals, so that a client's error names its audit record; a Recover
// outside Audit (the pipeline's order) does not see it. The guards inside
// also tell Audit what they learn, so
// that its record is the one a [Guard] would write: the caller
// ([Authenticate]), the tool's class ([Authorize] and the write-path
// steps), that the arguments passed validation ([ValidateArguments]), that
// the call is a dry run (known to the write-path steps, which take the
// dry-run settings: a dry run whose arguments [ValidateArguments] refuses
// before any of them sees it is recorded with dry_run false, where a Guard
// records dry_run true), the spend [Limit] charged, and that a limiter
// admitted the call only because its store failed (audit.DetailFailOpen,
// as that limiter's last decision for the call says), and why a step
// refused the call (in the Guard's words); where a step decides otherwise
// than a Guard, the record says what the step decided (a call that breaks
// an argument limit and fails validation: FORBIDDEN, see [Authorize]). A
// handler's error is recorded
// as a Guard records it: "handler error", or "refused by the tool" for a
// *DenialError of its own. A JSON-RPC error
// from a step in protocol-error mode is recorded with the code in its data,
// and an unknown tool's as TOOL_NOT_FOUND. A failing sink (one that
// panics too) is reported to the log and does not change the result.
//
// Audit takes the settings of opts (nil means defaults) that a [Guard]
// uses for its records: ArgsKey (args_sha256 is then keyed, see
// [Options].ArgsKey), Logger (nil means slog.Default), Now, SessionKey
// (the session_id of a call whose MCP session has no id), RequestIDHeader
// and the RecordArgs of Tools (fields recorded verbatim, only for arguments that a
// ValidateArguments inside Audit passed). It ignores the others.
//
// Audit returns an error for a nil sink, an ArgsKey shorter than 16
// bytes or a RequestIDHeader that is not a header name.
func Audit(sink audit.Sink, opts *Options) (Middleware, error) {
	if sink == nil {
		return nil, errors.New("mcpguard: nil audit sink")
	}
	if err := nilSink(sink); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if n := len(o.ArgsKey); n > 0 && n < 16 {
		return nil, fmt.Errorf("mcpguard: ArgsKey of %d bytes, want at least 16", n)
	}
	if err := checkHeaderName(o.RequestIDHeader); err != nil {
		return nil, err
	}
	key, reqIDHeader := slices.Clone(o.ArgsKey), o.RequestIDHeader
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log = logsafe.Logger(log)
	now := time.Now
	if o.Now != nil {
		now = safeNow(o.Now, log)
	}
	tools, sessionKey := cloneTools(o.Tools), o.SessionKey
	ids := new(corrid.Source)
	ids.Init()
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c := newCall(now(), ids)
			c.hashKey, c.req = keyOf(&key), req
			c.requestID = requestID(req, reqIDHeader)
			c.name, c.id = toolName(req), FromContext(ctx)
			if req != nil && req.Params != nil {
				c.raw = req.Params.Arguments
			}
			// Entered after a step of the Recover's chain handed the write
			// on: of another chain, to which its handler passed its own
			// request on (see stepRun.end).
			if rc := recoverCall(ctx, req); rc != nil && rc.write {
				c.passedOn = true
			}
			ctx = &auditCtx{Context: ctx, c: c, corr: c.corr}
			write := func() {
				if c.session == "" && sessionKey != nil && c.id != nil && c.id.Principal != nil {
					c.session = keySession(log, sessionKey, req, c)
				}
				ev := &c.outcome
				buildEvent(ev, now(), tools[c.name].RecordArgs, req, c, parentCorr(ctx, c.corr, req), audit.PhaseOutcome)
				// A sink that panics (its bug) failed its write: it must
				// not change the result either.
				defer func() {
					if r := recover(); r != nil {
						log.Error("mcpguard: audit record not written: the sink panicked", "tool", logName(c.name), "correlation_id", c.corr, "panic", panicText(r))
					}
				}()
				if werr := sink.Write(context.WithoutCancel(ctx), ev); werr != nil {
					log.Error("mcpguard: audit record not written", "tool", logName(c.name), "correlation_id", c.corr, "err", werr)
				}
			}
			// A panic below is recorded too, then goes on up to the
			// Recover outside (the order of DESIGN.md's pipeline).
			defer func() {
				if r := recover(); r != nil {
					c.denial = Deny(CodeInternal, "")
					if c.detail != panicBeforeTool {
						c.detail = "panic"
					}
					write()
					panic(r)
				}
			}()
			res, err := next(ctx, req)
			// Recorded as a Guard reads it: a handler's refusal or error in
			// a tool-error result is its error (passed on as it is).
			rres, rerr := handlerError(req, res, err)
			switch res, err := rres, rerr; {
			case err != nil:
				d, detail := wireDenial(err)
				c.denial = d
				if c.detail == "" {
					// A step inside that refused said why (in
					// protocol-error mode too): its words stay. Else
					// the handler's refusal or failure, as a Guard
					// records it.
					var de *DenialError
					switch c.detail = detail; {
					case detail != "":
					case d.Code == CodeInternal && clientLeft(ctx, err):
						c.detail = clientLeftDetail
					case errors.As(err, &de) && de != nil && de.Code != "":
						c.detail = "refused by the tool"
					case wireError(err) == nil:
						c.detail = "handler error"
					}
				}
			case res == nil:
				// (nil, nil): the Recover outside answers INTERNAL (and
				// the go-sdk would crash on it), so no call was carried
				// out as allowed, as the Guard records it.
				c.denial, c.detail = Deny(CodeInternal, ""), "handler returned no result"
			case res.IsError:
				var de *DenialError
				if errors.As(res.GetError(), &de) && de != nil && de.Code != "" {
					c.denial = de
				} else {
					c.detail = "tool reported an error"
				}
			}
			write()
			return res, err
		}
	}, nil
}

// keySession returns sessionKey's key of c's session for the [Audit]
// middleware's record. A sessionKey that panics (its bug) gives none: the
// panic is logged with its stack, and the record is written without it.
// Unrecovered, it left the call without a record and went on up to the
// Recover outside, which answered a call that ran as a tool that failed.
func keySession(log *slog.Logger, sessionKey func(*mcp.CallToolRequest, *Identity) string, req *mcp.CallToolRequest, c *call) (key string) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("mcpguard: Options.SessionKey panicked; the audit record has no session_id", "tool", logName(c.name), "correlation_id", c.corr, "panic", panicText(r), "stack", string(debug.Stack()))
			key = ""
		}
	}()
	return sessionKey(req, c.id)
}

// auditCtx is the context the [Audit] middleware gives the call: it
// carries the correlation id, and the call whose record Audit writes, for
// the guards inside to fill in (see [auditCall]).
type auditCtx struct {
	context.Context
	c    *call
	corr any // c.corr, boxed once
	// openLims are the limiters whose last decision for the call admitted
	// it only because their store failed: c.failOpen while there are any
	// (see Guard.limitFailed).
	openLims []*limiter.Limiter
}

// auditKey is the context key of the [Audit] middleware's call: its
// auditCtx.
type auditKey struct{}

func (a *auditCtx) Value(key any) any {
	switch key {
	case corrKey{}:
		return a.corr
	case auditKey{}:
		return a
	}
	return a.Context.Value(key)
}

func (a *auditCtx) String() string { return fmt.Sprint(a.Context) + ".WithValue(mcpguard audit)" }

// auditCall returns the call of the [Audit] middleware around ctx's call
// of req, or nil. The guards inside Audit record in it what they learn;
// they run before Audit writes its record, on the call's goroutine. A
// handler inside Audit that runs another guarded call with its context
// (a dispatcher) passes another request, whose guards must not rewrite
// this record: the call is returned only for the request Audit saw.
func auditCall(ctx context.Context, req *mcp.CallToolRequest) *call {
	a, _ := ctx.Value(auditKey{}).(*auditCtx)
	if a == nil || a.c.req != req {
		return nil
	}
	return a.c
}

// wireDenial is the denial an error from below stands for in an audit
// record: a *DenialError itself; a JSON-RPC error of a step in
// protocol-error mode, by the code in its data; an unknown tool's error (of
// Authorize, or the go-sdk's own) as TOOL_NOT_FOUND; anything else as
// INTERNAL, with detail saying so for a protocol error.
func wireDenial(err error) (d *DenialError, detail string) {
	var de *DenialError
	if errors.As(err, &de) && de != nil && de.Code != "" {
		return de, ""
	}
	we := wireError(err)
	if we == nil {
		return Deny(CodeInternal, ""), ""
	}
	var o errorObject
	if len(we.Data) > 0 && json.Unmarshal(we.Data, &o) == nil && o.Code.Sentinel() != nil {
		return Deny(o.Code, o.Message), ""
	}
	if strings.HasPrefix(we.Message, "unknown tool ") {
		return Deny(CodeToolNotFound, we.Message), ""
	}
	return Deny(CodeInternal, ""), "protocol error"
}

// corrKey is the context key of the correlation id of the call ctx belongs
// to: a string for the [Audit] middleware's call (auditCtx), the *call
// itself for the guard pipeline's (identityCtx), whose corr is read
// without boxing a string at each lookup.
type corrKey struct{}

// correlationFrom returns the correlation id of the call ctx belongs to
// (the Audit middleware's or the guard pipeline's), or "".
func correlationFrom(ctx context.Context) string {
	switch v := ctx.Value(corrKey{}).(type) {
	case string:
		return v
	case *call: // the pipeline's (identityCtx)
		return v.corr
	}
	return ""
}

// CorrelationID returns the correlation id of the audit record of the call
// whose handler ctx belongs to: the guard pipeline's (see [Guard]), or the
// [Audit] middleware's around a chain. A handler puts it in its own errors
// and logs, so that they name the record; a refusal of the guard carries it
// already. A guarded call the handler makes with ctx (of another tool,
// in-process) records it as its parent ([audit.Event].ParentID). It returns
// "" for a context of neither.
func CorrelationID(ctx context.Context) string { return correlationFrom(ctx) }

// denied renders d, a refusal of req, as a tool error carrying the
// correlation id of ctx's audit record, if any.
func denied(ctx context.Context, req *mcp.CallToolRequest, d *DenialError) *mcp.CallToolResult {
	if id := correlationFrom(ctx); id != "" && d.CorrelationID == "" {
		out := *d
		out.CorrelationID = id
		d = &out
	}
	return guardRefusal(d.Result(), d, req)
}

// guardRefusal marks res, the tool-error result of d, as a refusal of the
// guard's (a step's, a Guard's) of req, not a handler's (see
// handlerError).
func guardRefusal(res *mcp.CallToolResult, d *DenialError, req *mcp.CallToolRequest) *mcp.CallToolResult {
	res.SetError(refusedByGuard{DenialError: d, req: req})
	return res
}

// refusedByGuard is the error of a refusal of the guard's own result: of
// the request req; unresolved when it came before the tool was resolved
// ([Authenticate]'s), which [SchemaSafe] leaves whole.
type refusedByGuard struct {
	*DenialError
	req        *mcp.CallToolRequest
	unresolved bool
}

func (r refusedByGuard) Unwrap() error { return r.DenialError }

// handlerError returns what a handler of req returned, res and err, with a
// tool-error result that carries an error of the handler's (set with
// SetError: a *DenialError's Result, or any other error) as that error,
// as a Guard reads it (sdkToolError). A refusal of req by a step inside
// (guardRefusal) stays the result it is; one of another request (another
// guarded tool's, called in process by the handler, whose refusal it
// returned) is the handler's, as a Guard reads it. A router that passes
// req on to an inner chain has that chain's refusals of req as its own.
func handlerError(req *mcp.CallToolRequest, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err != nil || res == nil || !res.IsError {
		return res, err
	}
	herr := res.GetError()
	if g, guards := herr.(refusedByGuard); herr == nil || guards && g.req == req {
		return res, nil
	}
	return nil, herr
}

func toolName(req *mcp.CallToolRequest) string {
	if req == nil || req.Params == nil {
		return ""
	}
	return req.Params.Name
}

func orEmpty(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	return raw
}

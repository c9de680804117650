package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unsafe"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/internal/corrid"
	"github.com/mcpguard/mcpguard/internal/gaveup"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call is the state of one guarded tools/call, from which the audit record
// is built on every way out. Its fields are ordered so that it takes 888
// bytes at most: with the allocator's header, a size class of 896.
type call struct {
	start     time.Time
	corr      string
	name      string
	id        *Identity
	rule      *policy.ToolRule
	raw       json.RawMessage
	args      map[string]any
	decoded   bool // args holds the decoded arguments (nil if they are not an object)
	valid     bool // the arguments passed validation
	dryRun    bool
	record    []string // argument fields the tool records verbatim
	cost      float64
	charged   float64 // the spend the call was charged (or, with no limiter, would have been)
	session   string  // Options.SessionKey's key of the call's session, once authenticated
	denial    *DenialError
	detail    string
	running   bool            // the handler was called and the guard has not answered
	ran       bool            // the handler was called (a write's may have been made)
	passedOn  bool            // an Audit's call entered after a Recover's write was handed on
	retry     bool            // the call returns a sealed RequestState: a logical call's next round
	preview   bool            // a dry run that returns a real next round's sealed RequestState
	confirmed bool            // a confirmation passed in this logical call
	failOpen  bool            // the limiter admitted the call because its store failed
	schemaOut bool            // the tool has an output schema its caller may know (see errorResult)
	ticket    *confirm.Ticket // the state the call came with, checked, used up when admitted

	// For what the server asks the client within the call (see askClient):
	// the guard and the policy that decided the call, and the refusal of
	// the call by a policy set while the client was asked.
	guard   *Guard
	pol     *policy.Policy
	revoked atomic.Pointer[revocation]

	// Memory of the call's own, so that a call allocates once: the
	// correlation id's and the argument hash's bytes (corr and, unless the
	// arguments' canonical form outgrows sumBuf, sum point into them), the
	// identity's context and the outcome record.
	corrBuf   [corrid.Len]byte
	sumBuf    [256]byte // the hash, and room for small arguments' canonical form
	summed    bool
	sum       string
	hashKey   *[]byte              // Options.ArgsKey, when the records' hash is keyed (see key)
	requestID string               // the proxy's id of the request (Options.RequestIDHeader)
	req       *mcp.CallToolRequest // the call's request (auditCall, parentCorr)
	idCtx     identityCtx
	outcome   audit.Event
}

// newCall starts the state of a call, its correlation id drawn from ids.
func newCall(start time.Time, ids *corrid.Source) *call {
	c := &call{start: start}
	ids.PutAt(&c.corrBuf, start)
	c.corr = unsafe.String(&c.corrBuf[0], len(c.corrBuf)) // corrBuf is never written again
	return c
}

// argsSHA256 returns audit.ArgsSHA256 (audit.ArgsHMAC under
// Options.ArgsKey) of the call's arguments, computed once for both records
// of a write.
func (c *call) argsSHA256() string {
	if !c.summed {
		c.summed = true
		// h is in sumBuf unless the canonical form outgrew it; either way
		// nothing writes to it again.
		if h := audit.AppendArgsHMAC(c.sumBuf[:0], c.key(), c.raw); len(h) > 0 {
			c.sum = unsafe.String(&h[0], len(h))
		}
	}
	return c.sum
}

// key returns the key of the records' argument hash (Options.ArgsKey), or
// nil for a plain hash. The call holds a pointer to the key, 8 bytes where
// the slice takes 24, so that it stays within its size class (see call).
func (c *call) key() []byte {
	if c.hashKey == nil {
		return nil
	}
	return *c.hashKey
}

// keyOf returns what call.hashKey holds for key, the key of a Guard's or an
// Audit middleware's records (which outlives their calls): nil for none.
func keyOf(key *[]byte) *[]byte {
	if len(*key) == 0 {
		return nil
	}
	return key
}

// argsMap returns the decoded arguments, decoding them on first use (the
// fast validation path does not build them).
func (c *call) argsMap() map[string]any {
	if !c.decoded {
		c.decoded = true
		if doc, err := decodeStrict(orEmpty(c.raw)); err == nil {
			c.args, _ = doc.(map[string]any)
		}
	}
	return c.args
}

// serve runs the pipeline of DESIGN.md for one call. e may be nil (Install
// mode, unknown tool). next runs the tool.
func (g *Guard) serve(ctx context.Context, req *mcp.CallToolRequest, e *toolEntry, next mcp.ToolHandler) (res *mcp.CallToolResult, err error) {
	// Deferred first, so it runs last: the call ends for Wait once its
	// outcome is recorded.
	g.active.Add(1)
	defer g.active.Add(-1)
	// One policy decides the call throughout, whatever SetPolicy does
	// meanwhile: its rule (c.rule) decides the steps after step 5. (But
	// for the answers to what the call asks its client, see recheck and
	// call.reask.)
	pol := g.pol.Load()
	c := newCall(g.now(), &g.ids)
	c.guard, c.pol = g, pol
	c.hashKey, c.req = keyOf(&g.opts.ArgsKey), req
	c.requestID = requestID(req, g.opts.RequestIDHeader)
	if req != nil && req.Params != nil {
		c.name = req.Params.Name
		c.raw = req.Params.Arguments
	}
	// 1. Recover, and 12. audit on every way out.
	defer func() {
		if r := recover(); r != nil {
			if c.ran {
				g.log.Error("mcpguard: tool handler panicked", "tool", logName(c.name), "correlation_id", c.corr, "panic", panicText(r), "stack", string(debug.Stack()))
				c.detail = "panic"
			} else {
				// Code of the operator's that the guard called before the
				// tool (an Authenticator, a Cost or Describe function):
				// the trail must not say the tool ran.
				g.log.Error("mcpguard: the guard panicked before the tool ran (a callback's bug: its stack says which)", "tool", logName(c.name), "correlation_id", c.corr, "panic", panicText(r), "stack", string(debug.Stack()))
				c.detail = panicBeforeTool
			}
			d := Deny(CodeInternal, "the tool failed unexpectedly")
			if c.ran { // the handler, or step 11 on its result, panicked: it may have written
				d = c.failedWrite(d)
			}
			res, err = g.deny(c, d)
		} else if c.running {
			// The handler, or step 11 on its result, left by
			// runtime.Goexit (t.FailNow, log.Fatal's kin in a test
			// helper): nothing was returned, so nothing is recorded as
			// allowed.
			c.running = false
			c.detail = "handler exited without returning (runtime.Goexit)"
			c.denial = c.failedWrite(Deny(CodeInternal, "the tool failed unexpectedly"))
		}
		// A write that ran keeps its result even when its outcome cannot
		// be recorded: its durable intent stands for it, and a retryable
		// refusal would invite the caller to write again.
		ran := c.rule != nil && c.rule.Class == policy.Write && !c.dryRun
		if !g.auditOutcome(ctx, req, c) && g.opts.AuditFailClosed && c.denial == nil && !ran {
			c.denial = Deny(CodeAuditUnavailable, "the audit trail is unavailable")
			res, err = g.deny(c, c.denial)
			g.auditWithheld(ctx, req, c)
		}
	}()
	if req == nil || req.Params == nil {
		return g.deny(c, Deny(CodeInvalidArguments, "missing call parameters"))
	}

	// 3. Authenticate.
	id, aerr := g.authn.Authenticate(ctx, req)
	if aerr != nil || noIdentity(id) {
		d := authDenial(aerr)
		if d.Code == CodeUnauthenticated {
			g.dropViews(req.Session)
		}
		c.detail = authDetail(aerr)
		return g.deny(c, d)
	}
	c.id = id
	g.noteUnbound(req)
	g.touchViews(req.Session, id.Principal)
	if g.opts.SessionKey != nil {
		c.session = g.opts.SessionKey(req, id)
	}

	// 4. Resolve, 5. authorize. A tool the server does not have (e is
	// nil: Install mode, a name not in the registry) is unknown before
	// any rule applies, even one of its own or the policy's Default: a
	// rule's refusal (WRITE_NOT_ALLOWED, FORBIDDEN) would tell a missing
	// name from a hidden tool.
	d := pol.Authorize(id.Principal, c.name)
	var cerr error // the tool's registration check, under pol
	if e != nil {
		cerr = e.check(pol)
	}
	if d.Code == policy.NotFound || e == nil || cerr != nil {
		if cerr != nil {
			c.detail = "tool misconfigured: " + cerr.Error()
		} else if _, ruled := pol.Resolve(c.name); ruled && e != nil {
			// The caller is told what an unknown tool's caller is; the
			// trail tells a probe of a hidden tool from a missing name.
			c.detail = audit.DetailHidden
		}
		return g.deny(c, notFound(c.name))
	}
	c.rule = d.Rule
	// From here the caller may know the tool and its output schema.
	c.schemaOut = g.opts.SchemaSafeErrors && e.tool != nil && e.tool.OutputSchema != nil
	if d.Code != policy.Allowed {
		return g.deny(c, policyDenial(d, c.name))
	}
	topts := g.toolOptions(pol, c)
	c.dryRun = g.isDryRun(ctx, c, req, &topts) // a refusal from here on is a dry run's too
	c.record = topts.RecordArgs

	// 6. Validate arguments.
	doc, verr := e.in.check(c.raw)
	if verr != nil {
		var de *DenialError
		if !errors.As(verr, &de) {
			de = Deny(CodeInvalidArguments, "arguments failed validation")
		}
		return g.deny(c, de)
	}
	// An integer a typed tool's handler would get rounded (wideints.go).
	if path, ok := roundedInteger(c.raw, e.intsUnlessRaw()); ok {
		return g.deny(c, invalidArgs(fieldName(path)+" is an integer beyond 2^53 that the tool cannot receive exactly", pointer(path)))
	}
	c.valid = true
	if doc != nil {
		c.args, _ = doc.(map[string]any)
		c.decoded = true
	}
	if len(c.rule.ArgLimits) > 0 {
		if d := pol.CheckArgs(id.Principal, c.rule, policy.MapArgs(c.argsMap())); !d.Allowed() {
			return g.deny(c, Deny(CodeForbidden, d.Reason))
		}
	}
	write := c.rule.Class == policy.Write
	if d := g.plan(c, &topts); d != nil {
		return g.deny(c, d)
	}

	// 7. Confirm (not for a dry run: nothing happens).
	// A retry of a handler's multi round-trip (mrtr.go).
	if d := g.openRetry(ctx, req, c); d != nil {
		return g.deny(c, d)
	}
	calls := 1
	if c.retry {
		calls = 0 // the first round counted the logical call
	}
	if c.rule.Confirm && !c.dryRun && !c.confirmed {
		res, done := g.confirmStep(ctx, req, c, topts, e)
		if done {
			return res, nil
		}
		if c.denial != nil {
			return g.deny(c, c.denial)
		}
		c.confirmed = true
		calls = 0 // the first round counted this logical call against the rate
	}

	// 8. Limit. A call refused from here on before it runs is given back
	// what it was charged: a refused call consumes nothing. A call the
	// limiter could not decide by its caller's deadline timed out.
	var ld limiter.Decision
	if g.opts.Limiter != nil {
		var d *DenialError
		var late bool
		if ld, d, late = g.chargeLate(ctx, req, c, calls); d != nil {
			if late {
				return g.notStarted(ctx, c, ld) // nothing was charged
			}
			return g.deny(c, d)
		}
		defer g.opts.Limiter.Release(ld)
	} else {
		c.charged = c.spend()
	}

	// 9. Dry-run.
	if c.dryRun {
		if d := g.consume(ctx, c); d != nil {
			g.refund(ctx, c, ld)
			return g.deny(c, d)
		}
		if !topts.DryRunAware {
			res := dryrun.Result(c.name, g.chargedText(ctx, c, ld, func() string { return g.describe(c, topts) }))
			// A result the output schema refuses would break a client
			// that checks it (the MCP specification has them do so); the
			// results of tool errors are not checked. The result itself
			// is checked: its summary names the call's arguments, or is
			// the tool's Describe text.
			if res.IsError = e.out != nil && e.checkOutput(res, -1) != nil; res.IsError {
				// Nor would a client that checks tool errors' (see
				// Options.SchemaSafeErrors, which names ProtocolErrors for
				// such clients too): the preview in its text alone.
				if g.opts.SchemaSafeErrors || g.opts.ProtocolErrors {
					res.StructuredContent = nil
				}
				// Allowed (nothing was refused), but the record says why
				// the client got a tool error.
				d := "dry run: the simulated result does not fit the tool's output schema, answered as a tool error"
				if c.detail != "" {
					d = c.detail + "; " + d
				}
				c.detail = d
			}
			return res, nil
		}
		withoutConfirmation(req, c)
		ctx = awareContext(ctx, req)
	}

	// 10. Execute. The write-ahead intent is written without the call's
	// deadline, within Options.WriteAheadTimeout (see auditIntent): its
	// failure is the sink's, and is refused as such.
	if write && !c.dryRun && !g.opts.NoWriteAhead {
		if aerr := g.auditIntent(ctx, req, c); aerr != nil {
			g.log.Error("mcpguard: write-ahead audit record failed; write refused", "tool", logName(c.name), "correlation_id", c.corr, "err", aerr)
			c.detail = "write-ahead intent not recorded"
			g.refund(ctx, c, ld)
			d := Deny(CodeAuditUnavailable, "the audit trail is unavailable; the write was not attempted")
			if g.opts.Audit == nil {
				// No sink to wait for: no retry can succeed.
				d.Message, d.RetryAfter = "the server has no audit trail for writes; the write was not attempted", -1
			}
			return g.deny(c, d)
		}
	}
	// A write made in-process within another guarded call's handler
	// whose deadline has passed (a slow write-ahead record, say) is not
	// started: a handler that does not look at its context would write
	// past it, the caller waiting on it. Checked before the call's
	// confirmation is used up, so that the retry its refusal invites may
	// use it, and again after (the nonce store was asked with the call's
	// context: if it failed at the deadline, no fault of the store's). A
	// read's handler is called as it was: its context says it is done,
	// and it writes nothing.
	if write && pastCallerDeadline(ctx) {
		return g.notStarted(ctx, c, ld)
	}
	cd := g.consume(ctx, c)
	if write && pastCallerDeadline(ctx) {
		return g.notStarted(ctx, c, ld)
	}
	if cd != nil {
		g.refund(ctx, c, ld)
		return g.deny(c, cd)
	}
	c.idCtx = identityCtx{Context: ctx, id: id, call: c}
	ctx = &c.idCtx
	if write {
		// A started write runs to completion.
		// Made here, not kept in the call: a read's call stays a size
		// class smaller.
		d := &detachedCtx{Context: context.WithoutCancel(ctx), caller: ctx}
		defer d.answered.Store(true)
		ctx = d
		// But a write made in-process within another guarded call's
		// handler keeps the deadline of the context it was called with
		// (that call's Timeout, or its handler's own): it is part of that
		// call, which must not overrun it.
		if dl, ok := d.caller.Deadline(); ok && c.outer() != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl)
			defer cancel()
		}
	}
	timeout := topts.Timeout
	if timeout == 0 {
		timeout = g.opts.Timeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c.running, c.ran = true, true
	res, err = next(ctx, req)
	res, err = sdkToolError(res, err)
	if !write && g.opts.RetryReads && transient(res, err) && gaveup.Err(ctx) == nil && c.revoked.Load() == nil {
		// Not once the call's context has ended (a timeout is
		// Temporary too), nor once its deadline has passed though the
		// context does not say so yet (a downstream whose deadline is
		// the call's fails a moment first): the retry would run past
		// the deadline.
		c.detail = "retried once after a transient error"
		res, err = sdkToolError(next(ctx, req))
	}
	if r := c.revoked.Load(); r != nil {
		// The client answered a request the server sent it within the
		// call after SetPolicy replaced the policy, which refuses the
		// call now: the answer was withheld, and what the handler
		// returned (one that went on without it too) is not the call's
		// answer. But the handler ran: a write's may have written (before
		// it asked, or going on without the answer), which the caller is
		// told, not a bare refusal that reads as "not run".
		c.running = false
		c.detail = r.detail
		d := *r.d
		return g.deny(c, c.failedWrite(&d))
	}
	// Still running: a runtime.Goexit in step 11 (a MarshalJSON of the
	// result's) is recorded as the handler's would be.
	res, err = g.settle(ctx, c, e, ld, res, err)
	c.running = false
	return res, err
}

// settle turns what the handler of c returned, res and err, into the
// call's answer: the end of step 10 and step 11. ld is the limiter's
// decision on the call, for a refund.
func (g *Guard) settle(ctx context.Context, c *call, e *toolEntry, ld limiter.Decision, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	// Normalise what the handler returned.
	if errors.Is(err, errToolGone) {
		// No handler ran: refused as any unknown name is, charged nothing.
		c.detail = "the tool was removed from the server"
		g.refund(ctx, c, ld)
		return g.deny(c, notFound(c.name))
	}
	if err != nil {
		if we := wireError(err); we != nil {
			// A protocol error from below (the go-sdk's own, or a handler's
			// deliberate one): pass it on unwrapped, or the SDK sends code 0.
			c.denial = &DenialError{Code: CodeInternal, Message: we.Message}
			c.detail = "protocol error " + strconv.FormatInt(we.Code, 10)
			return nil, we
		}
		// A refusal of the handler's own (a *DenialError, as the
		// stand-alone Recover passes on): the call's refusal, with the
		// handler's code and message, recorded as such, its charge kept
		// (the handler ran). A write's is not retryable (it may have
		// written), its message the handler's, unless its code says the
		// call was not carried out (see notRun). A copy: the handler may
		// return one value each time. One without a code is no refusal of
		// the contract: a failure of the handler's, below.
		var de *DenialError
		if errors.As(err, &de) && de.Code != "" {
			// Held to step 11's bounds as a result is (MaxOutputBytes,
			// the nesting a go-sdk client reads): its message and
			// details reach the client as a tool error's content, or a
			// JSON-RPC error's data.
			if oerr := e.checkResult(de.Result(), g.maxOut); oerr != nil {
				c.detail = "refused by the tool; its refusal: output: " + oerr.Error()
				msg := "the tool returned a malformed refusal"
				if _, ok := oerr.(*tooLarge); ok {
					msg = "the tool's refusal is larger than the server allows"
				}
				return g.deny(c, c.failedWrite(Deny(CodeInvalidResponse, msg)))
			}
			c.detail = "refused by the tool"
			d := *de
			if c.rule.Class == policy.Write && !c.dryRun && !notRun(d.Code) {
				d.RetryAfter = -1
			}
			return g.deny(c, &d)
		}
		// Arguments the go-sdk's typed-tool wrapper could not decode, so
		// that the handler did not run: refused as the guard's own
		// validation refuses them (not logged: the text quotes the
		// caller's values), charged nothing. Not for a raw handler
		// ([Guard.Wrap]): no wrapper is below it, so its error is its own.
		var sc *sdkCheck
		errors.As(err, &sc)
		if !e.raw && sc != nil && sc.decode != nil && undecodable(c.raw, e.tool.InputSchema, sc.decode) {
			c.detail = "refused by the go-sdk's typed-tool wrapper: the arguments do not fit the tool's Go types; the handler was not run"
			g.refund(ctx, c, ld)
			return g.deny(c, Deny(CodeInvalidArguments, "arguments failed validation"))
		}
		if !e.raw && sc != nil && sc.args && sdkRefusedArgs(c.raw, e.tool.InputSchema, sc.err.Error()) {
			c.detail = "refused by the go-sdk's typed-tool wrapper: it could not read or validate the arguments; the handler was not run"
			g.refund(ctx, c, ld)
			return g.deny(c, Deny(CodeInvalidArguments, "arguments failed validation"))
		}
		if clientLeft(ctx, err) {
			// A read whose client went away while it ran, failing for it:
			// the client's leaving, not a failure of the tool's, so its
			// record and the log say; its code is as below.
			c.detail = clientLeftDetail
			g.log.Info(clientLeftLog, "tool", logName(c.name), "correlation_id", c.corr)
		} else {
			// The error's text may hold argument values or secrets: it goes
			// to the log, and the audit record gets its kind only.
			g.log.Warn("mcpguard: tool handler failed", "tool", logName(c.name), "correlation_id", c.corr, "err", logText(err.Error()))
			switch c.detail = "handler error"; {
			case errors.Is(err, context.DeadlineExceeded):
				// What the caller is told as well: a responder tells a
				// timeout from a failure by the record, not its latency.
				c.detail = "handler error: timed out"
			case errors.Is(err, ErrUpstreamUnavailable):
				c.detail = "handler error: its upstream is unavailable"
			}
		}
		if sc != nil && sc.code == CodeInvalidResponse {
			c.detail = "refused by the go-sdk's typed-tool wrapper"
			return g.deny(c, c.failedWrite(Deny(CodeInvalidResponse, "the tool returned a malformed result")))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return g.deny(c, c.failedWrite(Deny(CodeUpstreamUnavailable, "the tool timed out")))
		}
		if errors.Is(err, ErrUpstreamUnavailable) {
			return g.deny(c, c.failedWrite(Deny(CodeUpstreamUnavailable, "the tool's upstream is unavailable")))
		}
		return g.deny(c, c.failedWrite(Deny(CodeInternal, "the tool failed")))
	}
	if res == nil {
		c.detail = "handler returned no result"
		return g.deny(c, c.failedWrite(Deny(CodeInternal, "the tool returned no result")))
	}
	// The handler asks for more input: its next round comes back through
	// the guard with this state, sealed.
	if d := g.sealRetry(c, res); d != nil {
		return g.deny(c, d)
	}

	// 11. Validate output: its size, then its shape.
	if oerr := e.checkResult(res, g.maxOut); oerr != nil {
		c.detail = "output: " + oerr.Error()
		msg := "the tool returned a malformed result"
		if _, ok := oerr.(*tooLarge); ok {
			msg = "the tool's result is larger than the server allows"
		}
		return g.deny(c, c.failedWrite(Deny(CodeInvalidResponse, msg)))
	}
	if res.IsError {
		c.detail = "tool reported an error"
	}
	if c.rule != nil && c.rule.Class == policy.Write && !c.dryRun && callerLeft(ctx) {
		// A started write runs to its end, its client gone (see
		// detachedCtx): the record says the result was not awaited.
		if c.detail == "" {
			c.detail = writeAfterLeftDetail
		} else {
			c.detail += "; " + writeAfterLeftDetail
		}
	}
	return res, nil
}

// callerLeft reports whether ctx is a write's detached context (see
// detachedCtx) whose caller's context was cancelled.
func callerLeft(ctx context.Context) bool {
	d, _ := ctx.Value(callerKey{}).(*detachedCtx)
	return d != nil && errors.Is(d.caller.Err(), context.Canceled)
}

// writeAfterLeftDetail is the record's detail of a write that ran to its
// end after its client went away.
const writeAfterLeftDetail = "the client went away (the call's context ended) while the write ran; it ran to its end"

// detachedCtx is the context of a write's handler: not cancelled when its
// caller's is, so that a started write runs to completion, but keeping the
// caller's, so that a question the server puts to the client within the
// call (an elicitation, a sampling or roots request) ends when the client
// cancels the call or goes away (see askClient). On a client before
// 2026-07-28 the go-sdk itself asks, within the call, the input requests of
// a handler's first round, before it runs the next: the client that
// cancelled would be waited for without end, the call holding its
// in-flight places. Once the guard has answered the call the go-sdk
// cancels the caller's context, which is no cancellation by the client: a
// question the handler's work puts after that, on this context, is not
// ended for it. It has no deadline; serve gives a write made in-process
// within another guarded call's handler the deadline of its caller.
type detachedCtx struct {
	context.Context // context.WithoutCancel(caller)
	caller          context.Context
	answered        atomic.Bool // the guard has answered the call
}

// callerKey is the key under which a detachedCtx gives itself.
type callerKey struct{}

func (d *detachedCtx) Value(key any) any {
	if _, ok := key.(callerKey); ok {
		return d
	}
	return d.Context.Value(key)
}

// askClient sends a request to the client (method is not a notification)
// through next, its wait for the answer ended by the cancellation of the
// guarded write it is sent in, if any, or of one that write is made within
// (see withCallers), while the guard has not answered it: a write's
// handler (see detachedCtx) is not cancelled with its caller, but nor is a
// question to a caller that is gone, or that cancelled the call, left
// waiting. An answer to a request sent within a guarded call is not
// delivered when Guard.SetPolicy replaced the policy that decided the
// call, or one the call is made within, and the policy now refuses it (see
// call.reask).
func askClient(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := waitClient(ctx, method, req, next)
	if err != nil {
		return res, err
	}
	// The call the request is sent in, and each guarded call that one is
	// made within (a handler's in-process call of another guarded tool,
	// a Wrap'd handler under a guard installed on its server): each waits
	// on the client, and each that a policy of its guard's refuses now
	// keeps its refusal.
	var revoked error
	for c, _ := ctx.Value(callKey{}).(*call); c != nil; c = c.outer() {
		if err := c.reask(method); err != nil {
			revoked = err
		}
	}
	if revoked != nil {
		return nil, revoked
	}
	return res, nil
}

// waitClient sends a request to the client through next, as askClient,
// its wait ended as withCallers says.
func waitClient(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	ctx, stop := withCallers(ctx)
	defer stop()
	return next(ctx, method, req)
}

// withCallers returns ctx, ended too when the caller of the guarded write
// whose handler ctx is within cancels the call (or goes away) while the
// guard has not answered it, and a func that releases it. A write called
// in-process within another write's handler, with its context, has that
// write's detached context for its caller, which is never cancelled: so
// too when the caller of any write it is made within cancels, while that
// write, and each within it down to the innermost, has not been answered.
// A caller's deadline ends it as a deadline (context.DeadlineExceeded, a
// timeout), not as a cancellation: a write made in-process within another
// guarded call keeps that call's deadline (see serve), which would
// otherwise end a question at once both ways, the one first that came
// first.
func withCallers(ctx context.Context) (context.Context, context.CancelFunc) {
	d, _ := ctx.Value(callerKey{}).(*detachedCtx)
	if d == nil || d.answered.Load() {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var stops []func() bool
	for ; d != nil && !d.answered.Load(); d = outerWrite(d) {
		if d.caller.Done() == nil {
			continue
		}
		if dl, ok := d.caller.Deadline(); ok {
			if cur, ok := ctx.Deadline(); !ok || dl.Before(cur) {
				var stop context.CancelFunc
				ctx, stop = context.WithDeadline(ctx, dl)
				stops = append(stops, func() bool { stop(); return true })
			}
		}
		w := d
		stops = append(stops, context.AfterFunc(w.caller, func() {
			if !w.answered.Load() && errors.Is(w.caller.Err(), context.Canceled) {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// outerWrite returns the detached context of the guarded write that the
// write of d is made within (in-process, by that write's handler), or nil.
func outerWrite(d *detachedCtx) *detachedCtx {
	o, _ := d.caller.Value(callerKey{}).(*detachedCtx)
	return o
}

// callKey is the key under which the context of a guarded call's handler
// gives the call (see identityCtx).
type callKey struct{}

// outer returns the guarded call that c, a call whose handler runs, is made
// within: the call whose handler's context c's came in, or nil.
func (c *call) outer() *call {
	o, _ := c.idCtx.Context.Value(callKey{}).(*call)
	return o
}

// parent returns the correlation id of the guarded call whose handler made
// c, in-process, with its context (a composite tool's handler calling
// another guarded tool; see outer), for the records of c (audit.Event's
// ParentID): the direct outer call's, or "" for a call of its own. ctx is
// the context c came with, or one c's pipeline made from it (the
// handler's, once it runs); req is c's request. The outer call is a
// Guard's or an Audit middleware's: whichever gives the correlation id of
// ctx's records (see CorrelationID), past c's own.
func (c *call) parent(ctx context.Context, req *mcp.CallToolRequest) string {
	if c.idCtx.Context != nil {
		ctx = c.idCtx.Context // the context c's handler was called within
	}
	return parentCorr(ctx, c.corr, req)
}

// parentCorr returns the correlation id of the outer call of the call
// corr, of request req: the one that ctx's records belong to
// (CorrelationID), or, when that is corr itself (ctx is of that call: its
// Audit middleware's, or the Guard's call a stand-alone step took its id
// from), that of the call whose handler that one was called within. A call
// of the same request is no outer call but a layer of the same one (a
// Guard installed on the server whose tool's handler is a Wrap'd one or an
// Audit chain, an Audit chain around a Wrap'd handler): the client's call
// passes through both, and is made by no handler; it is passed over too.
func parentCorr(ctx context.Context, corr string, req *mcp.CallToolRequest) string {
	for {
		p := correlationFrom(ctx)
		if p == "" {
			return ""
		}
		// The call that gave p, and the context it was called with.
		var in context.Context
		var preq *mcp.CallToolRequest
		if c, _ := ctx.Value(callKey{}).(*call); c != nil && c.corr == p && c.idCtx.Context != nil {
			in, preq = c.idCtx.Context, c.req
		} else if a, _ := ctx.Value(auditKey{}).(*auditCtx); a != nil && a.c.corr == p {
			in, preq = a.Context, a.c.req
		}
		if p != corr && (in == nil || preq != req) {
			return p
		}
		if in == nil {
			return ""
		}
		ctx, corr = in, p
	}
}

// A revocation is the refusal of a call by a policy set while the client
// was asked within the call, and its record's detail.
type revocation struct {
	d      *DenialError
	detail string
}

// errRevoked is what a request the server sent the client within a guarded
// call returns in place of the client's answer when the policy of the
// moment refuses the call (see call.reask).
var errRevoked = errors.New("mcpguard: the client's answer is withheld: the policy changed while the client was asked, and now refuses the call")

// reask decides c once more, now that the client answered a request
// (method) the server sent it within the call, when Guard.SetPolicy
// replaced the policy that decided the call: a question (an elicitation, a
// sampling or roots request, a handler's own or the input requests of its
// multi round-trip, which the go-sdk asks an older client below the guard)
// may have waited minutes for a human. askClient asks it of each guarded
// call the request is sent within (see call.outer). It returns errRevoked
// when the policy of the moment refuses c, and keeps that refusal (the
// first one, when several requests are answered at once) for the call's
// answer (a write's saying the write may have been made); nil
// when the policy was not replaced (a pointer compare) or allows c. It
// may run concurrently with other requests of the call and with its
// handler, and so reads only what is set before the handler runs: the
// arguments are decoded anew, for the policy's argument limits.
func (c *call) reask(method string) error {
	if c.guard == nil {
		return nil
	}
	p := c.guard.pol.Load()
	if p == c.pol {
		return nil
	}
	d, why := redecide(p, c, func() map[string]any {
		doc, _ := decodeStrict(orEmpty(c.raw))
		args, _ := doc.(map[string]any)
		return args
	})
	if d == nil {
		return nil
	}
	c.revoked.CompareAndSwap(nil, &revocation{d: d, detail: "the policy changed while the client was asked (" + method + "): " + why})
	return errRevoked
}

// clientLeft reports whether err, a handler's error, is its failing for
// its client's going away: it wraps context.Canceled and the handler's
// context ctx was cancelled, or for a write (whose handler's ctx does not
// end when the caller's does, see detachedCtx) its caller's was, or the
// caller's of a write it is made within (see withCallers): a question to
// the client within the call ended so. The Guard cancels a call's context
// only once the call is over; a handler's own context.Canceled, its caller
// still there, is its own failure. (A deadline is a timeout.)
func clientLeft(ctx context.Context, err error) bool {
	if !errors.Is(err, context.Canceled) {
		return false
	}
	d, _ := ctx.Value(callerKey{}).(*detachedCtx)
	if d == nil {
		return errors.Is(ctx.Err(), context.Canceled)
	}
	for ; d != nil && !d.answered.Load(); d = outerWrite(d) { // see withCallers
		if errors.Is(d.caller.Err(), context.Canceled) {
			return true
		}
	}
	return false
}

// The record's detail, and the log line (at Info), of a call whose handler
// failed for its client's going away (clientLeft).
const (
	clientLeftDetail = "the client went away (the call's context ended) while the tool ran"
	clientLeftLog    = "mcpguard: call ended: its client went away while the tool ran"
)

// notRun reports whether a refusal of code c says that the call was not
// carried out: a cap (a refused call consumes nothing) or AUDIT_UNAVAILABLE
// (a write without its write-ahead record is not attempted). A write
// handler's refusal of such a code keeps its own retry advice: mcpguard's
// stand-alone steps (a [Limit] or [WriteAhead] inside a guarded handler)
// refuse so before the handler inside them runs.
func notRun(c Code) bool {
	switch c {
	case CodeRateLimitExceeded, CodeSpendLimitExceeded, CodeConcurrencyLimitExceeded, CodeAuditUnavailable:
		return true
	}
	return false
}

// sdkToolError turns a tool-error result that carries a Go error (set with
// CallToolResult.SetError: the go-sdk's wrapper of a typed tool does so for
// the handler's error and for arguments it cannot decode) back into that
// error, so that it is handled like a raw handler's: its text, which may hold
// internals or argument values, does not reach the caller. An output the
// wrapper's validation refuses is INVALID_RESPONSE (go-sdk v1.8.0 says so
// only in the message of an error it returns, not sets). Arguments it cannot
// read or its validation refuses come back as an error set as the handler's
// is, known only by its text, starting `validating "arguments"`, which a
// handler's error may start with too, with a value the caller chose: such an
// error is marked as a possible refusal, which the caller confirms by its
// whole text ([sdkRefusedArgs]). Arguments it cannot decode into the tool's
// Go type come back as the decoder's own *json.UnmarshalTypeError, set as it
// is, exactly as a handler's error would be: such an error is marked as a
// possible decode failure, which the caller confirms against the call's
// arguments and the tool's input schema ([undecodable]) before it calls it
// one. A *DenialError comes back as itself, so that a typed tool's refusal is
// answered like a raw one's. A tool that wants the model to read its error
// returns a result with IsError and Content, without SetError.
func sdkToolError(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		if strings.HasPrefix(err.Error(), "validating tool output") {
			return nil, &sdkCheck{code: CodeInvalidResponse, err: err}
		}
		return res, err
	}
	if res == nil || !res.IsError {
		return res, nil
	}
	herr := res.GetError()
	if herr == nil {
		return res, nil
	}
	// The wrapper's decoder (segmentio/encoding/json) reports no offset;
	// encoding/json always does.
	if ute, ok := herr.(*json.UnmarshalTypeError); ok && ute.Offset == 0 && ute.Type != nil {
		return nil, &sdkCheck{code: CodeInvalidArguments, decode: ute, err: herr}
	}
	// The wrapper's refusal of arguments it cannot read or validate: an
	// error made by fmt.Errorf without %w, as errors.New makes them.
	if reflect.TypeOf(herr) == reflect.TypeOf(errors.New("")) && strings.HasPrefix(herr.Error(), sdkArgsPrefix) {
		return nil, &sdkCheck{code: CodeInvalidArguments, args: true, err: herr}
	}
	return nil, herr
}

// sdkCheck is a refusal of the go-sdk's typed-tool wrapper. With decode or
// args set, it may be the handler's own error instead: see [undecodable]
// and [sdkRefusedArgs].
type sdkCheck struct {
	code   Code
	decode *json.UnmarshalTypeError
	args   bool // the text of the wrapper's refusal of the arguments
	err    error
}

func (e *sdkCheck) Error() string { return e.err.Error() }
func (e *sdkCheck) Unwrap() error { return e.err }

// undecodable reports whether e, an error as the go-sdk's typed-tool
// wrapper reports arguments it cannot decode into the tool's Go type, can
// only be that: whether at e's field (a path of keys and array indices
// joined by dots; an object's key may hold dots, and each way of reading
// the path is tried) the arguments raw hold a number that no Go integer
// type the tool's input schema stands for there can hold. The wrapper
// then never calls the handler, whatever error it reports.
//
// e's type and field do not decide it: a handler's own error may be of
// the same type (segmentio/encoding/json's, its decoder's, has no offset
// either), about a field of the same name, which the call's value does
// not fit in the handler's type but fits in the tool's (a float64 field's
// 1.5 in an int, a string in a time.Time, an int64's 1000 in an int8).
// The input schema, which the go-sdk derives from the tool's Go type,
// says what that type is: an "integer" ("null" aside, for a pointer)
// stands for an integer type, which is at most an int64, or a uint64 when
// the schema's minimum is not negative. The wrapper reads every number as
// a float64 first, so 9223372036854775807 reaches its decoder as 2^63,
// too big for an int64. A value no other schema can rule out for its Go
// type (a float32's 1e300, a time.Time's string) is not confirmed, and is
// answered as the handler's error.
func undecodable(raw json.RawMessage, schema any, e *json.UnmarshalTypeError) bool {
	if !integerKind(e.Type) || schema == nil {
		return false
	}
	var doc, sch any
	if json.Unmarshal(orEmpty(raw), &doc) != nil {
		return false
	}
	if b, err := json.Marshal(schema); err != nil || json.Unmarshal(b, &sch) != nil {
		return false
	}
	var path []string
	if e.Field != "" {
		path = strings.Split(e.Field, ".")
	}
	return unfit(doc, sch, path)
}

// integerKind reports whether t, or what it points to, is a Go integer type.
func integerKind(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// unfit reports whether the value at path in v, whose schema is s, is a
// number that no Go integer type s can stand for holds (see undecodable).
func unfit(v, s any, path []string) bool {
	sm, _ := s.(map[string]any)
	if sm == nil {
		return false
	}
	if len(path) == 0 {
		return beyondIntegers(v, sm)
	}
	switch x := v.(type) {
	case map[string]any:
		for n := 1; n <= len(path); n++ {
			key := strings.Join(path[:n], ".")
			if ev, ok := x[key]; ok && unfit(ev, propertySchema(sm, key), path[n:]) {
				return true
			}
		}
	case []any:
		if i, err := strconv.Atoi(path[0]); err == nil && i >= 0 && i < len(x) {
			return unfit(x[i], sm["items"], path[1:])
		}
	}
	return false
}

// propertySchema returns the schema object schema s gives its property key.
func propertySchema(s map[string]any, key string) any {
	if props, ok := s["properties"].(map[string]any); ok {
		if ps, ok := props[key]; ok {
			return ps
		}
	}
	return s["additionalProperties"]
}

// beyondIntegers reports whether v, read as the go-sdk's wrapper reads it
// (a float64), is a whole number that the widest Go integer type schema s
// can stand for cannot hold: s says "integer" (or "integer" and "null")
// and nothing else; the type is a uint64 if s's minimum is not negative,
// else an int64.
func beyondIntegers(v any, s map[string]any) bool {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || !onlyInteger(s["type"]) {
		return false
	}
	if min, ok := s["minimum"].(float64); ok && min >= 0 {
		return f >= 1<<64
	}
	return f < -(1<<63) || f >= 1<<63
}

// onlyInteger reports whether a schema's type t is "integer", alone or
// with "null".
func onlyInteger(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "integer"
	case []any:
		integer := false
		for _, x := range t {
			switch x {
			case "integer":
				integer = true
			case "null":
			default:
				return false
			}
		}
		return integer
	}
	return false
}

// notFoundWire is exactly what the go-sdk says about a tool it does not
// have, so that a hidden tool cannot be told from a missing one.
func notFoundWire(name string, code int64) *jsonrpc.Error {
	if code == 0 {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: "unknown tool " + strconv.Quote(name)}
}

// wireError returns the JSON-RPC error in err's chain, or nil.
func wireError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return nil
}

// toolOptions returns the options of c's tool, whose rule in the policy p
// is known: those
// of Options.Tools for its name. A name that equals a tool rule's only
// under case folding has that rule, combined with the default rule (see
// policy.Policy.Resolve): a server that matches names leniently runs that
// tool under it, one that does not runs another tool, which the default
// rule governs. So it also gets that tool's options where they protect: a dry
// run when either asks for one, and, when either has a Cost function, the
// larger of the two tools' costs, each its Cost function's or else its
// rule's (the name's: the combined rule's, at least the default's). Either
// function failing, or giving a cost that is not a finite number at least
// zero, fails it. The rest, DryRunAware above all (the other tool's
// handler may not know of dry runs), are the name's own.
func (g *Guard) toolOptions(p *policy.Policy, c *call) ToolOptions {
	o := g.opts.Tools[c.name]
	n := c.rule.Name
	if n == "" || n == c.name {
		return o
	}
	t := g.opts.Tools[n]
	o.DryRun = o.DryRun || t.DryRun
	if o.Cost == nil && t.Cost == nil {
		return o // the combined rule's cost, the larger of the two
	}
	own, theirs := o.Cost, t.Cost
	if own == nil {
		own = fixedCost(c.rule.Cost)
	}
	if theirs == nil {
		var cost float64
		if r, ok := p.Resolve(n); ok { // the tool's own rule
			cost = r.Cost
		}
		theirs = fixedCost(cost)
	}
	o.Cost = func(args map[string]any) (float64, error) {
		a, err := own(args)
		if err == nil {
			err = limiter.CheckCost(a) // max would hide a negative one
		}
		if err != nil {
			return 0, err
		}
		b, err := theirs(args)
		if err == nil {
			err = limiter.CheckCost(b)
		}
		if err != nil {
			return 0, err
		}
		return max(a, b), nil
	}
	return o
}

// fixedCost returns a Cost function that costs cost.
func fixedCost(cost float64) func(map[string]any) (float64, error) {
	return func(map[string]any) (float64, error) { return cost, nil }
}

// isDryRun reports whether c, whose rule is known, is a dry run: a write
// when the server (Options.DryRun), the tool (topts, its ToolOptions) or the
// client (dryrun.Requested) asks for one, or that is made with a dry-run
// context (dryrun.FromContext): a DryRunAware handler that serves its dry
// run by calling another guarded write with its context, or a step outside
// that answered this call's dry run with settings of its own, has not
// asked for a write. It is decided as soon as the policy allows the call,
// so that a dry run refused before step 9 (invalid arguments, an argument
// limit, a cap) is recorded as one; a call the policy refuses (FORBIDDEN
// by role, WRITE_NOT_ALLOWED) is no dry run of anything allowed, and is
// recorded with dry_run false, as the stand-alone Authorize's refusal is.
func (g *Guard) isDryRun(ctx context.Context, c *call, req *mcp.CallToolRequest, topts *ToolOptions) bool {
	return c.rule.Class == policy.Write &&
		(g.opts.DryRun || topts.DryRun || dryrun.Requested(req.Params.Meta) || dryrun.FromContext(ctx))
}

// plan computes what the call costs (a cost function reads the arguments,
// so plan runs after validation). It returns the refusal of a call whose
// cost cannot be computed.
func (g *Guard) plan(c *call, topts *ToolOptions) *DenialError {
	c.cost = c.rule.Cost
	if topts.Cost != nil {
		cost, err := topts.Cost(c.argsMap())
		if err != nil || limiter.CheckCost(cost) != nil {
			c.detail = "cost function failed"
			return Deny(CodeInternal, "the cost of the call could not be computed")
		}
		c.cost = cost
	}
	return nil
}

// charge counts the call against the limiter (step 8): calls against the
// call rate, and its cost against spend; a dry run's cost is only checked
// against spend, so that the dry run meets the refusal the real call would
// meet now, and is not taken. It returns the refusal, or the decision
// whose in-flight slot the caller releases when the call ends.
func (g *Guard) charge(ctx context.Context, req *mcp.CallToolRequest, c *call, calls int) (limiter.Decision, *DenialError) {
	ld, d, _ := g.chargeLate(ctx, req, c, calls)
	return ld, d
}

// chargeLate is charge, which also reports whether the limiter's refusal
// is undecidedAtDeadline, as it stood when the limiter answered (before the
// failure is logged: a slow log must not turn a store's failure into a
// timeout).
func (g *Guard) chargeLate(ctx context.Context, req *mcp.CallToolRequest, c *call, calls int) (ld limiter.Decision, d *DenialError, late bool) {
	spend := c.spend()
	ld = g.limit(ctx, req, c, calls, spend, c.dryRun && !c.retry)
	late = undecidedAtDeadline(ctx, ld)
	g.limitFailed(ctx, req, c, ld)
	if !ld.Allowed {
		return ld, limitDenial(ld), late
	}
	c.charged = spend
	return ld, nil, false
}

// limitFailed logs a decision ld the limiter could not make for c: as the
// client's leaving (its detail says so) when ld refuses c and the call's
// context ended first, or its deadline passed though the context does not
// say so yet (as the limiter tells it: a store timing out at that deadline
// fails a moment first), for the limiter refuses such a call whatever its
// fail-open options; else as the limiter's failure. A call ld admits all
// the same (fail open) is marked so for its records (audit.DetailFailOpen),
// the stand-alone Audit's of req too, until a later decision for it.
func (g *Guard) limitFailed(ctx context.Context, req *mcp.CallToolRequest, c *call, ld limiter.Decision) {
	// The call's last decision says whether it runs uncapped: a charge
	// that a working store made (or refused) after a check that failed
	// open (an older client's confirmation) checked the caps.
	// A stand-alone Audit's call may see the decisions of several
	// limiters (a Limit step outside another): it is marked while the
	// last decision of any of them failed open.
	open := ld.Err != nil && ld.Allowed
	c.failOpen = open
	if a, _ := ctx.Value(auditKey{}).(*auditCtx); a != nil && a.c.req == req {
		l := g.opts.Limiter
		a.openLims = slices.DeleteFunc(a.openLims, func(o *limiter.Limiter) bool { return o == l })
		if open {
			a.openLims = append(a.openLims, l)
		}
		a.c.failOpen = len(a.openLims) > 0
	}
	if ld.Err == nil {
		return
	}
	if cerr := gaveup.Err(ctx); cerr != nil && !ld.Allowed {
		c.detail = "the client went away (the call's context ended) before the limiter decided"
		g.log.Info("mcpguard: call not admitted: its context ended before the limiter decided", "tool", logName(c.name), "correlation_id", c.corr, "err", cerr)
		return
	}
	g.log.Error("mcpguard: limiter failed", "tool", logName(c.name), "correlation_id", c.corr, "allowed", ld.Allowed, "err", ld.Err)
}

// refund gives back what step 8 charged c, whose decision was ld (the zero
// Decision without a limiter), for a call refused before it ran. The
// record's cost becomes what stays charged: nothing after a refund right
// after the decision, part or all of it after a later one
// ([limiter.Limiter.Kept]). A refund the limiter could not make is logged,
// and the record's cost stays what was charged.
func (g *Guard) refund(ctx context.Context, c *call, ld limiter.Decision) {
	if l := g.opts.Limiter; l != nil {
		now := g.now()
		if err := l.Refund(context.WithoutCancel(ctx), now, ld); err != nil {
			g.log.Error("mcpguard: the charge of a refused call was not given back", "tool", logName(c.name), "correlation_id", c.corr, "err", err)
			return
		}
		c.charged *= l.Kept(now, ld)
		return
	}
	c.charged = 0
}

// pastCallerDeadline reports whether ctx, the context a call came with, is
// of another guarded call's handler (the call is made in-process within
// that call; see call.outer) and its deadline, which serve gives a write's
// handler, has passed.
func pastCallerDeadline(ctx context.Context) bool {
	if ctx.Value(callKey{}) == nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// undecidedAtDeadline reports whether ld, the limiter's decision on a call
// that came with ctx, refuses it for want of an answer from the limiter's
// store, which was asked with ctx, once ctx's deadline (see
// pastCallerDeadline) has passed: the caller's time ran out, and the store
// may not have failed. Called as soon as the limiter answers. A store that
// failed before the deadline, or answered outside its contract however
// late (ld.Err then does not unwrap to context.DeadlineExceeded), keeps its
// refusal (limitDenial).
func undecidedAtDeadline(ctx context.Context, ld limiter.Decision) bool {
	return !ld.Allowed && errors.Is(ld.Err, limiter.ErrStoreUnavailable) &&
		errors.Is(ld.Err, context.DeadlineExceeded) && pastCallerDeadline(ctx)
}

// notStarted refuses c, whose deadline (see pastCallerDeadline) passed
// before its handler was called (a write's; or any call's, before the
// limiter decided it), as timed out before it ran, and gives back what
// step 8 charged it (its decision was ld).
func (g *Guard) notStarted(ctx context.Context, c *call, ld limiter.Decision) (*mcp.CallToolResult, error) {
	d := c.timedOutBeforeStart()
	g.refund(ctx, c, ld)
	return g.deny(c, d)
}

// timedOutBeforeStart records in c that its deadline passed before its
// tool ran, and returns its refusal.
func (c *call) timedOutBeforeStart() *DenialError {
	c.detail = "the call's deadline passed before the tool ran; the tool was not run"
	return timedOutBeforeRun("the call's deadline passed before it could start")
}

// timedOutBeforeRun is the refusal of a call whose deadline passed before
// its tool ran (why says when): UPSTREAM_UNAVAILABLE, as a call whose
// handler the deadline ends gets ("the tool timed out"), but retryable,
// for nothing was done.
func timedOutBeforeRun(why string) *DenialError {
	return Deny(CodeUpstreamUnavailable, "the tool timed out before it ran: "+why)
}

// failedWrite marks d, the refusal of a call whose handler ran and failed
// (an error, a panic, no result, a malformed one), as not retryable when
// the call is a write, and says why: the write may have been made, and a
// retry could make it twice.
func (c *call) failedWrite(d *DenialError) *DenialError {
	if c.rule.Class == policy.Write && !c.dryRun {
		d.RetryAfter = -1
		d.Message += "; the write may have been made: check before repeating it"
	}
	return d
}

// spend is what the call costs against the spend caps: its cost, but
// nothing for a dry run or a later round of a logical call.
func (c *call) spend() float64 {
	if c.dryRun || c.retry {
		return 0
	}
	return c.cost
}

// limit asks the limiter about this call: calls against the call rate and
// spend against the spend caps; with peek, the call's cost is checked
// against the spend caps instead, and not taken ([limiter.Request].DryRun):
// for a dry run's first round, and for the round that asks the human to
// confirm a call.
func (g *Guard) limit(ctx context.Context, req *mcp.CallToolRequest, c *call, calls int, spend float64, peek bool) limiter.Decision {
	key := c.session
	if key == "" {
		key = g.sessionKey(req, c.id)
	}
	r := limiter.Request{
		Session: key,
		User:    c.id.Principal.Subject,
		Tool:    c.name,
		Write:   c.rule.Class == policy.Write,
		Calls:   calls,
		Cost:    spend,
	}
	if peek {
		r.Cost, r.DryRun = c.cost, true
	}
	// At the time of the decision, not of the call's start: an older
	// client's human answers a confirmation inside the call, and a charge
	// dated back to its start would be refilled by the time the call runs.
	return g.opts.Limiter.AllowAt(ctx, g.now(), r)
}

// deny records d as the call's outcome and renders it in the configured mode.
func (g *Guard) deny(c *call, d *DenialError) (*mcp.CallToolResult, error) {
	c.denial = d
	if (c.detail == "" || c.detail == nextRoundDetail || c.detail == previewDetail) && d.Code != CodeInvalidArguments && d.Code != CodeUnauthenticated && d.Code != CodeToolNotFound {
		// The audit record says why, as the caller was told: the guard's
		// own words. Not for invalid arguments, whose messages name
		// fields the caller chose, nor for an authenticator's, nor for
		// an unknown tool (the record names it). A later round's says
		// both.
		if c.detail == "" {
			c.detail = d.Message
		} else {
			c.detail += "; " + d.Message
		}
	}
	if d.Code == CodeToolNotFound {
		return nil, notFoundWire(c.name, g.opts.NotFoundCode)
	}
	out := *d
	out.CorrelationID = c.corr
	if g.opts.ProtocolErrors {
		return nil, out.JSONRPCError(g.opts.NotFoundCode)
	}
	return c.errorResult(&out), nil
}

// errorResult renders d as the call's tool-error result: with
// Options.SchemaSafeErrors, for a tool with an output schema its caller
// may know (it passed resolution), the error is in the text content
// alone, without StructuredContent (see SchemaSafeErrors).
func (c *call) errorResult(d *DenialError) *mcp.CallToolResult {
	r := guardRefusal(d.Result(), d, c.req)
	if c.schemaOut {
		r.StructuredContent = nil
	}
	return r
}

func limitDenial(d limiter.Decision) *DenialError {
	if d.Err != nil && !d.Allowed && d.Limit.Kind == 0 {
		if errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			e := Deny(CodeRateLimitExceeded, "the rate limiter is unavailable; try again shortly")
			e.RetryAfter = time.Second
			return e
		}
		return Deny(CodeInternal, "the call could not be rate limited")
	}
	var code Code
	switch d.Limit.Kind {
	case limiter.Spend:
		code = CodeSpendLimitExceeded
	case limiter.Concurrency:
		code = CodeConcurrencyLimitExceeded
	default:
		code = CodeRateLimitExceeded
	}
	what := fmt.Sprintf("%s limit per %s", d.Limit.Kind, d.Limit.Scope)
	if d.Limit.Scope == limiter.Global {
		what = fmt.Sprintf("global %s limit", d.Limit.Kind)
	}
	if d.Limit.Tool != "" {
		what += " of tool " + strconv.Quote(d.Limit.Tool) // the limit's spelling of the call's tool
	}
	e := Deny(code, what+" reached ("+limitFigures(d.Limit)+")")
	e.RetryAfter = d.RetryAfter
	if code != CodeConcurrencyLimitExceeded && d.RetryAfter == 0 {
		// The limiter found no wait that helps: the call takes more than
		// the limit holds. A retry would be refused forever.
		e.RetryAfter = -1
		if code == CodeSpendLimitExceeded {
			e.Message = "this call costs more than the spend limit allows"
		}
	}
	e.Details = map[string]any{"scope": d.Limit.Scope.String(), "limit": d.Limit.Kind.String()}
	return e
}

// policyDenial is the refusal of the call of tool that the policy's
// decision d refused (FORBIDDEN, WRITE_NOT_ALLOWED): d's reason, but a
// write off the allowlist names the tool, as an operator reading the
// refusal needs to know which entry to add.
func policyDenial(d policy.Decision, tool string) *DenialError {
	if d.Code == policy.WriteNotAllowed {
		return Deny(CodeWriteNotAllowed, "tool "+strconv.Quote(tool)+" is a write tool and is not on the write allowlist")
	}
	return Deny(Code(d.Code.String()), d.Reason)
}

// limitFigures describes l's budget for a refusal: "5 calls per 1m",
// "10 units per 1h", "3 calls in flight".
func limitFigures(l limiter.Limit) string {
	max := strconv.FormatFloat(l.Max, 'f', -1, 64)
	switch l.Kind {
	case limiter.Concurrency:
		return max + " calls in flight"
	case limiter.Spend:
		return max + " units per " + shortDuration(l.Window)
	}
	return max + " calls per " + shortDuration(l.Window)
}

// shortDuration is d's String without its zero minutes and seconds: "1m",
// "1h", "1h30m", "90s" as "1m30s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// transient reports whether a read's failure may succeed on a retry.
func transient(res *mcp.CallToolResult, err error) bool {
	if err == nil {
		return false
	}
	var t interface{ Temporary() bool }
	return errors.Is(err, ErrUpstreamUnavailable) || (errors.As(err, &t) && t.Temporary())
}

// sessionKey picks the limiter key of the caller's session.
func (g *Guard) sessionKey(req *mcp.CallToolRequest, id *Identity) string {
	if g.opts.SessionKey != nil {
		return g.opts.SessionKey(req, id)
	}
	if req.Session != nil && !sessionless(req.Session) {
		// A session the go-sdk made up for one request (stateless HTTP)
		// is keyed by its caller, as one without an id: under the
		// go-sdk's MCPGODEBUG=allowsessionsinstateless=1 its id is
		// whatever Mcp-Session-Id the request sent, another caller's
		// own (learnt from a log) too, and no binding checks it.
		if sid := req.Session.ID(); sid != "" {
			// Prefixed, so that no id is another kind's key ("user:alice").
			return "sid:" + sid
		}
	}
	if id.Principal.Subject != "" {
		return "user:" + id.Principal.Subject
	}
	return "session:" + strconv.FormatUint(uint64(uintptr(unsafe.Pointer(req.Session))), 16)
}

// chargedText returns text(), the words of c's Describe or the generic
// ones, for a call that the limiter's decision ld charged (a dry run at
// step 9, the round that asks for a confirmation). A Describe that panics
// (its bug) gives the charge back first: the call is refused (see serve's
// recover) and the tool did not run.
func (g *Guard) chargedText(ctx context.Context, c *call, ld limiter.Decision, text func() string) string {
	done := false
	defer func() {
		if !done {
			g.refund(ctx, c, ld)
		}
	}()
	s := text()
	done = true
	return s
}

func (g *Guard) describe(c *call, topts ToolOptions) string {
	if text := describedBy(c, topts); text != "" {
		return text
	}
	return dryrun.Summary(c.name, c.raw)
}

// describedBy returns the text of topts.Describe for c, shown as
// ToolOptions.Describe says, or "" without one, or when it says nothing
// that can be shown (empty, blank, control characters alone): a human
// must not be asked to confirm an action of which the prompt shows
// nothing, so the generic description stands for it.
func describedBy(c *call, topts ToolOptions) string {
	return describedWith(c.name, c.argsMap(), topts)
}

// describedWith is describedBy for the tool name and its call's arguments
// args.
func describedWith(name string, args map[string]any, topts ToolOptions) string {
	if topts.Describe == nil {
		return ""
	}
	text := textsafe.CleanLines(topts.Describe(name, displayArgs(args)), maxDescribeRunes)
	if strings.TrimFunc(text, blankRune) == "" {
		return ""
	}
	return text
}

// blankRune reports whether r shows nothing: a space, or U+2800 BRAILLE
// PATTERN BLANK, a symbol drawn as an empty cell, which cleaning keeps.
func blankRune(r rune) bool {
	return unicode.IsSpace(r) || r == '\u2800'
}

// confirmStep runs step 7. It returns done with the result to send when the
// call ends here (asking the human, or a decline); a denial is left in
// c.denial. The first round of a logical call counts once against the call
// rate before the human is asked, so a rate-limited caller cannot flood
// the human with prompts, and its cost is checked against the spend caps
// without being spent, so no one is asked to confirm a call they would
// refuse now; the confirmed round then counts its spend only.
// The round that asks is not counted when a [Limit] step of the same
// limiter outside has counted the call and taken its cost.
func (g *Guard) confirmStep(ctx context.Context, req *mcp.CallToolRequest, c *call, topts ToolOptions, e *toolEntry) (res *mcp.CallToolResult, done bool) {
	s := g.opts.Confirmer
	if s == nil {
		c.denial = Deny(CodeConfirmationRequired, "this tool needs a confirmation the server cannot ask for")
		return nil, false
	}
	hash, herr := confirm.ArgsSHA256(c.raw)
	if herr != nil {
		// Validation (step 6) refuses whatever ArgsSHA256 refuses; should
		// they ever disagree, the caller is told what ArgsSHA256 found
		// (each of its errors is about the arguments, and quotes none).
		c.detail = "confirmation: " + herr.Error()
		c.denial = Deny(CodeInvalidArguments, strings.TrimPrefix(herr.Error(), "confirm: "))
		return nil, false
	}
	claims := confirm.Claims{Subject: c.id.Principal.Subject, Tool: c.name, ArgsSHA256: hash}
	p := req.Params
	state, responses := p.RequestState, p.InputResponses
	issued := state == "" // a state this call issues cannot have been used
	if issued {
		if mrtr := supportsMRTR(req.Session); !mrtr && !canElicit(req.Session) || mrtr && !declaresElicit(req) {
			// No one can be asked: refused before anything is charged.
			why := "the client does not support elicitation"
			if sessionless(req.Session) {
				why = "the server keeps no session with the client (stateless HTTP), so it cannot send it a question"
			}
			c.detail = why
			c.denial = Deny(CodeConfirmationRequired, "the user could not be asked to confirm: "+why)
			return nil, false
		}
		if !supportsMRTR(req.Session) && !bound(ctx, req) {
			// Anyone who knows the session id could answer the question.
			c.detail = "the session is not bound to a verified user"
			msg := "the user could not be asked to confirm: the session is not bound to its user"
			if unseenOpenings(ctx, req) {
				// No guard installed on the server saw the session
				// opened (Guard.Wrap, AddTool or a stand-alone Confirm
				// alone): whether it is bound cannot be told.
				c.detail = "no guard installed on the server saw the session opened (Guard.Install)"
				msg = "the user could not be asked to confirm: no guard is installed on the server (Guard.Install) to see who opened the session"
			}
			c.denial = Deny(CodeConfirmationRequired, msg)
			return nil, false
		}
		var ld limiter.Decision
		if g.opts.Limiter != nil && !limitedOutside(ctx, req, g.opts.Limiter) {
			// The cost is checked, not spent: a call the spend caps
			// would refuse now is refused before the human is asked.
			ld = g.limit(ctx, req, c, 1, 0, true)
			late := undecidedAtDeadline(ctx, ld) // before the log: see chargeLate
			g.opts.Limiter.Release(ld)
			g.limitFailed(ctx, req, c, ld)
			if late {
				c.denial = c.timedOutBeforeStart()
				return nil, false
			}
			if !ld.Allowed {
				c.denial = limitDenial(ld)
				return nil, false
			}
		}
		st, err := s.Issue(c.start, claims)
		if err != nil {
			// No one was asked: the call consumes nothing.
			g.refund(ctx, c, ld)
			c.detail = "confirmation state: " + err.Error()
			c.denial = Deny(CodeInternal, "the confirmation could not be prepared")
			return nil, false
		}
		msg := "Confirm: " + g.chargedText(ctx, c, ld, func() string { return g.confirmText(c, topts, e) })
		ask := confirm.Ask(msg, st)
		if supportsMRTR(req.Session) {
			c.denial = Deny(CodeConfirmationRequired, "waiting for the user's confirmation")
			c.detail = "confirmation requested"
			return inputRequired(ask), true
		}
		// An older client: ask it directly, as the go-sdk does for handlers.
		// An answer after the state's expiry is refused below, so the wait
		// ends then: a client that never answers does not hold the call.
		expires := time.Unix(c.start.Add(s.TTL()).Unix(), 0)
		// A call made in-process within a write's handler has that
		// write's detached context: the question ends when its caller
		// cancels, as the write's own would (withCallers), whether or not
		// a guard's sending middleware sees it.
		wctx, stop := withCallers(ctx)
		ectx, cancel := context.WithTimeout(wctx, expires.Sub(g.now()))
		er, err := g.elicitBounded(ectx, req.Session, ask.InputRequests[confirm.InputKey].(*mcp.ElicitParams))
		late := errors.Is(ectx.Err(), context.DeadlineExceeded) && wctx.Err() == nil
		// The deadline of the context the call came with (a call made
		// in-process within another guarded call's handler has that
		// call's) passed while the human was asked: the call timed out,
		// as one whose handler the deadline ends does, and, whatever the
		// client answered, its tool is not run after it.
		timedOut := !late && errors.Is(gaveup.Err(wctx), context.DeadlineExceeded)
		// Or its client went away (cancelled the call, closed the
		// session) while the human was asked.
		left := !late && !timedOut && errors.Is(gaveup.Err(wctx), context.Canceled)
		cancel()
		stop()
		if err != nil && late {
			c.detail = "no answer before the confirmation expired"
			c.denial = Deny(CodeConfirmationRequired, "the user did not answer before the confirmation expired; the tool was not run")
			return nil, false
		}
		if timedOut {
			c.detail = "the call's deadline passed while the user was asked to confirm; the tool was not run"
			c.denial = timedOutBeforeRun("the call's deadline passed while the user was asked to confirm")
			return nil, false
		}
		if err != nil {
			c.detail = "elicitation failed"
			if left {
				c.detail = "the client went away (the call's context ended) while the user was asked to confirm; the tool was not run"
			}
			c.denial = Deny(CodeConfirmationRequired, "the user could not be asked to confirm")
			return nil, false
		}
		// The human may have taken minutes: a policy set meanwhile
		// (Guard.SetPolicy, a tool revoked in an incident) that refuses
		// the call now keeps the write from running.
		if d := g.recheck(c); d != nil {
			c.denial = d
			return nil, false
		}
		state, responses = st, mcp.InputResponseMap{confirm.InputKey: er}
	}
	// The clock is read now, not at the call's start: on an older client the
	// human answered inside this call, and an answer after expiry must fail.
	// Checked only: the state is used up when the call is admitted
	// (consume), so a refusal by a limit or the audit trail leaves it to a
	// retry. But a state used already is refused here, before it is
	// charged or gets a write-ahead intent.
	now := g.now()
	t, err := s.Check(now, state, claims)
	if err == nil && !issued {
		err = t.Used(ctx, now)
	}
	if err != nil {
		c.detail = "confirmation: " + err.Error()
		c.denial = confirmationDenial(err)
		return nil, false
	}
	c.ticket = &t
	action, _ := confirm.Answer(&mcp.CallToolParamsRaw{InputResponses: responses})
	if action != "accept" {
		c.detail = "user answered " + strconv.Quote(action)
		if action == "" {
			c.denial = Deny(CodeConfirmationRequired, "no confirmation answer")
			return nil, false
		}
		// A decline uses the confirmation up: accepting it later runs
		// nothing.
		if d := g.consume(ctx, c); d != nil {
			c.denial = d
			return nil, false
		}
		d := Deny(CodeConfirmationRequired, "the user did not confirm; the tool was not run")
		c.denial = d
		out := *d
		out.CorrelationID = c.corr
		r := c.errorResult(&out)
		if g.opts.ProtocolErrors {
			return nil, false
		}
		return r, true
	}
	// Confirmed. The state and the answer were the guard's: the handler
	// runs its first round, as a call without the guard would, with
	// neither (nor input responses the client added to questions nobody
	// asked). The caller's params are left as they are.
	cp := *req.Params
	cp.RequestState, cp.InputResponses = "", nil
	req.Params = &cp
	return nil, false
}

// confirmationDenial is the refusal of a confirmation state that does not
// verify (err says why). A nonce store that could not be asked
// (confirm.ErrStore) is the server's fault, not the confirmation's, and
// asking the human again does not help while the store is down: the call
// is refused UPSTREAM_UNAVAILABLE, retryable after a second, so that a
// client retries the same confirmation rather than asking anew.
func confirmationDenial(err error) *DenialError {
	if errors.Is(err, confirm.ErrStore) {
		return storeDenial("the confirmation could not be checked: the server's confirmation store is unavailable; try again shortly")
	}
	return Deny(CodeConfirmationRequired, "the confirmation is missing, expired, already used or for another call; call the tool again to be asked")
}

// consume uses up the state the call came with (a confirmation, or the
// sealed state of a multi round-trip's next round), now that the call is
// admitted: a refusal before this point (a limit, the audit trail, a
// deadline passed; see pastCallerDeadline) leaves the client's state for a
// retry. It returns the refusal of a state used meanwhile by another call.
//
// A state used already is refused at step 7 (confirmStep and openState ask
// confirm.Ticket.Used), so a replay is charged nothing and gets no
// write-ahead intent. That check records nothing, so it leaves a race that
// only consume closes: two concurrent rounds with the same unused state
// both pass step 7 and are both charged against the limits (and, for a
// write, both get an intent), but only one passes consume and runs; the
// other is refused here. The same holds for every use of a state when the
// signer's nonce store does not implement confirm.NonceChecker.
func (g *Guard) consume(ctx context.Context, c *call) *DenialError {
	t := c.ticket
	if t == nil {
		return nil
	}
	c.ticket = nil
	if err := t.Consume(ctx, g.now()); err != nil {
		c.detail = "state: " + err.Error()
		if c.retry {
			return sealedStateDenial(err)
		}
		return confirmationDenial(err)
	}
	return nil
}

// withoutConfirmation gives the DryRunAware handler of a dry run of a tool
// Confirm asks about the request that the handler of its real, confirmed
// round gets (see confirmStep): without the guard's confirmation state and
// the answer to it. A state the guard sealed for a multi round-trip (the
// handler's own, opened: c.retry or c.preview) stays.
func withoutConfirmation(req *mcp.CallToolRequest, c *call) {
	if c.rule == nil || !c.rule.Confirm || c.retry || c.preview ||
		req.Params.RequestState == "" && req.Params.InputResponses == nil {
		return
	}
	cp := *req.Params
	cp.RequestState, cp.InputResponses = "", nil
	req.Params = &cp
}

// storeDenial is the refusal of a call whose confirmation or sealed state
// could not be checked because the nonce store failed: UPSTREAM_UNAVAILABLE
// (a service the server depends on is down), retryable after a second, as
// a limiter whose store fails refuses with a retry after a second.
func storeDenial(msg string) *DenialError {
	d := Deny(CodeUpstreamUnavailable, msg)
	d.RetryAfter = time.Second
	return d
}

// maxDescribeRunes bounds the text of a ToolOptions.Describe.
const maxDescribeRunes = 2000

// confirmText is the question that asks the human to confirm c, a call of
// e's tool: topts.Describe's text, or confirm.Describe's of the arguments
// as the handler gets them: for a tool of a server the guard is installed
// on (which may be a typed one), with the input schema's defaults filled
// in as go-sdk v1.8.0's typed-tool wrapper fills them in, and saying so,
// so that no value the handler runs with goes unseen ([wrapperDefaults]).
//
// A Describe is given those arguments too: the words it renders of them
// are the question.
func (g *Guard) confirmText(c *call, topts ToolOptions, e *toolEntry) string {
	var filled json.RawMessage
	if e != nil && !e.raw && e.tool != nil {
		filled, _ = wrapperDefaults(c.raw, e.tool.InputSchema)
	}
	if topts.Describe != nil {
		args := c.argsMap()
		if filled != nil {
			if doc, err := decodeStrict(filled); err == nil {
				args, _ = doc.(map[string]any)
			}
		}
		if text := describedWith(c.name, args, topts); text != "" {
			return text
		}
	}
	if filled != nil {
		return confirm.Describe(c.name, filled) + " (with the input schema's defaults filled in)"
	}
	return confirm.Describe(c.name, c.raw)
}

// displayArgs returns a copy of args for a ToolOptions.Describe, whose
// text a human reads: in its strings and in the keys of its objects, line
// breaks and tabs are written as the escapes \n, \r and \t, so that an
// argument cannot add lines of its own to a prompt ("reason": "late\nAmount:
// 1.00" under a real amount of 5000, or an object printed with its keys).
// The line breaks of Describe's own text stay. Where two keys of an object
// read the same once escaped, the copy keeps one: a key that needed no
// escape, else the least one as sent.
func displayArgs(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	out, _ := displayValue(args).(map[string]any)
	return out
}

var displayEscapes = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)

func displayValue(v any) any {
	switch x := v.(type) {
	case string:
		return displayEscapes.Replace(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		var from map[string]string // escaped key -> the key as sent
		for k, e := range x {
			dk := displayEscapes.Replace(k)
			if dk != k {
				if _, taken := x[dk]; taken {
					continue // the key as sent that reads so wins
				}
				if prev, ok := from[dk]; ok && prev < k {
					continue
				}
				if from == nil {
					from = make(map[string]string)
				}
				from[dk] = k
			}
			m[dk] = displayValue(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = displayValue(e)
		}
		return l
	}
	return v
}

// supportsMRTR mirrors the go-sdk: sessions on protocol 2026-07-28 or later
// (and sessions with no initialize at all) take input requests in results.
func supportsMRTR(ss *mcp.ServerSession) bool {
	if ss == nil {
		return true
	}
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= "2026-07-28"
}

// bound reports whether the answer to an elicitation asked in req's
// session can come only from req's caller. It comes back on the session,
// from whoever the transport lets post on it: on a stream (stdio, in
// memory, a request without HTTP headers) the one client; but the go-sdk's
// HTTP+SSE transport (mcp.NewSSEHandler), whose calls carry no headers
// either, lets anyone who knows the session id (in the query of every URL
// the client posts to) post on it, and binds no session to a user: a call
// without headers in the context of an HTTP request (see inHTTPRequest)
// is on a session not bound. Over stateful Streamable HTTP (a request with
// headers, on a session with an id) go-sdk v1.8.0 lets anyone who knows the
// session id post on it, unless the request that opened it (its
// initialize) carried a verified user (auth.TokenInfo with a UserID:
// auth.RequireBearerToken, token.Table.BindSessions), in which case every
// request on the session carries that user; or unless it came through
// mcpguard's gateway (with the gateway's subject header,
// [token.HeaderSubject]), which binds each session to its subject itself.
// The session is bound when a guard's receiving middleware ([Guard.Install])
// saw it opened so (see openers), by the user or subject req carries: a
// session opened without a token is bound to no one, whatever tokens its
// later requests carry, and a session no guard saw opened (a handler
// [Guard.Wrap] guards, or a stand-alone step, on a server no guard is
// installed on) is taken for one not bound.
func bound(ctx context.Context, req *mcp.CallToolRequest) bool {
	if req.Session == nil {
		return true
	}
	if req.Extra == nil || req.Extra.Header == nil {
		return !inHTTPRequest(ctx)
	}
	if req.Session.ID() == "" {
		return true
	}
	op, ok := openerOf(ctx, req.Session)
	if !ok {
		return false
	}
	if sub := req.Extra.Header.Get(token.HeaderSubject); sub != "" && sub == op.subject {
		return true
	}
	ti := req.Extra.TokenInfo
	return op.user != "" && ti != nil && ti.UserID == op.user
}

// recheck decides c, a call an older client was asked to confirm within
// the call, once more by the policy of the moment the answer came, when
// Guard.SetPolicy replaced the one that decided it: the denial of a call
// that policy refuses (an unknown tool's for one it does not know or
// hides), else nil.
func (g *Guard) recheck(c *call) *DenialError {
	d, why := redecide(g.pol.Load(), c, c.argsMap)
	if d != nil {
		c.detail = "the policy changed while the user was asked: " + why
	}
	return d
}

// redecide decides c once more by the policy p: it returns the denial of
// a call p refuses (an unknown tool's for one p does not know or hides)
// and p's reason, else nil. args gives the call's arguments, for p's
// argument limits.
func redecide(p *policy.Policy, c *call, args func() map[string]any) (*DenialError, string) {
	d := p.Authorize(c.id.Principal, c.name)
	if d.Code == policy.Allowed && d.Rule == c.rule {
		return nil, "" // the same policy
	}
	switch {
	case d.Code == policy.NotFound:
		return notFound(c.name), d.Reason
	case d.Code != policy.Allowed:
		return policyDenial(d, c.name), d.Reason
	case len(d.Rule.ArgLimits) > 0:
		if d := p.CheckArgs(c.id.Principal, d.Rule, policy.MapArgs(args())); !d.Allowed() {
			return Deny(CodeForbidden, d.Reason), d.Reason
		}
	}
	return nil, ""
}

// canElicit reports whether the go-sdk will send ss's client a form
// elicitation: it refuses to, without sending anything, when the client
// declared no elicitation capability, or one for URL mode only.
func canElicit(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && formElicit(ip.Capabilities)
}

// formElicit reports whether caps declare elicitation in form mode (or
// without a mode, which means form).
func formElicit(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// declaresElicit reports whether req's client, on protocol 2026-07-28,
// can be asked a form elicitation within the call (a multi round-trip):
// it declares the capability in the request's _meta, for form mode (or
// without a mode). A request without declared capabilities (made
// in-process, without _meta) may be asked: its caller is the server's.
func declaresElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps == nil || formElicit(caps)
}

// sessionless reports whether ss is a session the go-sdk made up for one
// request of an older protocol without an initialize (stateless HTTP): its
// initialize parameters name a protocol version but no capabilities, which
// every client's initialize carries. Its client cannot be sent a request.
func sessionless(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities == nil && ip.ClientInfo == nil
}

// inputRequired returns res marked with resultType "input_required", which
// the go-sdk sets only on results that pass through its own tool dispatch.
func inputRequired(res *mcp.CallToolResult) *mcp.CallToolResult {
	var out mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"input_required"}`), &out); err != nil {
		return res
	}
	out.Content = nil
	out.InputRequests = res.InputRequests
	out.RequestState = res.RequestState
	return &out
}

// maxRecordedName bounds the tool name a record carries as its tool: the
// go-sdk's bound on a tool's name is 128 bytes, and one far longer is a
// client's, not a tool's.
const maxRecordedName = 1024

// maxShownName bounds the bytes of a name a record's detail shows.
const maxShownName = 128

// recordedTool returns the tool and the detail a record of a call of name
// carries. A name no tool could have (one [policy.CheckName] refuses: a
// control or invisible character, white space at an end; or over
// maxRecordedName bytes) is the client's alone: the record has no tool,
// and its detail starts with the name quoted and escaped as
// strconv.QuoteToASCII does (a bidi override shows as \u202e), cut at
// maxShownName bytes. An unauthenticated client would otherwise write what
// it likes, of up to the request's size, into the trail with each request.
// A Guard serves no tool so named (compile refuses it), so the records of
// a tool it runs name it; the stand-alone [Audit] does not know the
// server's tools and records a call of one so named in the same way.
func recordedTool(name, detail string) (string, string) {
	if toolLike(name) {
		return name, detail
	}
	note := "tool name " + textsafe.Quoted(name, maxShownName)
	if detail == "" {
		return "", note
	}
	return "", note + "; " + detail
}

// toolLike reports whether name is one a record carries as its tool (see
// recordedTool).
func toolLike(name string) bool {
	return len(name) <= maxRecordedName && policy.CheckName(name) == nil
}

// logName returns name, a tool name a client may have chosen, as a log line
// shows it: as it is when a record could carry it as its tool, else quoted
// and cut as a record's detail shows it (see recordedTool).
func logName(name string) string {
	if toolLike(name) {
		return name
	}
	return textsafe.Quoted(name, maxShownName)
}

// maxLoggedText is the most bytes of a handler's error or panic value a
// log line shows (see logText).
const maxLoggedText = logsafe.MaxText

// logText returns s, the text of a handler's error or panic value, as a
// log line shows it ([logsafe.Text]): the call's arguments it often quotes
// were the client's choice.
func logText(s string) string { return logsafe.Text(s) }

// panicBeforeTool is the detail of a call's record whose guard panicked
// before the tool ran (a callback's bug).
const panicBeforeTool = "panic before the tool ran"

// panicText is logText of r, a recovered panic's value
// ([logsafe.PanicText]: a value whose text panics too is shown by its type).
func panicText(r any) string { return logsafe.PanicText(r) }

// buildEvent makes ev the audit record of c at time now; record names the
// argument fields the tool opted in to record verbatim, parent the call
// whose handler made c (see call.parent).
func buildEvent(ev *audit.Event, now time.Time, record []string, req *mcp.CallToolRequest, c *call, parent string, phase audit.Phase) {
	tool, detail := recordedTool(c.name, c.detail)
	if c.failOpen && phase == audit.PhaseOutcome {
		if detail == "" {
			detail = audit.DetailFailOpen
		} else {
			detail = audit.DetailFailOpen + "; " + detail
		}
	}
	if c.confirmed {
		// The trail says a human approved the call: its records would
		// otherwise read as those of a write nobody was asked about.
		if detail == "" {
			detail = confirmedDetail
		} else {
			detail = confirmedDetail + "; " + detail
		}
	}
	*ev = audit.Event{
		Time:          now,
		CorrelationID: c.corr,
		ParentID:      parent,
		RequestID:     c.requestID,
		Tool:          tool,
		Phase:         phase,
		DryRun:        c.dryRun,
		Cost:          c.charged,
		Detail:        detail,
		ArgsSHA256:    c.argsSHA256(),
	}
	// A call takes no negative time: a clock without a monotonic reading
	// (Options.Now) that steps back meanwhile reads 0, as the gateway's.
	ev.LatencyMS = float64(max(ev.Time.Sub(c.start), 0).Microseconds()) / 1000
	if c.id != nil && c.id.Principal != nil {
		ev.Subject = c.id.Principal.Subject
		ev.Roles = c.id.Principal.Roles
	}
	if c.rule != nil {
		ev.Class = c.rule.Class.String()
	}
	if c.session != "" {
		ev.SessionID = c.session // replaced by the MCP session's id, if it has one
	}
	if req != nil && req.Session != nil {
		if sid := req.Session.ID(); sid != "" {
			ev.SessionID = sid
		}
		if ip := req.Session.InitializeParams(); ip != nil {
			ev.ProtocolVersion = ip.ProtocolVersion
			if ip.ClientInfo != nil {
				ev.ClientName = ip.ClientInfo.Name
			}
		}
	}
	if phase == audit.PhaseIntent {
		ev.Cost = 0 // the outcome record carries the charge, once
		ev.Allowed = true
	} else if c.denial == nil {
		ev.Allowed = true
	} else {
		ev.Code = string(c.denial.Code)
		ev.Allowed = false
	}
	// Opted-in fields are recorded only for arguments that passed
	// validation: a refused call's values are the caller's, not the tool's.
	if len(record) > 0 && c.valid && c.argsMap() != nil {
		ev.Args = make(map[string]any, len(record))
		for _, f := range record {
			if v, ok := c.args[f]; ok {
				ev.Args[f] = v
			}
		}
	}
}

// confirmedDetail opens the audit detail of a call its user confirmed
// (ToolRule.Confirm), in each of its records.
const confirmedDetail = "confirmed by the user"

// defaultWriteAheadTimeout is [Options].WriteAheadTimeout's 0.
const defaultWriteAheadTimeout = 10 * time.Second

func (g *Guard) auditIntent(ctx context.Context, req *mcp.CallToolRequest, c *call) (err error) {
	if g.opts.Audit == nil {
		return errors.New("no audit sink configured")
	}
	// A sink that panics (its bug) has not made the record: the write is
	// refused as for a sink that failed, not as a tool that panicked.
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("the audit sink panicked: " + panicText(r))
		}
	}()
	var ev audit.Event
	buildEvent(&ev, g.now(), c.record, req, c, c.parent(ctx, req), audit.PhaseIntent)
	wctx := context.WithoutCancel(ctx)
	if d := g.opts.WriteAheadTimeout; d > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(wctx, d)
		defer cancel()
	}
	if err := audit.WriteDurable(wctx, g.opts.Audit, &ev); err != nil {
		if wctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("not made within %v (Options.WriteAheadTimeout): %w", g.opts.WriteAheadTimeout, err)
		}
		return err
	}
	return nil
}

// auditOutcome writes the outcome record and reports whether it was written.
func (g *Guard) auditOutcome(ctx context.Context, req *mcp.CallToolRequest, c *call) (ok bool) {
	if g.opts.Audit == nil {
		return true
	}
	// Written after serve's recover: a sink's panic would end the process
	// (the go-sdk recovers none). It is the write's failure.
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("mcpguard: audit record not written: the sink panicked", "tool", logName(c.name), "correlation_id", c.corr, "panic", panicText(r))
			ok = false
		}
	}()
	// The call's own memory holds the record: a sink does not keep it
	// past Write.
	ev := &c.outcome
	if g.keeper != nil {
		// A Keeper takes the record over, and encodes it (and hashes the
		// arguments) later in a batch, off this call's path: the call's
		// memory is never reused, and nothing here reads the record or
		// sumBuf again. The arguments are copied into sumBuf, since the
		// request's bytes are not the guard's to give.
		var args json.RawMessage
		if !c.summed && c.hashKey == nil && len(c.raw) <= len(c.sumBuf) {
			args = c.sumBuf[:copy(c.sumBuf[:], c.raw)]
			c.summed = true // c.sum stays empty: the sink fills the record's
		}
		buildEvent(ev, g.now(), c.record, req, c, c.parent(ctx, req), audit.PhaseOutcome)
		if err := g.keeper.Keep(context.Background(), ev, args); err != nil {
			g.log.Error("mcpguard: audit record not written", "tool", logName(c.name), "correlation_id", c.corr, "err", err)
			return false
		}
		return true
	}
	buildEvent(ev, g.now(), c.record, req, c, c.parent(ctx, req), audit.PhaseOutcome)
	// The outcome is recorded even when the client has gone away.
	if err := g.opts.Audit.Write(context.Background(), ev); err != nil {
		g.log.Error("mcpguard: audit record not written", "tool", logName(c.name), "correlation_id", c.corr, "err", err)
		return false
	}
	return true
}

// auditWithheld records, as well as it can, that c's answer was withheld
// (Options.AuditFailClosed) because its outcome record could not be
// written: a sink that failed in part (a Fanout one of whose sinks still
// recorded the call as allowed) then holds this refusal too, the last
// outcome of the call's correlation id. Its own failure is only logged.
func (g *Guard) auditWithheld(ctx context.Context, req *mcp.CallToolRequest, c *call) {
	c.detail = "the outcome record could not be written: the answer was withheld"
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("mcpguard: audit record not written: the sink panicked", "tool", logName(c.name), "correlation_id", c.corr, "panic", panicText(r))
		}
	}()
	var ev audit.Event
	buildEvent(&ev, g.now(), c.record, req, c, c.parent(ctx, req), audit.PhaseOutcome)
	if err := g.opts.Audit.Write(context.Background(), &ev); err != nil {
		g.log.Error("mcpguard: audit record not written", "tool", logName(c.name), "correlation_id", c.corr, "err", err)
	}
}

// requestID returns the value of the header name in req's HTTP request
// when it is one id a proxy could have sent (see Options.RequestIDHeader),
// else "".
func requestID(req *mcp.CallToolRequest, name string) string {
	if name == "" || req == nil || req.Extra == nil {
		return ""
	}
	vs := req.Extra.Header.Values(name)
	if len(vs) != 1 || len(vs[0]) == 0 || len(vs[0]) > 128 {
		return ""
	}
	for i := 0; i < len(vs[0]); i++ {
		switch c := vs[0][i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return ""
		}
	}
	return vs[0]
}

// checkHeaderName refuses an Options.RequestIDHeader that is not an HTTP
// header name ("" is none).
func checkHeaderName(name string) error {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return fmt.Errorf("mcpguard: RequestIDHeader %q is not an HTTP header name", name)
		}
	}
	return nil
}

package mcpguard

import (
	"context"
	"errors"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The execution steps of the pipeline as stand-alone [Middleware]: the
// write-ahead intent of step 10 ([WriteAhead]) and the output validation of
// step 11 ([ValidateOutput]). With the other steps they make a chain whose
// records and refusals are the Guard's:
//
//	Chain(Recover(log), auditStep, Authenticate(a), Authorize(p),
//		ValidateArguments(in), confirmStep, limitStep, dryRunStep,
//		writeAheadStep, ValidateOutput(out))

// WriteAhead records a write's intent before its handler runs, as the
// Guard's step 10 does: a call of a tool whose rule in p is a write, and
// that is not a dry run (by opts' settings, the client's request, or a
// dry-run context: a dry run a step outside answered for a DryRunAware
// handler is one whatever opts say), first gets a durable intent record
// in sink ([audit.WriteDurable]) under the correlation id of the [Audit]
// middleware outside it, so that the trail shows the write was attempted
// even if the process dies before its outcome is recorded. When the record
// cannot be made the call is refused with AUDIT_UNAVAILABLE, its handler
// does not run, and a [Limit] step outside it gives back what it charged. Reads
// pass through unrecorded. A dry run is not recorded either, and is
// answered by WriteAhead itself, as [DryRun] would (a simulated result, or
// the handler of a tool whose options declare DryRunAware called with a
// dry-run context), so that its handler never writes without an intent: a
// chain without a DryRun step still never writes for a client that asked
// for a preview. A dry run that a step outside (a Guard's, or [DryRun],
// [Limit] or [Confirm]) answered by passing that same call on to a
// DryRunAware handler with a dry-run context goes on to the handler; the
// dry-run context of another call (an aware handler that passes a dry run
// of another write on to its chain, or its own request on to another
// chain with an Audit middleware of its own) does not count.
//
// It takes the settings of opts that a Guard's intent records use (ArgsKey,
// SessionKey, Now, Logger, RequestIDHeader, WriteAheadTimeout, the
// RecordArgs of Tools, which are recorded only for arguments a
// [ValidateArguments] inside the Audit middleware passed) and those that
// render a refusal (ProtocolErrors, NotFoundCode). Inside an Audit
// middleware that found a request id (its RequestIDHeader), the intent
// record carries that one, as its outcome record does. It
// resolves the caller from the context, so [Authenticate] must run outside
// it, and refuses what p refuses, as the other steps do. It goes after
// [DryRun], innermost but for [ValidateOutput]: a step after it that
// refused the call would leave an intent with no write.
//
// WriteAhead returns an error for a nil sink or policy, an ArgsKey shorter
// than 16 bytes, a RequestIDHeader that is not a header name, per-tool
// options of tools p does not know, per-tool DryRun of a tool p classes
// Read or of a name that is a write tool's only under case folding (unless
// that tool's own options set it), or a limit of opts.Limiter that caps
// nothing or is below a rule's fixed cost (as [New] refuses them).
func WriteAhead(sink audit.Sink, p *policy.Policy, opts *Options) (Middleware, error) {
	if sink == nil {
		return nil, errors.New("mcpguard: nil audit sink")
	}
	if err := nilSink(sink); err != nil {
		return nil, err
	}
	g, err := stepGuard(p, opts)
	if err != nil {
		return nil, err
	}
	g.opts.Audit = sink
	g.opts.Tools = withoutCost(g.opts.Tools) // an intent records no cost
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var s stepRun
			defer s.end(ctx, req)
			res, err := g.writeAheadRound(ctx, req, next, &s)
			s.done = true
			return res, err
		}
	}, nil
}

// writeAheadRound is the [WriteAhead] step's work on ctx's call of req, s
// its way out; g's sink is the step's.
func (g *Guard) writeAheadRound(ctx context.Context, req *mcp.CallToolRequest, next mcp.ToolHandler, s *stepRun) (*mcp.CallToolResult, error) {
	c, topts, d := g.begin(ctx, req)
	if d != nil {
		refundAdmissions(ctx, req) // refused before it ran
		return g.stepDeny(ctx, req, c, d)
	}
	if c.rule.Class != policy.Write {
		return s.handOn(ctx, req, c, next)
	}
	if c.dryRun {
		// No intent, so no real write: answered here, as
		// Confirm and Limit answer one, unless a step outside
		// answered it already by calling a DryRunAware handler.
		if dryRunAnswered(ctx, req) {
			return s.handOn(ctx, req, c, next)
		}
		return g.answerDryRun(ctx, req, c, topts, next, s)
	}
	c.record = topts.RecordArgs
	if ac := auditCall(ctx, req); ac != nil {
		c.valid, c.confirmed = ac.valid, ac.confirmed
	}
	if g.opts.SessionKey != nil {
		c.session = g.opts.SessionKey(req, c.id)
	}
	if err := g.auditIntent(ctx, req, c); err != nil {
		g.log.Error("mcpguard: write-ahead audit record failed; write refused", "tool", logName(c.name), "correlation_id", c.corr, "err", err)
		refundAdmissions(ctx, req)
		if ac := auditCall(ctx, req); ac != nil {
			ac.detail = "write-ahead intent not recorded"
		}
		return g.deny(c, Deny(CodeAuditUnavailable, "the audit trail is unavailable; the write was not attempted"))
	}
	return s.handOn(ctx, req, c, next)
}

// NewOutputValidator compiles a tool's output schema for [ValidateOutput],
// with the checks a Guard applies to output (see [Guard.Install]): the
// schema's own rules, without strict mode's refusal of fields the schema
// does not name, of control characters and of long strings, which bound
// what a model may send rather than what a tool may answer.
func NewOutputValidator(schema any) (*Validator, error) {
	return newValidator(schema, outputValidation, false)
}

// outputValidation is how a Guard checks a tool's output.
var outputValidation = &ValidationOptions{Lenient: true, AllowControlChars: true, MaxStringBytes: 1 << 30}

// ValidateOutput checks the structured content of the handler's successful
// results with v (the tool's output schema, see [NewOutputValidator]), as
// the Guard's step 11 does: a result without structured content, or whose
// structured content v refuses, that is not UTF-8 once encoded (a
// json.RawMessage holds the tool's bytes as they are) or that is nested
// more than 512 levels deep (the go-sdk's client would close its session on
// it), is replaced by an INVALID_RESPONSE refusal, so that a model is never
// handed malformed data; and so is one with a part the go-sdk could not
// encode or would panic encoding (a content block that is nil or a nil
// pointer: the go-sdk's panic would end the process), or that is not UTF-8
// or nested so once encoded (a _meta), as step 11 refuses it; for a write
// (as an [Authorize] or a write-path step inside an [Audit] middleware
// tells it), the refusal says the write may have been made. Tool errors,
// and results that ask for more input, pass through unchecked.
//
// A nil v stands for a tool without an output schema: ValidateOutput then
// passes every result through, so that a nil content block in one still
// ends the process in the go-sdk ([Guard.Wrap] and [Guard.Install] check
// every result). Unlike a Guard's step 11, ValidateOutput does not cap a
// result's size ([Options].MaxOutputBytes): the cost of checking a large
// structured content grows with it.
func ValidateOutput(v *Validator) Middleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		if v == nil {
			return next
		}
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := next(ctx, req)
			if err != nil || res == nil || res.IsError || res.InputRequests != nil {
				return res, err
			}
			e := toolEntry{out: v}
			if oerr := e.checkResult(res, -1); oerr != nil {
				d := Deny(CodeInvalidResponse, "the tool returned a malformed result")
				if ac := auditCall(ctx, req); ac != nil {
					ac.detail = "output: " + oerr.Error()
					if ac.rule != nil {
						d = ac.failedWrite(d)
					}
				}
				return denied(ctx, req, d), nil
			}
			return res, nil
		}
	}
}

// limitCtx is the context a [Limit] step gives the call it admitted, for a
// step inside it ([WriteAhead], [DryRun]) that refuses the call before it
// runs to give back its charge.
type limitCtx struct {
	context.Context
	g        *Guard
	c        *call
	ld       limiter.Decision
	req      *mcp.CallToolRequest
	ac       *call     // the Audit middleware's call around the Limit step, or nil
	outer    *limitCtx // the admission of a Limit step outside this one, for the same call
	refunded bool
}

type limitKey struct{}

func (l *limitCtx) Value(key any) any {
	if key == (limitKey{}) {
		return l
	}
	return l.Context.Value(key)
}

// newLimitCtx returns the context of a call of req that a Limit step of g
// admitted with ld, c being the step's state of the call.
func newLimitCtx(ctx context.Context, g *Guard, c *call, ld limiter.Decision, req *mcp.CallToolRequest) *limitCtx {
	return &limitCtx{Context: ctx, g: g, c: c, ld: ld, req: req, ac: auditCall(ctx, req), outer: limitCall(ctx, req)}
}

// limitCall returns the innermost Limit step's admission of ctx's call of
// req, or nil.
func limitCall(ctx context.Context, req *mcp.CallToolRequest) *limitCtx {
	l, _ := ctx.Value(limitKey{}).(*limitCtx)
	if l == nil || l.req != req {
		return nil
	}
	return l
}

// stepRun is what a stand-alone step knows of its call's way out (see
// end): whether it handed the call on, to the steps inside it and the
// tool, whether it is done with its own work (it returned, or, for
// [Authenticate], its Authenticator did), and the admission of a charge it
// took itself.
type stepRun struct {
	own          *limitCtx
	handed, done bool
}

// handOn hands ctx's call of req, c, on to next, the steps inside the step
// and the tool. A write's refusal by its handler comes back as a Guard
// answers it (see startedWrite).
func (s *stepRun) handOn(ctx context.Context, req *mcp.CallToolRequest, c *call, next mcp.ToolHandler) (*mcp.CallToolResult, error) {
	s.handed = true
	if c.rule == nil || c.rule.Class != policy.Write || c.dryRun {
		return next(ctx, req)
	}
	if rc := recoverCall(ctx, req); rc != nil {
		rc.write = true
	}
	res, err := next(ctx, req)
	return startedWrite(req, res, err)
}

// startedWrite returns what the handler of a write returned, res and err,
// with its own refusal (a *DenialError, returned or in a tool-error
// result: see handlerError) not retryable, as a Guard answers it: the
// handler started, and may have written; unless its code says the call
// was not carried out (a cap, AUDIT_UNAVAILABLE). A copy: the handler may
// return one value each time. A refusal in a result stays a result.
func startedWrite(req *mcp.CallToolRequest, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	_, herr := handlerError(req, res, err)
	var de *DenialError
	if herr == nil || !errors.As(herr, &de) || de.Code == "" || notRun(de.Code) || de.RetryAfter < 0 {
		return res, err
	}
	d := *de
	d.RetryAfter = -1
	if err == nil {
		// Its own result, rendered again: a handler's, not the guard's.
		r := d.Result()
		r.Meta = res.Meta
		return r, nil
	}
	return res, &d
}

// end, deferred by a stand-alone step before anything else, runs as its
// call leaves it. A step that is neither done nor has handed the call on
// panicked in its own code: code of the operator's that it called (an
// Authenticator, a Cost, Describe or SessionKey function) had a bug. The
// tool did not run, so the call is given back what the step and the Limit
// steps outside charged it, as any refusal before the tool is, and the
// record of an Audit outside says the panic came before the tool, as a
// Guard's does. The panic goes on up, to the Recover outside.
func (s *stepRun) end(ctx context.Context, req *mcp.CallToolRequest) {
	if s.done || s.handed {
		return
	}
	if s.own != nil {
		s.own.refund(ctx)
	}
	refundAdmissions(ctx, req)
	ac := auditCall(ctx, req)
	if ac != nil {
		ac.detail = panicBeforeTool
	}
	// The Recover of this chain, not of a chain outside whose handler
	// passed its own request on to this one (whose tool did run).
	if rc := recoverCall(ctx, req); rc != nil && (ac == nil || !ac.passedOn) {
		rc.before = true
	}
}

// refundAdmissions gives back what every Limit step around ctx's call of
// req charged it, for a call refused before it ran. Only the Limit steps
// within the same Audit middleware as the refusing step count: a handler
// that passes its own call on to another guarded chain (with an Audit of its
// own) has run, and its call keeps its charge.
func refundAdmissions(ctx context.Context, req *mcp.CallToolRequest) {
	ac := auditCall(ctx, req)
	for l := limitCall(ctx, req); l != nil; l = l.outer {
		if l.ac == ac {
			l.refund(ctx)
		}
	}
}

// refund gives back what the Limit step charged, once, and tells the Audit
// middleware around the step what is left charged.
func (l *limitCtx) refund(ctx context.Context) {
	if l.refunded {
		return
	}
	l.refunded = true
	l.g.refund(ctx, l.c, l.ld)
	if l.ac != nil {
		l.ac.charged = l.c.charged
	}
}

// withoutCost returns a copy of tools without their Cost functions, for a
// step that charges nothing: a Cost function is then not called again (it
// may look a price up, and fail) for a call another step has charged.
func withoutCost(tools map[string]ToolOptions) map[string]ToolOptions {
	out := make(map[string]ToolOptions, len(tools))
	for name, o := range tools {
		o.Cost = nil
		out[name] = o
	}
	return out
}

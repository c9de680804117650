package mcpguard

import (
	"context"
	"errors"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The pipeline's write-path steps as stand-alone [Middleware]: [Confirm],
// [Limit] and [DryRun]. They take the settings of a [Guard] ([Options]:
// Tools, DryRun, SessionKey, Now, Logger, ProtocolErrors and NotFoundCode
// for how a refusal is rendered) and behave as the Guard's steps 7, 8 and
// 9 do, with two differences: each step resolves the caller from the
// context, so [Authenticate] must run outside them (without an identity
// every call is refused), and each takes the correlation id of the [Audit]
// middleware outside it (or draws its own without one). The
// signer given to Confirm and the limiter given to Limit are theirs,
// whatever opts' Confirmer and Limiter say. In a chain they go in the pipeline's
// order, inside Authenticate, [Authorize] and [ValidateArguments], with
// auditStep the [Audit] middleware (given the same opts, its records are
// the Guard's, but where Audit's doc says a step decides otherwise):
//
//	Chain(Recover(log), auditStep, Authenticate(a), Authorize(p),
//		ValidateArguments(v), confirmStep, limitStep, dryRunStep,
//		writeAheadStep, ValidateOutput(out))
//
// Each step also applies the policy again, argument limits included, and
// refuses what it would refuse (a tool the caller may not see is unknown to
// it), so a step used alone never acts on a call the policy forbids.
// Confirm and Limit seal a handler's request for more input as the Guard
// does (see [Options].Confirmer), each its own in a chain: the next round
// of that logical call counts nothing more and is not asked to confirm
// again. Confirm seals with its signer; Limit, which has none, with
// opts.Confirmer, and with a nil one with a key of this process's, so
// replicas that share a signer give it to Limit there too, or a next
// round that reaches another replica is refused by its Limit
// (INVALID_ARGUMENTS). As in the Guard, a confirmation or sealed state
// that was used already is refused when it is opened, before anything is
// charged; it is used up only when the step passes the call on.

// Confirm asks the human to confirm each call of a tool whose rule in p
// has Confirm, as the Guard's step 7 does: the first call of such a tool
// ends with a confirmation request (an input request on protocol
// 2026-07-28 and later; on older clients an elicitation inside the call,
// whose answer is waited for until the state expires) carrying a state
// signed by s and bound to the caller's subject, the tool and its
// arguments; the handler runs only for the call that returns the accepted
// answer with that state, once. A dry run of a write tool, of such a tool
// or not, is not confirmed but answered by Confirm itself, as [DryRun]
// would (when opts.Limiter is set, counted once against the call rate,
// and refused, as [Limit] refuses one, when its cost would not fit in the
// spend caps now; once in all with a Limit of that limiter outside or
// inside Confirm): the handler inside never writes for a dry run, nor
// runs for real without a confirmation. Over stateful Streamable HTTP, a
// Confirm on a server no guard is installed on ([Guard.Install]) sees no
// session opened, and refuses an older client's call
// CONFIRMATION_REQUIRED instead of asking (see the package doc's
// "Sessions over HTTP").
// Confirm seals a handler's request for more input with s too, whatever
// opts.Confirmer says, so the next round may reach another replica whose
// signer has the same keys and nonce store.
//
// With opts.Limiter set, the round that asks counts once against the call
// rate, and the confirmed round then counts nothing against it, as in the
// Guard: a [Limit] inside Confirm sees that and charges the confirmed
// round its spend only. The round that asks also checks the call's cost
// against the spend caps without spending it, as a dry run does: a call
// whose cost would not fit now is refused (SPEND_LIMIT_EXCEEDED, with the
// wait the confirmed round would get) before anyone is asked, and counts
// no call. Without opts.Limiter, asking is not counted. Confirm uses the
// confirmation up when it passes the call on, so a refusal further in (by
// a Limit inside it) needs a new confirmation; the Guard, which checks the
// limits first, leaves the confirmation to a retry. A Limit outside
// Confirm counts the logical call and takes its cost in the round that
// asks (the confirmed round, which carries the state that Limit sealed,
// counts nothing); when its limiter is opts.Limiter, Confirm does not
// count or check that round again. A call Confirm refuses gets back what
// a Limit outside charged it, but the decline of a client on 2026-07-28
// comes in a round of its own, so the round that asked keeps its charge:
// put Limit inside Confirm to charge confirmed calls only.
//
// Confirm returns an error for a nil signer, or one not made by
// confirm.NewSigner, or a nil policy, an opts.ArgsKey
// shorter than 16 bytes, an opts.RequestIDHeader that is not a header name,
// per-tool options of tools p does not know, per-tool DryRun of a tool p
// classes Read or of a name that is a write tool's only under case folding
// (unless that tool's own options set it), or a limit of opts.Limiter that
// caps nothing or is below a rule's fixed cost (as [New] refuses them).
func Confirm(s *confirm.Signer, p *policy.Policy, opts *Options) (Middleware, error) {
	if s == nil {
		return nil, errors.New("mcpguard: nil confirmation signer")
	}
	// s also seals the handlers' request states, as a Guard's Confirmer
	// does: a next round may reach another replica.
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Confirmer = s
	g, err := stepGuard(p, &o)
	if err != nil {
		return nil, err
	}
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var s stepRun
			defer s.end(ctx, req)
			res, err := g.confirmRound(ctx, req, next, &s)
			s.done = true
			return res, err
		}
	}, nil
}

// confirmRound is the [Confirm] step's work on ctx's call of req, s its
// way out.
func (g *Guard) confirmRound(ctx context.Context, req *mcp.CallToolRequest, next mcp.ToolHandler, s *stepRun) (*mcp.CallToolResult, error) {
	c, topts, d := g.beginRound(ctx, req)
	// A refused call consumes nothing: a Limit step outside this
	// one gives back what it charged.
	refuse := func(d *DenialError) (*mcp.CallToolResult, error) {
		refundAdmissions(ctx, req)
		res, err := g.deny(c, d)
		g.audited(ctx, req, c)
		return res, err
	}
	if d != nil {
		return refuse(d)
	}
	if !c.rule.Confirm && !c.dryRun {
		if d := g.consume(ctx, c); d != nil {
			return refuse(d)
		}
		return g.sealed(ctx, req, c)(s.handOn(ctx, req, c, next))
	}
	if c.dryRun {
		// Answered here, for a tool Confirm asks about or not:
		// a handler inside that does not know of dry runs would
		// really write, with a record saying dry_run. Counted
		// once: not again when a Limit of the same limiter outside
		// counted it, and a Limit inside knows it was (the
		// handler of a DryRunAware tool runs inside both).
		if l := g.opts.Limiter; l != nil && !c.retry && !limitedOutside(ctx, req, l) {
			ld, d := g.charge(ctx, req, c, 1)
			if d != nil {
				return refuse(d)
			}
			defer l.Release(ld)
			s.own = newLimitCtx(ctx, g, c, ld, req)
			ctx = s.own
		}
		if d := g.consume(ctx, c); d != nil {
			return refuse(d)
		}
		return g.sealed(ctx, req, c)(g.answerDryRun(ctx, req, c, topts, next, s))
	}
	if !c.confirmed { // not the next round of a confirmed call
		// A stand-alone step has no tool entry (its tool's schema).
		res, done := g.confirmStep(ctx, req, c, topts, nil)
		if done { // asked, or declined
			if res.InputRequests == nil {
				refundAdmissions(ctx, req)
			}
			g.audited(ctx, req, c)
			return res, nil
		}
		if c.denial != nil {
			return refuse(c.denial)
		}
		c.confirmed = true
	}
	if ac := auditCall(ctx, req); ac != nil {
		ac.confirmed = true // its records say so, as a Guard's do
	}
	if g.opts.Limiter != nil {
		ctx = context.WithValue(ctx, countedKey{}, true)
	}
	if d := g.consume(ctx, c); d != nil {
		return refuse(d)
	}
	return g.sealed(ctx, req, c)(s.handOn(ctx, req, c, next))
}

// stepDeny is deny for a stand-alone step, whose refusal the Audit
// middleware around it records as a Guard records it (see audited).
func (g *Guard) stepDeny(ctx context.Context, req *mcp.CallToolRequest, c *call, d *DenialError) (*mcp.CallToolResult, error) {
	res, err := g.deny(c, d)
	g.audited(ctx, req, c)
	return res, err
}

// audited tells the Audit middleware around ctx's call of req what
// Confirm decided about it, c, so that its record says what the Guard's
// would: the round that asks the human is refused CONFIRMATION_REQUIRED
// (its result is no error, and the tool did not run), and each decision
// has its detail.
func (g *Guard) audited(ctx context.Context, req *mcp.CallToolRequest, c *call) {
	ac := auditCall(ctx, req)
	if ac == nil {
		return
	}
	if c.denial != nil {
		ac.denial = c.denial
	}
	if ac.detail == "" {
		ac.detail = c.detail
	}
}

// limitedOutside reports whether a Limit step of l outside the calling
// step (within the same Audit middleware) admitted ctx's call of req: it
// counted the call against the call rate and took its cost.
func limitedOutside(ctx context.Context, req *mcp.CallToolRequest, l *limiter.Limiter) bool {
	ac := auditCall(ctx, req)
	for lc := limitCall(ctx, req); lc != nil; lc = lc.outer {
		if lc.ac == ac && lc.g.opts.Limiter == l {
			return true
		}
	}
	return false
}

// countedKey marks in a context a confirmed call whose logical call was
// already counted against the call rate when the human was asked.
type countedKey struct{}

// Limit applies l's rate, spend and in-flight caps to each call, as the
// Guard's step 8 does: a call counts once against the call rate (not when a
// [Confirm] outside it already counted it) and its cost against spend (the
// rule's Cost, or opts.Tools' Cost function of the arguments), in the
// scopes of the caller's session (opts.SessionKey), subject and the whole
// server. A dry run spends nothing: its cost is only checked against the
// spend caps, without taking any of it ([limiter.Request].DryRun), so that
// a dry run whose cost would not fit now is refused with the
// SPEND_LIMIT_EXCEEDED and wait the real call would get, and one that fits
// is answered by Limit itself, as [DryRun] would, so that a handler inside
// never writes for free (a dry run that a [Confirm] of the same limiter
// outside counted is not counted again). The answer holds only for the
// moment it was made (other calls may use the room before the real call),
// and a dry run's cost never makes a real call fail (its call and
// in-flight slot count as the real call's would); on a store that is not a
// [limiter.PeekStore] its cost is not checked. An in-flight slot is held
// until the handler returns. A refusal is RATE_LIMIT_EXCEEDED, SPEND_LIMIT_EXCEEDED or
// CONCURRENCY_LIMIT_EXCEEDED with the time to wait before retrying, except
// for a call that costs more than a spend limit holds in all: no wait
// helps, and it is refused as not retryable. A limiter whose store failed
// and that fails closed ([limiter.ErrStoreUnavailable]) refuses the call as
// RATE_LIMIT_EXCEEDED with a wait of one second, as the Guard does; a call
// whose context ended before the limiter decided is refused the same way
// (see [Options].Limiter), here also one the Guard would refuse as timed
// out (made in-process within a guarded call whose deadline passed).
//
// Limit returns an error for a nil limiter or policy, an opts.ArgsKey
// shorter than 16 bytes, an opts.RequestIDHeader that is not a header name,
// per-tool options of tools p does not know, per-tool DryRun of a tool p
// classes Read or of a name that is a write tool's only under case folding
// (unless that tool's own options set it), or a limit of l that [New]
// refuses in [Options].Limiter: for one tool p has no rule for, a spend
// limit for one tool that costs nothing, or a spend limit below the fixed
// Cost of a rule it caps, which would refuse every call charged under
// that rule; opts.Limiter is not l's and is not checked.
func Limit(l *limiter.Limiter, p *policy.Policy, opts *Options) (Middleware, error) {
	if l == nil {
		return nil, errors.New("mcpguard: nil limiter")
	}
	// l is the limiter the step applies: New's checks of a limiter's
	// limits are for it, whatever opts.Limiter says.
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Limiter = l
	g, err := stepGuard(p, &o)
	if err != nil {
		return nil, err
	}
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var s stepRun
			defer s.end(ctx, req)
			res, err := g.limitRound(ctx, req, next, &s)
			s.done = true
			return res, err
		}
	}, nil
}

// limitRound is the [Limit] step's work on ctx's call of req, s its way
// out; g's limiter is the step's.
func (g *Guard) limitRound(ctx context.Context, req *mcp.CallToolRequest, next mcp.ToolHandler, s *stepRun) (*mcp.CallToolResult, error) {
	l := g.opts.Limiter
	c, topts, d := g.beginRound(ctx, req)
	if d != nil {
		refundAdmissions(ctx, req) // of Limit steps outside this one
		return g.stepDeny(ctx, req, c, d)
	}
	if c.dryRun && limitedOutside(ctx, req, l) {
		// A Confirm of the same limiter outside counted this dry
		// run and holds its in-flight slot: it is answered here,
		// counted once.
		if d := g.consume(ctx, c); d != nil {
			refundAdmissions(ctx, req)
			return g.stepDeny(ctx, req, c, d)
		}
		return g.sealed(ctx, req, c)(g.answerDryRun(ctx, req, c, topts, next, s))
	}
	calls := 1
	if counted, _ := ctx.Value(countedKey{}).(bool); c.retry || counted && c.rule.Confirm && !c.dryRun {
		calls = 0
	}
	ld, d := g.charge(ctx, req, c, calls)
	if d != nil {
		refundAdmissions(ctx, req)
		return g.stepDeny(ctx, req, c, d)
	}
	defer l.Release(ld)
	s.own = newLimitCtx(ctx, g, c, ld, req)
	if d := g.consume(ctx, c); d != nil {
		refundAdmissions(s.own, req) // refused: it consumes nothing
		return g.stepDeny(ctx, req, c, d)
	}
	if ac := auditCall(ctx, req); ac != nil {
		ac.charged = c.charged
	}
	if c.dryRun {
		// It spent nothing, so it is answered here: a handler
		// inside that does not know of dry runs would really write.
		// A Confirm inside knows it counted the call.
		return g.sealed(ctx, req, c)(g.answerDryRun(s.own, req, c, topts, next, s))
	}
	// A WriteAhead inside that refuses the call gives its charge
	// back through the context.
	return g.sealed(ctx, req, c)(s.handOn(s.own, req, c, next))
}

// DryRun answers the dry runs of write tools, as the Guard's step 9 does. A
// call of a write tool is a dry run when the client asks for one (the
// dryrun.MetaKey _meta key), when opts.DryRun is set, when the tool's
// options set DryRun, or when it is made with a dry-run context
// (dryrun.FromContext), as in a Guard (see [Options].DryRun). A dry run of
// a tool whose options declare DryRunAware runs the handler with a dry-run
// context (dryrun.FromContext); any other gets a simulated result
// (dryrun.Result, described by the tool's Describe option or
// dryrun.Summary) and its handler does not run. Reads and other calls pass
// through unchanged. Unlike a Guard, DryRun does not know
// the tool's output schema, so its simulated result is always a success,
// which a client may check against that schema and refuse: a tool with an
// output schema (every typed tool) is best declared DryRunAware, with a
// handler that answers dry runs in its own shape.
//
// DryRun returns an error for a nil policy, an opts.ArgsKey shorter than 16
// bytes, an opts.RequestIDHeader that is not a header name, per-tool
// options of tools p does not know, per-tool DryRun of a tool p classes
// Read or of a name that is a write tool's only under case folding (unless
// that tool's own options set it), or a limit of opts.Limiter that caps
// nothing or is below a rule's fixed cost (as [New] refuses them).
func DryRun(p *policy.Policy, opts *Options) (Middleware, error) {
	g, err := stepGuard(p, opts)
	if err != nil {
		return nil, err
	}
	g.opts.Tools = withoutCost(g.opts.Tools) // a dry run spends nothing
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var s stepRun
			defer s.end(ctx, req)
			c, topts, d := g.begin(ctx, req)
			var res *mcp.CallToolResult
			var err error
			switch {
			case d != nil:
				refundAdmissions(ctx, req) // refused before it ran
				res, err = g.stepDeny(ctx, req, c, d)
			case !c.dryRun:
				res, err = s.handOn(ctx, req, c, next)
			default:
				res, err = g.answerDryRun(ctx, req, c, topts, next, &s)
			}
			s.done = true
			return res, err
		}
	}, nil
}

// sealed returns a function that passes a handler's answer on with its
// RequestState sealed for the next round (see mrtr.go): Confirm and Limit
// seal every answer that asks for input, and open every call that carries
// a sealed state, so that in a chain each opens its own. A state that
// cannot be sealed refuses ctx's call of req, c, as stepDeny does.
func (g *Guard) sealed(ctx context.Context, req *mcp.CallToolRequest, c *call) func(*mcp.CallToolResult, error) (*mcp.CallToolResult, error) {
	return func(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
		if err == nil {
			if d := g.sealRetry(c, res); d != nil {
				return g.stepDeny(ctx, req, c, d)
			}
		}
		return res, err
	}
}

// answerDryRun answers c, a dry run, as step 9 does: the handler runs with a
// dry-run context if it is DryRunAware, else a simulated result stands for
// it. Every step that treats a call as a dry run (spends nothing on it, asks
// no confirmation) answers it so, whatever runs inside the step.
func (g *Guard) answerDryRun(ctx context.Context, req *mcp.CallToolRequest, c *call, topts ToolOptions, next mcp.ToolHandler, s *stepRun) (*mcp.CallToolResult, error) {
	if !topts.DryRunAware {
		return dryrun.Result(c.name, g.describe(c, topts)), nil
	}
	withoutConfirmation(req, c)
	return s.handOn(awareContext(ctx, req), req, c, next)
}

// answeredKey is the context key of the call whose dry run a step
// answered by passing it on to a DryRunAware handler (an answered).
type answeredKey struct{}

// answered is a call whose dry run a step answered: its request, and the
// call of the Audit middleware around the step (nil without one).
type answered struct {
	req *mcp.CallToolRequest
	ac  *call
}

// awareContext returns ctx marked as a dry run ([dryrun.NewContext]) for
// the DryRunAware handler of req's call, and as that call's: a [WriteAhead]
// inside passes req on (see dryRunAnswered).
func awareContext(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	return context.WithValue(dryrun.NewContext(ctx), answeredKey{}, answered{req, auditCall(ctx, req)})
}

// dryRunAnswered reports whether a step outside answered the dry run of
// ctx's call of req by passing req on with a dry-run context (see
// awareContext), within the same Audit middleware (as refundAdmissions
// tells a call's Limit steps). The dry-run context of another call does
// not count: an aware handler that passes a dry run of another write on
// to that write's chain (a dispatcher), or its own request on to another
// guarded chain with an Audit of its own (a router), has not answered it.
func dryRunAnswered(ctx context.Context, req *mcp.CallToolRequest) bool {
	a, _ := ctx.Value(answeredKey{}).(answered)
	return a.req == req && a.ac == auditCall(ctx, req) && dryrun.FromContext(ctx)
}

// stepGuard returns the guard that runs a stand-alone step: the caller
// comes from the context ([Authenticate] outside), the settings from opts.
func stepGuard(p *policy.Policy, opts *Options) (*Guard, error) {
	return newGuard(p, AuthenticatorFunc(identityOnly), opts)
}

// identityOnly authenticates a call by the identity already in its context.
func identityOnly(ctx context.Context, _ mcp.Request) (*Identity, error) {
	if id := FromContext(ctx); id != nil {
		return id, nil
	}
	return nil, ErrUnauthenticated
}

// beginRound is begin for Confirm and Limit, which also open the sealed
// state of a multi round-trip's next round (see mrtr.go).
func (g *Guard) beginRound(ctx context.Context, req *mcp.CallToolRequest) (*call, ToolOptions, *DenialError) {
	c, topts, d := g.begin(ctx, req)
	if d == nil {
		d = g.openRetry(ctx, req, c)
	}
	return c, topts, d
}

// begin starts a stand-alone step's call: the caller from the context, the
// tool's rule from the policy (refusing what the policy refuses), whether
// the call is a dry run (told to the Audit middleware before a refusal of
// its arguments) and its cost. A refusal comes with the call state
// to render it with.
func (g *Guard) begin(ctx context.Context, req *mcp.CallToolRequest) (*call, ToolOptions, *DenialError) {
	c := newCall(g.now(), &g.ids)
	// c.req: a refusal of the step's is marked as one of req (see
	// handlerError), which a Recover or Audit outside passes on as it is.
	c.hashKey, c.req = keyOf(&g.opts.ArgsKey), req
	c.requestID = requestID(req, g.opts.RequestIDHeader)
	if id := correlationFrom(ctx); id != "" {
		c.corr = id // the Audit middleware's record is this call's
	}
	if ac := auditCall(ctx, req); ac != nil && ac.requestID != "" {
		c.requestID = ac.requestID // and so is its request id
	}
	if req == nil || req.Params == nil {
		return c, ToolOptions{}, Deny(CodeInvalidArguments, "missing call parameters")
	}
	c.name, c.raw = req.Params.Name, req.Params.Arguments
	id, _ := g.authn.Authenticate(ctx, req)
	if noIdentity(id) {
		return c, ToolOptions{}, Deny(CodeUnauthenticated, "authentication required")
	}
	c.id = id
	pol := g.pol.Load() // a step's policy is the one it was made with
	d := pol.Authorize(id.Principal, c.name)
	if d.Code == policy.NotFound {
		return c, ToolOptions{}, notFound(c.name)
	}
	c.rule = d.Rule
	// From here the caller may know the tool. A step does not know its
	// output schema: with SchemaSafeErrors every tool's refusals leave
	// StructuredContent out.
	c.schemaOut = g.opts.SchemaSafeErrors
	ac := auditCall(ctx, req)
	if ac != nil {
		ac.rule = c.rule
	}
	if d.Code != policy.Allowed {
		return c, ToolOptions{}, policyDenial(d, c.name)
	}
	topts := g.toolOptions(pol, c)
	c.dryRun = g.isDryRun(ctx, c, req, &topts)
	if ac != nil {
		ac.dryRun = c.dryRun
	}
	if len(c.rule.ArgLimits) > 0 {
		if d := pol.CheckArgs(id.Principal, c.rule, policy.MapArgs(c.argsMap())); !d.Allowed() {
			return c, ToolOptions{}, Deny(CodeForbidden, d.Reason)
		}
	}
	return c, topts, g.plan(c, &topts)
}

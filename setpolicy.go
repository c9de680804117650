package mcpguard

import (
	"errors"
	"fmt"
	"runtime"
	"weak"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SetPolicy makes p the policy that decides the guard's calls and
// listings from now on, in place of the one given to [New] or set by an
// earlier SetPolicy: a server can change its rules (revoke a dangerous
// tool in an incident) without a restart, keeping its sessions. It
// returns an error, and keeps the policy it has, for a nil p and for a p
// that [New] or [Guard.Install] would refuse with the guard's Options and
// the tools it serves: per-tool Options of a tool p has no rule for, or
// DryRun for a tool p classes Read (or for a name that is a write tool's
// only under case folding, see [Options].Tools); a limit of
// Options.Limiter that p makes cap nothing, or whose Max is below the
// fixed Cost of a rule of p it caps (see [Options].Limiter); a tool that
// needs confirmation while Options.Confirmer is nil; or a tool the guard
// serves (one of the installed server's, as the guard last listed them, or
// one [Guard.Wrap] guards) that p has no rule for, whose ReadOnlyHint
// contradicts its class in p, or that binds an argument to an HTTP header
// while p hides it from some caller. A tool the guard already refuses
// (added later with a bad schema, say) does not make p refused; one
// refused only for what the policy said is served once p admits it. So
// to revoke a tool, keep its rule and give it a role no caller has (it is
// then hidden, as an unknown tool is), or take a write off the write
// allowlist.
//
// A call is decided wholly by the policy of the moment it came: its
// authorization, argument limits, confirmation, cost and limits, dry run,
// write-ahead record, output check and the class its audit records carry;
// a call under way finishes as it was allowed, but for one that waits on
// its client within the call, where a human may take minutes: when the
// client answers, a call whose policy was replaced meanwhile is decided
// once more (its authorization, a tool hidden then looking unknown, and
// its argument limits) by the policy of that moment. A call whose
// confirmation an older client (before 2026-07-28) is asked for within the
// call and that this refuses is not run. So too a read's or a write's
// handler under [Guard.Install] or [Guard.AddTool] that asks the client
// (its own elicitation, sampling or roots request, or, under Install, the
// input requests of its multi round-trip, which the go-sdk asks an older
// client below the guard before it runs the handler's next round within
// the same call): the answer is not delivered (the request returns an
// error, and the next round does not run), and the call ends with the
// refusal, recorded with its code, whatever the handler returns then (a
// write's refusal says that the write may have been made: its handler
// ran). A guarded call that such a handler makes in-process with its
// context (of a tool of this guard or of another's) waits with it: a
// question the inner call's handler asks has both calls decided once more,
// each by its guard's policy of the moment. A handler given to
// [Guard.Wrap] and added with the server's own AddTool is not seen asking:
// its own questions are answered as they come, though the next round of
// its multi round-trip is a call of its own, through the guard. A call
// that comes later is decided by p,
// a confirmation or a multi round-trip state issued before included: a
// call of a tool p forbids is refused whatever state it carries. The
// limiter's counts and spend are kept. A tools/list, and the resources
// that tools name as their UI (resources/list, resources/read and the
// rest, see [Guard.Install]), are filtered by the policy of the moment of
// the request. The guard tells no session that its tools changed (no
// notifications/tools/list_changed is sent for SetPolicy): a client sees
// the new listing at its next tools/list, and a call it makes is decided
// by p whatever its list shows. The stand-alone steps ([Authorize],
// [Confirm], [Limit], [DryRun], [WriteAhead]) keep the policy they were
// made with. Nothing is recorded in Options.Audit: a caller that wants
// the change in its trail records it there itself. A server that makes a
// Guard per session or request (see [Guard.Install]) sets the policy of
// each, or makes the new ones with it.
func (g *Guard) SetPolicy(p *policy.Policy) error {
	if p == nil {
		return errors.New("mcpguard: SetPolicy with a nil policy")
	}
	if err := checkToolOptions(p, g.opts.Tools); err != nil {
		return err
	}
	if err := checkLimitTools(p, g.opts.Limiter, g.opts.Tools); err != nil {
		return err
	}
	if err := checkConfirmer(p, g.opts.Confirmer); err != nil {
		return err
	}
	// No tool is checked, by Wrap or Install, and none installed from a
	// listing, while the tools are checked against p and p replaces the
	// policy.
	g.polMu.Lock()
	defer g.polMu.Unlock()
	g.reg.mu.RLock()
	defer g.reg.mu.RUnlock()
	old := g.pol.Load()
	serves := func(e *toolEntry) error {
		if e.check(old) != nil {
			return nil // refused already
		}
		if err := e.check(p); err != nil {
			return fmt.Errorf("%w (SetPolicy: the guard serves the tool; its policy is kept)", err)
		}
		return nil
	}
	for k := range g.wrapped {
		if e := k.Value(); e != nil {
			if err := serves(e); err != nil {
				return err
			}
		}
	}
	for _, e := range g.reg.byName {
		if err := serves(e); err != nil {
			return err
		}
	}
	g.pol.Store(p)
	return nil
}

// compileWrapped compiles t for [Guard.Wrap], and keeps its entry, weakly,
// for SetPolicy to check against a new policy.
func (g *Guard) compileWrapped(t *mcp.Tool) (*toolEntry, error) {
	g.polMu.Lock()
	defer g.polMu.Unlock()
	e, err := g.compile(t)
	if err != nil {
		return nil, err
	}
	e.raw = true
	k := weak.Make(e)
	if g.wrapped == nil {
		g.wrapped = map[weak.Pointer[toolEntry]]struct{}{}
	}
	g.wrapped[k] = struct{}{}
	runtime.AddCleanup(e, g.forgetWrapped, k)
	return e, nil
}

func (g *Guard) forgetWrapped(k weak.Pointer[toolEntry]) {
	g.polMu.Lock()
	defer g.polMu.Unlock()
	delete(g.wrapped, k)
}

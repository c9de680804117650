package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
// call of a tool p forbids is refused whatever state it carries, and a
// multi round-trip state issued while the tool's rule was of another class
// (a read p makes a write) does not open (INVALID_ARGUMENTS: the call is
// made again, and charged as what it is now). The
// limiter's counts and spend are kept. A tools/list, and the resources
// that tools name as their UI (resources/list, resources/read and the
// rest, see [Guard.Install]), are filtered by the policy of the moment of
// the request. Under [Guard.Install], each session whose caller may see
// other tools under p than it was last shown (by its last tools/list, or
// its last tools/list_changed notification) is sent one
// notifications/tools/list_changed, as the go-sdk sends its own (to a
// session on a protocol before 2026-07-28 on the session, to one on
// 2026-07-28 only on its subscriptions/listen for it, stamped with that
// listen's subscriptionId), unless the server's capabilities turn them
// off; no other session is, so a tool the caller cannot see before or
// after tells it nothing. A session that never listed the tools nor
// listens for their changes is sent none (see [Guard.Install]). So too,
// each session whose caller may see other resources under p than it was
// last shown (p hides from the caller, or shows it, a tool's UI resource
// that the policy of that showing did not, and its listing differs; shown
// by its last resources/list, its listen for their changes, or its last
// resources/list_changed notification) is sent one
// notifications/resources/list_changed, unless the capabilities turn
// those off (a server without resources lists none, under any policy; one
// none of whose tools names a UI resource lists nothing for p). They are
// sent from a goroutine of the guard's shortly after SetPolicy returns,
// one at a time: the tools notices first, in the order the server holds
// its sessions, then the resources ones, in that order too (a slow
// listing of the resources holds up no tools notice); through the
// server's sending middleware added before Install (one added after it
// does not see them); policies set in quick succession are told together,
// each session checked against the policy of the moment. Each has 10 seconds
// to be sent; one not sent within a second (its client stopped reading,
// and its transport blocks the write) is left to finish while the next is
// sent, and its session is sent no other of its kind until it has. A
// session is taken as told once its notice is sent or fails (logged at
// WARN): one whose notice was lost is told of the next change only. Until
// its client lists again, a call it makes is decided by p whatever its
// list shows. A write taken off the allowlist stays
// listed (its calls refused WRITE_NOT_ALLOWED), as its caller may still
// see it: no session is told of it; a policy that hides it (its roles)
// is. Without Install ([Guard.Wrap], [Guard.AddTool]) none is sent: the
// guard filters no listing there, so none changes with the policy. The
// stand-alone steps ([Authorize], [Confirm], [Limit], [DryRun],
// [WriteAhead]) keep the policy they were made with. Nothing is recorded
// in Options.Audit: a caller that wants the change in its trail records it
// there itself. A server that makes a Guard per session or request (see
// [Guard.Install]) sets the policy of each, or makes the new ones with it;
// so do replicas: SetPolicy changes this Guard's policy only, and another
// process serves the old one until its own SetPolicy (a tool revoked in an
// incident is revoked everywhere once every replica has set the policy).
func (g *Guard) SetPolicy(p *policy.Policy) error {
	if err := g.unmade(); err != nil {
		return err
	}
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
	old, err := g.setPolicy(p)
	if err != nil {
		return err
	}
	if p != old && !slices.Equal(p.WriteAllowlist(), old.WriteAllowlist()) {
		// A reload that allows writes without a trail for them: as New.
		// Logged with no lock held: a handler that blocks holds up no
		// Wrap, AddTool or listing.
		warnNoTrail(g.log, p, &g.opts)
	}
	return nil
}

// setPolicy checks the guard's tools against p and sets it, for
// SetPolicy; it returns the policy p replaced.
func (g *Guard) setPolicy(p *policy.Policy) (*policy.Policy, error) {
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
				return nil, err
			}
		}
	}
	for _, e := range g.reg.byName {
		if err := serves(e); err != nil {
			return nil, err
		}
	}
	g.pol.Store(p)
	if p != old {
		g.tellPolicy()
	}
	return old, nil
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

// A toolsView is what a session was last shown of the tools (notify.go):
// the server's tools as the guard listed them, and the policy that
// filtered them, against which a change of either is told.
type toolsView struct {
	tools []*mcp.Tool
	pol   *policy.Policy
}

// A toolsNotifier tells the sessions of an installed guard's server that
// their tools, or their resources, changed when SetPolicy changed what
// their callers may see.
type toolsNotifier struct {
	// mu is held for reading while a listing loads the policy it filters
	// by and records it in the session's view (showTools), and for
	// writing while the views are checked against the policy: a view is
	// never recorded with a policy older than one the check saw.
	mu     sync.RWMutex
	target atomic.Pointer[notifyTarget] // set by Install

	lmu     sync.Mutex
	listens map[*mcp.ServerSession]listenIDs // a session's listens
	again   bool                             // a check is due
	running bool                             // the goroutine that checks is running
	// sending holds the sessions a notice is being sent to, of the tools
	// or of the resources: one whose transport blocks the write (its client
	// stopped reading) is sent no other of that kind until that one returns.
	sending map[notice]bool
}

// listenIDs are the subscriptionIds of a session's listens for
// tools/list_changed and for resources/list_changed (nil: none), as the
// go-sdk acknowledged them.
type listenIDs struct {
	tools, resources any
}

// noticeWait is how long the guard waits for one session's notice to be
// sent before it sends the next (see notifyPolicy).
var noticeWait = time.Second

// A notifyTarget is what an installed guard sends its notifications
// through.
type notifyTarget struct {
	server *mcp.Server
	// send is the server's sending handler below the guard's middleware,
	// through which the go-sdk's own notifications go on once the guard
	// passed them.
	send mcp.MethodHandler
	// quiet says that the server's capabilities turn tools/list_changed
	// off: the go-sdk sends none, nor does the guard.
	quiet bool
}

// showTools records that ss was shown tools, read at seq, filtered by the
// policy of the moment, which it returns with what ss was shown before
// (see [sessionViews.show]).
func (g *Guard) showTools(ss *mcp.ServerSession, seq uint64, tools []*mcp.Tool) (pol *policy.Policy, before toolsView, had, ok bool) {
	g.lc.mu.RLock()
	defer g.lc.mu.RUnlock()
	pol = g.pol.Load()
	before, had, ok = g.views.show(ss, seq, toolsView{tools: tools, pol: pol})
	return pol, before, had, ok
}

// watchListens returns next, which learns from the acknowledgement of a
// subscriptions/listen that the go-sdk agreed to send tools/list_changed or
// resources/list_changed on the id it tells that listen's notifications by.
// A listen's view is recorded before it is acknowledged: a SetPolicy's
// check in between passes its session by (it cannot be told yet), so once
// the acknowledgement is sent, a view made under an older policy has the
// sessions checked again.
func (g *Guard) watchListens(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "notifications/subscriptions/acknowledged" {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		p, _ := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
		id := any(nil)
		if ss != nil && p != nil && (p.Notifications.ToolsListChanged || p.Notifications.ResourcesListChanged) {
			id = p.Meta[mcp.MetaKeySubscriptionID]
		}
		if id == nil {
			return next(ctx, method, req)
		}
		g.lc.lmu.Lock()
		if g.lc.listens == nil {
			g.lc.listens = map[*mcp.ServerSession]listenIDs{}
		}
		l := g.lc.listens[ss]
		if p.Notifications.ToolsListChanged {
			l.tools = id
		}
		if p.Notifications.ResourcesListChanged {
			l.resources = id
		}
		g.lc.listens[ss] = l
		g.lc.lmu.Unlock()
		res, err := next(ctx, method, req)
		pol := g.pol.Load()
		_, tv, _, tok := shownView(&g.views, ss)
		_, rv, _, rok := shownView(&g.res.sessionViews, ss)
		if (p.Notifications.ToolsListChanged && tok && tv.pol != pol) ||
			(p.Notifications.ResourcesListChanged && rok && rv.pol != pol) {
			g.tellPolicy()
		}
		return res, err
	}
}

// endingListen returns next, the server's handling of a
// subscriptions/listen, which forgets the listens of its session once next
// returned: go-sdk v1.8.0 then ends the session's subscriptions, whichever
// of its listens asked for them.
func (g *Guard) endingListen(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "subscriptions/listen" {
			return next(ctx, method, req) // a listing made for the listen
		}
		defer func() {
			if ss, _ := req.GetSession().(*mcp.ServerSession); ss != nil {
				g.lc.lmu.Lock()
				delete(g.lc.listens, ss)
				g.lc.lmu.Unlock()
			}
		}()
		return next(ctx, method, req)
	}
}

// tellPolicy has the sessions of the installed server checked against
// the policy, from a goroutine of the guard's: one at a time, a check
// asked for while one runs made after it (once however many were asked).
func (g *Guard) tellPolicy() {
	t := g.lc.target.Load()
	if t == nil || (t.quiet && g.res.quiet.Load()) {
		return
	}
	g.lc.lmu.Lock()
	defer g.lc.lmu.Unlock()
	g.lc.again = true
	if g.lc.running {
		return
	}
	g.lc.running = true
	go func() {
		defer func() {
			if r := recover(); r != nil {
				g.log.Error("mcpguard: telling sessions of a new policy panicked", "panic", r)
				g.lc.lmu.Lock()
				g.lc.running = false
				pending := g.lc.again // a policy set during the round
				g.lc.lmu.Unlock()
				if pending {
					g.tellPolicy()
				}
			}
		}()
		for {
			g.lc.lmu.Lock()
			if !g.lc.again {
				g.lc.running = false
				g.lc.lmu.Unlock()
				return
			}
			g.lc.again = false
			g.lc.lmu.Unlock()
			g.notifyPolicy(t)
		}
	}()
}

// notifyPolicy sends tools/list_changed to each session of t's server
// whose caller may see other tools under the policy now than what the
// session was last shown (see toolsView), and resources/list_changed to
// each whose caller may see other resources (see dueResourceNotices), as
// go-sdk v1.8.0 sends its own:
// to a session on a protocol before 2026-07-28 (or with none) on the
// session, and to one on 2026-07-28 only on its listen for that
// notification, stamped with that listen's subscriptionId. A session
// checked is shown its tools (its resources) under the policy now.
// The tools notices are sent first, then the resources ones are worked
// out (which may list the server's resources, however slowly) and sent;
// each in the order the server holds its sessions, each notice from a
// goroutine of its own with 10 seconds to be sent: one not sent within
// noticeWait (its transport blocks the write, which a context does not
// end) is left to finish on its own while the next is sent, and its
// session is sent no other notice of its kind until it does (the one under
// way has its client list the tools, or the resources, anew). A notice
// whose sending panics is logged, and the rest are sent.
func (g *Guard) notifyPolicy(t *notifyTarget) {
	g.sendNotices(t, g.dueNotices(t))
	g.sendNotices(t, g.dueResourceNotices(t))
}

// sendNotices sends the notices of tell, one at a time (see notifyPolicy).
func (g *Guard) sendNotices(t *notifyTarget, tell []notice) {
	if len(tell) == 0 {
		return
	}
	wait := time.NewTimer(noticeWait)
	defer wait.Stop()
	for _, d := range tell {
		k := notice{ss: d.ss, resources: d.resources}
		g.lc.lmu.Lock()
		busy := g.lc.sending[k]
		if !busy {
			if g.lc.sending == nil {
				g.lc.sending = map[notice]bool{}
			}
			g.lc.sending[k] = true
		}
		g.lc.lmu.Unlock()
		if busy {
			continue
		}
		done := make(chan struct{})
		go g.sendNotice(t, d, done)
		wait.Reset(noticeWait)
		select {
		case <-done:
		case <-wait.C:
		}
	}
}

// A notice is a tools/list_changed notification due to a session, or a
// resources/list_changed one.
type notice struct {
	ss        *mcp.ServerSession
	id        any // its listen's subscriptionId; nil: on the session
	resources bool
}

// dueNotices returns the tools/list_changed notices due to the sessions of
// t's server for the policy now (none if its capabilities turn them off),
// and makes it the policy of what each was shown. Whether the
// guard refuses a tool under a policy is worked out once per tool and
// policy, not per session: the sessions' views mostly hold the same tools
// (the server's own, as its listings return them), and lc.mu, which every
// tools/list waits for, is held meanwhile.
func (g *Guard) dueNotices(t *notifyTarget) []notice {
	if t.quiet {
		return nil
	}
	type use struct {
		p *policy.Policy
		t *mcp.Tool
	}
	refused := map[use]bool{}
	shows := func(p *policy.Policy, pr *policy.Principal, t *mcp.Tool) bool {
		if !p.Visible(pr, t.Name) {
			return false
		}
		r, ok := refused[use{p, t}]
		if !ok {
			r = g.refused(p, t)
			refused[use{p, t}] = r
		}
		return !r
	}
	var tell []notice
	g.lc.mu.Lock()
	defer g.lc.mu.Unlock()
	pol := g.pol.Load()
	for ss := range t.server.Sessions() {
		id, can := g.tellable(ss, false)
		if !can {
			continue
		}
		pr, v, seq, ok := shownView(&g.views, ss)
		if !ok || v.pol == pol {
			continue
		}
		changed := slices.ContainsFunc(v.tools, func(t *mcp.Tool) bool {
			return shows(v.pol, &pr, t) != shows(pol, &pr, t)
		})
		reshowView(&g.views, ss, seq, toolsView{tools: v.tools, pol: pol})
		if changed {
			tell = append(tell, notice{ss: ss, id: id})
		}
	}
	return tell
}

// sendNotice sends d through t, and closes done.
func (g *Guard) sendNotice(t *notifyTarget, d notice, done chan<- struct{}) {
	defer close(done)
	defer func() {
		g.lc.lmu.Lock()
		delete(g.lc.sending, notice{ss: d.ss, resources: d.resources})
		g.lc.lmu.Unlock()
	}()
	method := "notifications/tools/list_changed"
	if d.resources {
		method = "notifications/resources/list_changed"
	}
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("mcpguard: a list_changed notification for a new policy panicked", "method", method, "panic", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var meta mcp.Meta
	if d.id != nil {
		meta = mcp.Meta{mcp.MetaKeySubscriptionID: d.id}
	}
	var req mcp.Request = &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: d.ss, Params: &mcp.ToolListChangedParams{Meta: meta}}
	if d.resources {
		req = &mcp.ServerRequest[*mcp.ResourceListChangedParams]{Session: d.ss, Params: &mcp.ResourceListChangedParams{Meta: meta}}
	}
	if _, err := t.send(ctx, method, req); err != nil {
		g.log.Warn("mcpguard: a list_changed notification for a new policy not sent", "method", method, "err", err)
	}
}

// legacySession reports whether go-sdk v1.8.0 sends ss its list_changed
// notifications on the session, unasked: its protocol is before
// 2026-07-28, or it has none.
func legacySession(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion < "2026-07-28"
}

// tellable reports whether a notice of its tools (of its resources) can
// be sent to ss, as go-sdk v1.8.0 sends its own: on the session before
// protocol 2026-07-28 (or with none), on 2026-07-28 only on a listen for
// it; and returns that listen's subscriptionId (nil: on the session).
func (g *Guard) tellable(ss *mcp.ServerSession, resources bool) (id any, ok bool) {
	g.lc.lmu.Lock()
	l := g.lc.listens[ss]
	g.lc.lmu.Unlock()
	id = l.tools
	if resources {
		id = l.resources
	}
	return id, id != nil || legacySession(ss)
}

// shownView returns the caller of ss's view in vs (of the tools or of the
// resources), what it was shown and when; ok is false when it has no view,
// or was shown nothing.
func shownView[V any](vs *sessionViews[V], ss *mcp.ServerSession) (pr policy.Principal, v V, seq uint64, ok bool) {
	vs.mu.RLock()
	defer vs.mu.RUnlock()
	sv := vs.m[weak.Make(ss)]
	if sv == nil || sv.off || !sv.shown {
		return pr, v, 0, false
	}
	return sv.pr, sv.val, sv.seq, true
}

// reshowView makes v what ss was shown in vs, unless its view changed
// since it was read at seq (see shownView), and reports whether it did.
func reshowView[V any](vs *sessionViews[V], ss *mcp.ServerSession, seq uint64, v V) bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if sv := vs.m[weak.Make(ss)]; sv != nil && !sv.off && sv.shown && sv.seq == seq {
		sv.val = v
		return true
	}
	return false
}

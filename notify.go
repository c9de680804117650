package mcpguard

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/list_changed notification tells its session that the server's
// tools changed. Passed on to every session, it would tell a caller that a
// tool it may not see was added, replaced or removed, which nothing
// happening does not. So the guard passes it on to a session only when a
// tool that changed since the session last listed the tools (or was last
// notified) is one its caller may see, before or after the change.

// sending marks the registry stale at a tools/list_changed notification,
// and passes the notification on only to sessions whose caller may see a
// change (see toolsChanged).
func (g *Guard) sending(next, below mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/tools/list_changed" {
			g.reg.invalidate()
			if !g.toolsChanged(ctx, req, below) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// listen serves subscriptions/listen as its authenticated caller (as
// asCaller does; the go-sdk calls the SubscribeHandler for the resources it
// names). A listen for tools/list_changed gives its session a view: the
// server's tools now, against which a change is told.
func (g *Guard) listen(ctx context.Context, req *mcp.SubscriptionsListenRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id, err := g.authenticateList(ctx, req, "subscriptions/listen")
	if err != nil {
		return nil, err
	}
	if p := req.Params; p != nil && p.Notifications != nil && p.Notifications.ToolsListChanged && req.Session != nil {
		seq := g.views.seen(req.Session, id.Principal)
		if tools, err := listAll(ctx, next, req.Session); err == nil {
			g.views.shown(req.Session, seq, tools)
		}
	}
	return next(NewContext(ctx, id), "subscriptions/listen", req)
}

// A view is what the guard last told a session of the server's tools.
type view struct {
	pr   policy.Principal // the session's last authenticated caller
	base []*mcp.Tool      // all the server's tools when last listed or notified; nil: none yet
	seq  uint64           // when base was read
	off  bool             // the session's last caller was not authenticated: no view
}

// views holds a view per session that listed the tools or listens for
// their changes. Sessions are keyed weakly: a session's view goes when the
// session is collected.
type views struct {
	used atomic.Bool // a view was made (the guard is installed)
	mu   sync.RWMutex
	m    map[weak.Pointer[mcp.ServerSession]]*view
	seq  uint64
}

// seen records that pr listed the tools of ss, or listens for their
// changes, and returns the sequence number a listing read from now on
// carries (see shown).
func (vs *views) seen(ss *mcp.ServerSession, pr *policy.Principal) uint64 {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.seq++
	if ss == nil {
		return vs.seq
	}
	if vs.m == nil {
		vs.m = map[weak.Pointer[mcp.ServerSession]]*view{}
	}
	k := weak.Make(ss)
	v := vs.m[k]
	if v == nil {
		v = &view{}
		vs.m[k] = v
		runtime.AddCleanup(ss, vs.forget, k)
		vs.used.Store(true)
	}
	if v.off {
		*v = view{}
	}
	v.pr = policy.Principal{Subject: pr.Subject, Roles: slices.Clone(pr.Roles)}
	return vs.seq
}

// touch makes pr, who made an authenticated call in ss, the caller of ss's
// view, if it has one: a session whose roles shrank is told no more than
// its new roles may see.
func (vs *views) touch(ss *mcp.ServerSession, pr *policy.Principal) {
	if ss == nil || !vs.used.Load() {
		return
	}
	k := weak.Make(ss)
	vs.mu.RLock()
	v := vs.m[k]
	same := v == nil || v.off || (v.pr.Subject == pr.Subject && slices.Equal(v.pr.Roles, pr.Roles))
	vs.mu.RUnlock()
	if same {
		return
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.m[k]; v != nil && !v.off {
		v.pr = policy.Principal{Subject: pr.Subject, Roles: slices.Clone(pr.Roles)}
	}
}

// drop turns the view of ss off: the guard could not authenticate its
// caller. Until it lists the tools again, it is told of no change. (The
// view stays, so that a session is handed one cleanup only.)
func (vs *views) drop(ss *mcp.ServerSession) {
	if ss == nil || !vs.used.Load() {
		return
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.m[weak.Make(ss)]; v != nil {
		*v = view{off: true}
	}
}

func (vs *views) forget(k weak.Pointer[mcp.ServerSession]) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	delete(vs.m, k)
}

// principal returns the caller of ss's view and a sequence number for a
// listing read from now on; ok is false when ss has no view: it never
// listed the tools nor listens for their changes.
func (vs *views) principal(ss *mcp.ServerSession) (pr policy.Principal, seq uint64, ok bool) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.m[weak.Make(ss)]
	if v == nil || v.off {
		return policy.Principal{}, 0, false
	}
	vs.seq++
	return v.pr, vs.seq, true
}

// shown makes tools, read at seq, the base of ss's view unless a later
// read made it already, and returns the base before (nil if there was
// none).
func (vs *views) shown(ss *mcp.ServerSession, seq uint64, tools []*mcp.Tool) (before []*mcp.Tool, ok bool) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.m[weak.Make(ss)]
	if v == nil || v.off {
		return nil, false
	}
	before = v.base
	if seq > v.seq {
		v.base, v.seq = tools, seq
		if v.base == nil {
			v.base = []*mcp.Tool{}
		}
	}
	return before, true
}

// shows reports whether pr may see t: the policy shows it to pr and the
// guard does not refuse it.
func (g *Guard) shows(pr *policy.Principal, t *mcp.Tool) bool {
	return g.pol.Visible(pr, t.Name) && !g.refused(t)
}

// visibleTools returns the tools of tools that pr may see.
func (g *Guard) visibleTools(pr *policy.Principal, tools []*mcp.Tool) []*mcp.Tool {
	out := []*mcp.Tool{}
	for _, t := range tools {
		if g.shows(pr, t) {
			out = append(out, t)
		}
	}
	return out
}

// changedFor reports whether a tool that pr may see, before or after, was
// added, replaced or removed between the listings before and now.
func (g *Guard) changedFor(pr *policy.Principal, before, now []*mcp.Tool) bool {
	old := make(map[string]*mcp.Tool, len(before))
	for _, t := range before {
		old[t.Name] = t
	}
	for _, t := range now {
		o, had := old[t.Name]
		delete(old, t.Name)
		if had && (o == t || sameTool(o, t)) {
			continue
		}
		if g.shows(pr, t) || (had && g.shows(pr, o)) {
			return true
		}
	}
	for _, o := range old {
		if g.shows(pr, o) {
			return true
		}
	}
	return false
}

// toolsChanged reports whether a tools/list_changed notification for the
// session of req is to be passed on (below answers the listing it makes):
// whether a tool its caller may see changed since the session last listed
// the tools or was notified. A session that never listed them (nor listens
// for their changes) has none to refresh, and a listing that fails tells
// nothing: neither is notified.
func (g *Guard) toolsChanged(ctx context.Context, req mcp.Request, below mcp.MethodHandler) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil || below == nil {
		return false
	}
	pr, seq, ok := g.views.principal(ss)
	if !ok {
		return false
	}
	tools, err := listAll(ctx, below, ss)
	if err != nil {
		g.log.Error("mcpguard: tools/list_changed not passed on: listing the tools failed", "err", err)
		return false
	}
	before, ok := g.views.shown(ss, seq, tools)
	return ok && (before == nil || g.changedFor(&pr, before, tools))
}

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

// A resources/updated notification names a resource, and a
// resources/list_changed one tells that the server's resources changed.
// Passed on to every session, they would tell a caller of a UI resource it
// may not see (resources.go), which the guard does not: it passes the
// first on only to a session whose caller may see its resource, and the
// second only to one whose caller may see a change, as notify.go does for
// tools/list_changed.

// sendingResources passes notifications/resources/updated on only to a
// session whose caller may see the resource (see updateFor), and
// notifications/resources/list_changed only to one whose caller may see a
// change (see resourcesChanged). below answers the listings they make.
func (g *Guard) sendingResources(next, below mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "notifications/resources/updated":
			if !g.updateFor(ctx, req, below) {
				return nil, nil
			}
		case "notifications/resources/list_changed":
			if !g.resourcesChanged(ctx, req, below) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// updateFor reports whether a resources/updated notification is to be
// passed on: its resource is, and means (see uriKey), no tool's UI
// resource, or the session's last authenticated caller may see it. A
// session whose caller the guard does not know (its last request was
// refused as UNAUTHENTICATED) is told of no UI resource.
func (g *Guard) updateFor(ctx context.Context, req mcp.Request, below mcp.MethodHandler) bool {
	p, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if p == nil || ss == nil || below == nil {
		return false
	}
	f, err := g.fanLinks(ctx, below, ss)
	if err != nil {
		g.log.Error("mcpguard: resources/updated not passed on: listing the tools failed", "err", err)
		return false
	}
	if !namedUI(f.links, p.URI) {
		return true
	}
	pr, ok := g.res.caller(ss)
	return ok && !g.sight(&pr, f.links).hides(p.URI)
}

// resourcesChanged reports whether a resources/list_changed notification
// is to be passed on to the session of req: whether the resources its
// caller may see changed since it last listed them (or listened for their
// changes, or was notified). A session that did neither has none to
// refresh, and a listing that fails tells nothing: neither is notified.
func (g *Guard) resourcesChanged(ctx context.Context, req mcp.Request, below mcp.MethodHandler) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil || below == nil {
		return false
	}
	pr, seq, ok := g.res.principal(ss)
	if !ok {
		return false
	}
	f, err := g.fanLinks(ctx, below, ss)
	if err != nil {
		g.log.Error("mcpguard: resources/list_changed not passed on: listing the tools failed", "err", err)
		return false
	}
	now, err := g.fanDigest(ctx, f, g.sight(&pr, f.links), below, ss)
	if err != nil {
		g.log.Error("mcpguard: resources/list_changed not passed on: listing the resources failed", "err", err)
		return false
	}
	before, ok := g.res.shown(ss, seq, now)
	return ok && before != now
}

// resources is what the guard knows of each session that listed the
// server's resources, subscribed to one or listens for their changes: its
// caller and what it was shown. Sessions are keyed weakly, as views are.
type resources struct {
	// subscribe says whether the server takes subscriptions (it has a
	// SubscribeHandler), as its capabilities tell: 0 not known, 1 yes, 2 no.
	subscribe atomic.Int32
	used      atomic.Bool // a view was made
	mu        sync.RWMutex
	m         map[weak.Pointer[mcp.ServerSession]]*resView
	seq       uint64

	fanMu sync.Mutex
	fan   *fanout // the last notification's fan-out
}

// A resView is what the guard knows of a session's resources.
type resView struct {
	pr     policy.Principal // the session's last authenticated caller
	off    bool             // its last caller was not authenticated
	listed bool             // it was shown the resources (a listing, or a listen for their changes)
	digest [32]byte         // of the resources it was last shown
	seq    uint64           // when digest was read
}

// learn records from the result of initialize or server/discover whether
// the server takes subscriptions.
func (rs *resources) learn(res mcp.Result) {
	var caps *mcp.ServerCapabilities
	switch r := res.(type) {
	case *mcp.InitializeResult:
		if r != nil {
			caps = r.Capabilities
		}
	case *mcp.DiscoverResult:
		if r != nil {
			caps = r.Capabilities
		}
	}
	rs.learnCaps(caps)
}

func (rs *resources) learnCaps(caps *mcp.ServerCapabilities) {
	if caps == nil || caps.Resources == nil {
		return
	}
	if caps.Resources.Subscribe {
		rs.subscribe.Store(1)
	} else {
		rs.subscribe.Store(2)
	}
}

// subscribes reports whether the server may take a subscription: unless
// its capabilities said that it does not.
func (rs *resources) subscribes() bool { return rs.subscribe.Load() != 2 }

// seen records pr as the caller of ss and returns the sequence number a
// listing read from now on carries (see shown).
func (rs *resources) seen(ss *mcp.ServerSession, pr *policy.Principal) uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.seq++
	if ss == nil {
		return rs.seq
	}
	if rs.m == nil {
		rs.m = map[weak.Pointer[mcp.ServerSession]]*resView{}
	}
	k := weak.Make(ss)
	v := rs.m[k]
	if v == nil {
		v = &resView{}
		rs.m[k] = v
		runtime.AddCleanup(ss, rs.forget, k)
		rs.used.Store(true)
	}
	if v.off {
		*v = resView{}
	}
	v.pr = policy.Principal{Subject: pr.Subject, Roles: slices.Clone(pr.Roles)}
	return rs.seq
}

// touch makes pr, who made an authenticated request in ss, the caller of
// its view, if it has one.
func (rs *resources) touch(ss *mcp.ServerSession, pr *policy.Principal) {
	if ss == nil || !rs.used.Load() {
		return
	}
	k := weak.Make(ss)
	same := func(v *resView) bool {
		return v == nil || v.off || (v.pr.Subject == pr.Subject && slices.Equal(v.pr.Roles, pr.Roles))
	}
	rs.mu.RLock()
	unchanged := same(rs.m[k])
	rs.mu.RUnlock()
	if unchanged {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if v := rs.m[k]; !same(v) {
		v.pr = policy.Principal{Subject: pr.Subject, Roles: slices.Clone(pr.Roles)}
	}
}

// drop turns the view of ss off: the guard could not authenticate its
// caller. It is told of no UI resource and no change until it lists the
// resources, subscribes or listens again.
func (rs *resources) drop(ss *mcp.ServerSession) {
	if ss == nil || !rs.used.Load() {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if v := rs.m[weak.Make(ss)]; v != nil {
		*v = resView{off: true}
	}
}

func (rs *resources) forget(k weak.Pointer[mcp.ServerSession]) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.m, k)
}

// caller returns the last authenticated caller of ss; ok is false when the
// guard knows none.
func (rs *resources) caller(ss *mcp.ServerSession) (pr policy.Principal, ok bool) {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	v := rs.m[weak.Make(ss)]
	if v == nil || v.off {
		return policy.Principal{}, false
	}
	return v.pr, true
}

// principal returns the caller of ss's view and a sequence number for a
// listing read from now on; ok is false when ss was never shown the
// resources.
func (rs *resources) principal(ss *mcp.ServerSession) (pr policy.Principal, seq uint64, ok bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	v := rs.m[weak.Make(ss)]
	if v == nil || v.off || !v.listed {
		return policy.Principal{}, 0, false
	}
	rs.seq++
	return v.pr, rs.seq, true
}

// shown makes d, read at seq, the digest of what ss was shown unless a
// later read made it already, and returns the digest before; ok is false
// when ss has no view, or had none shown.
func (rs *resources) shown(ss *mcp.ServerSession, seq uint64, d [32]byte) (before [32]byte, ok bool) {
	if ss == nil {
		return before, false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	v := rs.m[weak.Make(ss)]
	if v == nil || v.off {
		return before, false
	}
	before, ok = v.digest, v.listed
	if seq > v.seq {
		v.digest, v.seq, v.listed = d, seq, true
	}
	return before, ok
}

package mcpguard

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A sessionViews holds, for each session the guard told of the server's
// tools (notify.go) or resources (resnotify.go), the session's last
// authenticated caller and what it was last shown, a V, against which a
// change is told. Sessions are keyed weakly: a session's view goes when
// the session is collected.
type sessionViews[V any] struct {
	used atomic.Bool // a view was made (the guard is installed and used)
	mu   sync.RWMutex
	m    map[weak.Pointer[mcp.ServerSession]]*sessionView[V]
	seq  uint64
}

// touchViews makes pr, who made an authenticated request in ss, the
// caller of its views, of the tools and of the resources (see
// [sessionViews.touch]).
func (g *Guard) touchViews(ss *mcp.ServerSession, pr *policy.Principal) {
	g.views.touch(ss, pr)
	g.res.touch(ss, pr)
}

// dropViews turns the views of ss off, of the tools and of the resources:
// the guard could not authenticate its caller (see [sessionViews.drop]).
func (g *Guard) dropViews(ss *mcp.ServerSession) {
	g.views.drop(ss)
	g.res.drop(ss)
}

// A sessionView is what the guard knows of one session.
type sessionView[V any] struct {
	pr    policy.Principal // the session's last authenticated caller
	off   bool             // its last caller was not authenticated: no view
	shown bool             // val was set
	val   V                // what it was last shown
	seq   uint64           // when val was read
}

// seen records that pr listed, in ss, what the views are of (or listens
// for their changes, or subscribed to one), and returns the sequence
// number a listing read from now on carries (see shown).
func (vs *sessionViews[V]) seen(ss *mcp.ServerSession, pr *policy.Principal) uint64 {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.seq++
	if ss == nil {
		return vs.seq
	}
	if vs.m == nil {
		vs.m = map[weak.Pointer[mcp.ServerSession]]*sessionView[V]{}
	}
	k := weak.Make(ss)
	v := vs.m[k]
	if v == nil {
		v = &sessionView[V]{}
		vs.m[k] = v
		runtime.AddCleanup(ss, vs.forget, k)
		vs.used.Store(true)
	}
	if v.off {
		*v = sessionView[V]{}
	}
	v.pr = policy.Principal{Subject: pr.Subject, Roles: slices.Clone(pr.Roles)}
	return vs.seq
}

// touch makes pr, who made an authenticated request in ss, the caller of
// its view, if it has one: a session whose roles shrank is told no more
// than its new roles may see.
func (vs *sessionViews[V]) touch(ss *mcp.ServerSession, pr *policy.Principal) {
	if ss == nil || !vs.used.Load() {
		return
	}
	k := weak.Make(ss)
	same := func(v *sessionView[V]) bool {
		return v == nil || v.off || (v.pr.Subject == pr.Subject && slices.Equal(v.pr.Roles, pr.Roles))
	}
	vs.mu.RLock()
	unchanged := same(vs.m[k])
	vs.mu.RUnlock()
	if unchanged {
		return
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.m[k]; !same(v) {
		v.pr = policy.Principal{Subject: pr.Subject, Roles: slices.Clone(pr.Roles)}
	}
}

// drop turns the view of ss off: the guard could not authenticate its
// caller. Until it lists again, it is told of no change. (The view stays,
// so that a session is handed one cleanup only.)
func (vs *sessionViews[V]) drop(ss *mcp.ServerSession) {
	if ss == nil || !vs.used.Load() {
		return
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.m[weak.Make(ss)]; v != nil {
		*v = sessionView[V]{off: true}
	}
}

func (vs *sessionViews[V]) forget(k weak.Pointer[mcp.ServerSession]) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	delete(vs.m, k)
}

// caller returns the last authenticated caller of ss; ok is false when the
// guard knows none.
func (vs *sessionViews[V]) caller(ss *mcp.ServerSession) (pr policy.Principal, ok bool) {
	vs.mu.RLock()
	defer vs.mu.RUnlock()
	v := vs.m[weak.Make(ss)]
	if v == nil || v.off {
		return policy.Principal{}, false
	}
	return v.pr, true
}

// principal returns the caller of ss's view, a sequence number for a
// listing read from now on, and whether it was shown anything yet; ok is
// false when ss has no view.
func (vs *sessionViews[V]) principal(ss *mcp.ServerSession) (pr policy.Principal, seq uint64, shown, ok bool) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.m[weak.Make(ss)]
	if v == nil || v.off {
		return policy.Principal{}, 0, false, false
	}
	vs.seq++
	return v.pr, vs.seq, v.shown, true
}

// show makes val, read at seq, what ss was shown unless a later read made
// it already, and returns what it was shown before (had: anything); ok is
// false when ss has no view.
func (vs *sessionViews[V]) show(ss *mcp.ServerSession, seq uint64, val V) (before V, had, ok bool) {
	if ss == nil {
		return before, false, false
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.m[weak.Make(ss)]
	if v == nil || v.off {
		return before, false, false
	}
	before, had = v.val, v.shown
	if seq > v.seq {
		v.val, v.seq, v.shown = val, seq, true
	}
	return before, had, true
}

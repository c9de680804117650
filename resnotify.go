package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resources/updated notification names a resource, and a
// resources/list_changed one tells that the server's resources changed.
// Passed on to every session, they would tell a caller of a UI resource it
// may not see (resources.go), which the guard does not: it passes the
// first on only to a session whose caller may see its resource, and the
// second only to one whose caller may see a change, as notify.go does for
// tools/list_changed. A new policy that changes the resources a caller may
// see is told with the second too (see dueResourceNotices).

// sendingResources passes notifications/resources/updated on only to a
// session whose caller may see the resource (see updateFor), and
// notifications/resources/list_changed only to one whose caller may see a
// change (see resourcesChanged). below answers the listings they make. A
// message a handler sends with the context of a request the guard asks
// about a hidden UI resource (see askingKey) is sent with absentSuffix
// taken out (and fails if it cannot be), or, for a request whose answer
// the caller is not given, is not sent (a request to the client fails).
func (g *Guard) sendingResources(next, below mcp.MethodHandler) mcp.MethodHandler {
	g.res.below = below // for SetPolicy's notices (see dueResourceNotices)
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch a, _ := ctx.Value(askingKey{}).(asking); a {
		case askQuiet:
			if strings.HasPrefix(method, "notifications/") {
				return nil, nil
			}
			return nil, errAskedQuiet
		case askAbsent:
			out, ok := withoutSuffix(req)
			if !ok {
				return nil, errAskedAbsent
			}
			req = out
		}
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
// changes, or was notified, by the server or for a new policy). A session
// that did neither has none to refresh, and a listing that fails tells
// nothing: neither is notified.
func (g *Guard) resourcesChanged(ctx context.Context, req mcp.Request, below mcp.MethodHandler) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil || below == nil {
		return false
	}
	pr, seq, shown, ok := g.res.principal(ss)
	if !ok || !shown {
		return false
	}
	pol := g.pol.Load()
	f, err := g.fanLinks(ctx, below, ss)
	if err != nil {
		g.log.Error("mcpguard: resources/list_changed not passed on: listing the tools failed", "err", err)
		return false
	}
	now, err := g.fanDigest(ctx, f, g.sightBy(pol, &pr, f.links), below, ss)
	if err != nil {
		g.log.Error("mcpguard: resources/list_changed not passed on: listing the resources failed", "err", err)
		return false
	}
	before, had, ok := g.res.show(ss, seq, resView{now, pol})
	g.shownUnder(pol)
	return ok && had && before.sum != now
}

// resources is what the guard knows of each session that listed the
// server's resources, subscribed to one or listens for their changes: its
// caller and what it was shown. Sessions are keyed weakly, as views are.
type resources struct {
	// subscribe says whether the server takes subscriptions (it has a
	// SubscribeHandler), as its capabilities tell: 0 not known, 1 yes, 2 no.
	subscribe atomic.Int32
	// what each session was last shown of the resources
	sessionViews[resView]

	// quiet says that the server's capabilities turn resources/list_changed
	// off: the go-sdk sends none, nor does the guard for a new policy.
	quiet atomic.Bool
	// below is the server's handling of what the guard receives, through
	// which it lists the tools and resources for a new policy. It is set
	// at Install, before the guard's notifyTarget, and read after it.
	below mcp.MethodHandler

	fanMu sync.Mutex
	fan   *fanout // the last notification's fan-out
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
	rs.quiet.Store(!caps.Resources.ListChanged)
	if caps.Resources.Subscribe {
		rs.subscribe.Store(1)
	} else {
		rs.subscribe.Store(2)
	}
}

// subscribes reports whether the server may take a subscription: unless
// its capabilities said that it does not.
func (rs *resources) subscribes() bool { return rs.subscribe.Load() != 2 }

// errAskedQuiet fails a request to the client made by a handler of a
// request whose answer its caller is not given (askQuiet).
var errAskedQuiet = errors.New("mcpguard: not sent: the request it is made for is not answered to its caller")

// errAskedAbsent fails a message whose params the guard cannot send
// without absentSuffix (askAbsent).
var errAskedAbsent = errors.New("mcpguard: not sent: it cannot be sent without the guard's suffix")

// A resView is what a session was last shown of the resources: the
// digest of its listing, and the policy its UI resources were told from
// the hidden ones by (see sightBy).
type resView struct {
	sum [32]byte
	pol *policy.Policy
}

// shownUnder has the sessions checked against the policy again when it is
// no longer pol, which a view was just recorded with: a SetPolicy's check
// may have read the session's view before the new one was recorded (and
// leaves it to the one recorded, see dueResourceNotices), while the policy
// it was filtered by was overtaken meanwhile.
func (g *Guard) shownUnder(pol *policy.Policy) {
	if g.pol.Load() != pol {
		g.tellPolicy()
	}
}

// dueResourceNotices returns the resources/list_changed notices due to the
// sessions of t's server for the policy now: to each that go-sdk v1.8.0
// would send its own to (see dueNotices) whose caller may see other UI
// resources under it than under the policy of what it was last shown (the
// policy hides or shows a tool's UI resource, as the server's tools are
// now), and whose listing then differs from what it was shown; it makes
// the policy now the policy of what each was shown. Unless the server's
// capabilities turn them off; a server without resources lists none under
// any policy, so none is due there. The notices are in the order the
// server holds its sessions. The tools that name a UI resource are the
// registry's (listed only when a tools/list_changed made it stale), so a
// server none of whose tools names one lists nothing; the resources are
// listed once, only when a caller's sight changed, and filtered once for
// the callers who see the same UI resources (see fanDigest). A session
// whose view a listing or a notification recorded meanwhile is told by
// that (see shownUnder), not here. A listing that fails tells no more
// sessions: those not checked are checked at the next policy.
func (g *Guard) dueResourceNotices(t *notifyTarget) (tell []notice) {
	below := g.res.below
	if !g.res.used.Load() || g.res.quiet.Load() || below == nil {
		return tell
	}
	pol := g.pol.Load()
	type due struct {
		notice
		pr  policy.Principal
		v   resView
		seq uint64
	}
	var check []due
	for ss := range t.server.Sessions() {
		id, can := g.tellable(ss, true)
		if !can {
			continue
		}
		pr, v, seq, ok := shownView(&g.res.sessionViews, ss)
		if ok && v.pol != pol {
			check = append(check, due{notice{ss: ss, id: id, resources: true}, pr, v, seq})
		}
	}
	if len(check) == 0 {
		return tell
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	links, ok := g.registryLinks()
	if !ok {
		var err error
		if links, err = g.uiLinks(ctx, below, check[0].ss); err != nil {
			g.log.Error("mcpguard: resources/list_changed for a new policy not sent: listing the tools failed", "err", err)
			return tell
		}
	}
	// A sight and its signature, per policy and caller: callers with the
	// same name and roles share them.
	type sightKey struct {
		p   *policy.Policy
		who string
	}
	type seen struct {
		sight *uiSight
		sig   string
	}
	sights := map[sightKey]seen{}
	sightOf := func(p *policy.Policy, pr *policy.Principal) seen {
		k := sightKey{p, fmt.Sprintf("%q", append([]string{pr.Subject}, pr.Roles...))}
		s, ok := sights[k]
		if !ok {
			s.sight = g.sightBy(p, pr, links)
			s.sig = s.sight.signature()
			sights[k] = s
		}
		return s
	}
	var f *fanout
	for _, d := range check {
		now := sightOf(pol, &d.pr)
		sight := now.sight
		if sightOf(d.v.pol, &d.pr).sig == now.sig {
			// The policy changes no UI resource this caller may see.
			reshowView(&g.res.sessionViews, d.ss, d.seq, resView{d.v.sum, pol})
			continue
		}
		if f == nil {
			f = &fanout{links: links, digests: map[string][32]byte{}}
		}
		sum, err := g.fanDigest(ctx, f, sight, below, d.ss)
		if err != nil {
			g.log.Error("mcpguard: resources/list_changed for a new policy not sent: listing the resources failed", "err", err)
			break
		}
		if reshowView(&g.res.sessionViews, d.ss, d.seq, resView{sum, pol}) && sum != d.v.sum {
			tell = append(tell, d.notice)
		}
	}
	return tell
}

// registryLinks returns the registry's entries of the server's tools that
// name a UI resource, as uiLinks would list them; ok is false when a
// tools/list_changed made the registry stale, and they are to be listed.
func (g *Guard) registryLinks() (links []*toolEntry, ok bool) {
	g.reg.mu.RLock()
	defer g.reg.mu.RUnlock()
	if g.reg.stale {
		return nil, false
	}
	for _, e := range g.reg.byName {
		if len(e.ui) > 0 {
			links = append(links, e)
		}
	}
	return links, true
}

// sightBy is [Guard.sight] under the policy p: what pr may see of the UI
// resources of links, a UI resource being pr's if one of the tools that
// name it is one pr may see under p.
func (g *Guard) sightBy(p *policy.Policy, pr *policy.Principal, links []*toolEntry) *uiSight {
	s := &uiSight{seen: map[string]bool{}, hidden: map[string]bool{}, keys: map[string]bool{}}
	for _, e := range links {
		if e.check(p) == nil && p.Visible(pr, e.tool.Name) {
			for _, u := range e.ui {
				s.seen[u] = true
			}
		}
	}
	for _, e := range links {
		for _, u := range e.ui {
			if !s.seen[u] && !s.hidden[u] {
				s.hidden[u] = true
				s.keys[uriKey(u)] = true
			}
		}
	}
	return s
}

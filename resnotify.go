package mcpguard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

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
// change (see resourcesChanged). below answers the listings they make. A
// message a handler sends with the context of a request the guard asks
// about a hidden UI resource (see askingKey) is sent with absentSuffix
// taken out (and fails if it cannot be), or, for a request whose answer
// the caller is not given, is not sent (a request to the client fails).
func (g *Guard) sendingResources(next, below mcp.MethodHandler) mcp.MethodHandler {
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
// changes, or was notified). A session that did neither has none to
// refresh, and a listing that fails tells nothing: neither is notified.
func (g *Guard) resourcesChanged(ctx context.Context, req mcp.Request, below mcp.MethodHandler) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil || below == nil {
		return false
	}
	pr, seq, shown, ok := g.res.principal(ss)
	if !ok || !shown {
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
	before, had, ok := g.res.show(ss, seq, now)
	return ok && had && before != now
}

// resources is what the guard knows of each session that listed the
// server's resources, subscribed to one or listens for their changes: its
// caller and what it was shown. Sessions are keyed weakly, as views are.
type resources struct {
	// subscribe says whether the server takes subscriptions (it has a
	// SubscribeHandler), as its capabilities tell: 0 not known, 1 yes, 2 no.
	subscribe atomic.Int32
	// the digest of the resources each session was last shown
	sessionViews[[32]byte]

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

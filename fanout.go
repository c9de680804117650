package mcpguard

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A fanout is what the guard read for one notification's fan-out: the
// go-sdk sends a notification to its sessions one after another under one
// context, whose Done channel is the fan-out's own and is closed when it
// ends. So that a notification to N sessions costs one listing of the
// server's tools (and resources), not N, the listings are kept for the
// fan-out while its Done channel is open and no tools/list_changed came
// (g.reg's generation is unchanged), and for at most fanoutTTL: should a
// notification ever come with a long-lived context, the listings are read
// again at least that often. A context without a Done channel shares
// nothing. The listings are let go when the fan-out ends (or another
// replaces it), not kept until the next notification. They are read
// through the first session's, as the go-sdk's tools and resources are the
// same for every session.
// Sessions whose callers may see the same UI resources share the digest
// of what they are shown.
type fanout struct {
	done    <-chan struct{}
	made    time.Time
	gen     uint64
	links   []*toolEntry
	all     []*mcp.Resource // nil until read
	digests map[string][32]byte
	stop    func() bool // stops letting go of it when its context ends
}

// fanLinks returns the fan-out of ctx, with the tools that name a UI
// resource (see uiLinks) read once for it.
func (g *Guard) fanLinks(ctx context.Context, below mcp.MethodHandler, ss *mcp.ServerSession) (*fanout, error) {
	done := ctx.Done()
	gen := g.reg.generation()
	rs := &g.res
	if done != nil {
		rs.fanMu.Lock()
		f := rs.fan
		if f != nil && !running(f.done) {
			rs.fan = nil // ended: keep its listings no longer
		}
		rs.fanMu.Unlock()
		if f != nil && f.done == done && f.gen == gen && running(done) && time.Since(f.made) < fanoutTTL {
			return f, nil
		}
	}
	links, err := g.uiLinks(ctx, below, ss)
	if err != nil {
		return nil, err
	}
	f := &fanout{done: done, made: time.Now(), gen: gen, links: links, digests: map[string][32]byte{}}
	if done != nil {
		rs.fanMu.Lock()
		old := rs.fan
		rs.fan = f
		// Let the listings go when the fan-out ends, and let go of the
		// fan-out it replaced (so a context that never ends holds one).
		f.stop = context.AfterFunc(ctx, func() {
			rs.fanMu.Lock()
			if rs.fan == f {
				rs.fan = nil
			}
			rs.fanMu.Unlock()
		})
		rs.fanMu.Unlock()
		if old != nil {
			old.stop()
		}
	}
	return f, nil
}

// fanDigest returns the digest of the resources the caller of sight may
// see, with the server's resources read once for f.
func (g *Guard) fanDigest(ctx context.Context, f *fanout, sight *uiSight, below mcp.MethodHandler, ss *mcp.ServerSession) ([32]byte, error) {
	sig := sight.signature()
	rs := &g.res
	rs.fanMu.Lock()
	d, ok := f.digests[sig]
	all := f.all
	rs.fanMu.Unlock()
	if ok {
		return d, nil
	}
	if all == nil {
		var err error
		if all, _, err = listResourcePages(ctx, below, ss); err != nil {
			return [32]byte{}, err
		}
		if all == nil {
			all = []*mcp.Resource{}
		}
	}
	d = digest(visibleResources(sight, all))
	rs.fanMu.Lock()
	f.all, f.digests[sig] = all, d
	rs.fanMu.Unlock()
	return d, nil
}

// fanoutTTL bounds how long a fan-out's listings are used.
const fanoutTTL = time.Second

// running reports whether done is not closed.
func running(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

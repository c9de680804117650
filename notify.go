package mcpguard

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"time"
	"unsafe"

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
// change (see toolsChanged). A request to the client that panics below it
// fails instead, as a malformed one: on a protocol before 2026-07-28,
// go-sdk v1.8.0 asks the client a handler's input requests itself, below
// the guard, each from a goroutine of its own, and panics encoding one that
// holds a nil pointer where a content block is (a sampling message's),
// which ended the process. A request to the client sent within a guarded
// call stops waiting when the call's caller cancels it, and its answer is
// withheld when a policy set meanwhile refuses the call (see askClient).
func (g *Guard) sending(next, below mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		if method == "notifications/tools/list_changed" {
			g.reg.invalidate()
			if !g.toolsChanged(ctx, req, below) {
				return nil, nil
			}
		}
		if !strings.HasPrefix(method, "notifications/") {
			return g.askBounded(ctx, method, req, next)
		}
		return g.notifyBounded(ctx, method, req, next)
	}
}

// askBounded sends a request to the client through askClient, and stops
// waiting for it when its context ends (as withCallers says), whether or
// not the go-sdk has returned: with MCPGODEBUG=blockingcancelnotify=1,
// go-sdk v1.8.0 writes the notifications/cancelled of a request whose
// context ended on the sender's goroutine before it returns, and a write
// to a client that stopped reading never ends (nor does the request's own
// write). The guard's question to confirm a call (its state's expiry),
// or a handler's past its deadline, would hold the call, its in-flight
// slot and Wait. A panic below is refused as a malformed request.
func (g *Guard) askBounded(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	// The request is sent with wctx, which ends it as the wait ends: with
	// ctx alone, askClient's own withCallers would not end it once the call
	// was answered (which the wait's end lets happen), and the client's
	// question would go on with no one waiting for it.
	wctx, stop := withCallers(ctx)
	defer stop()
	return waitBounded(wctx, g, method, func() (mcp.Result, error) { return askClient(wctx, method, req, next) })
}

// waitBounded runs send, a request to the client made with ctx, on a
// goroutine of its own and waits for it until ctx ends (what it answered
// as ctx ended is kept); a panic in it is the request's failure, logged
// (see [Guard.panicked]).
func waitBounded[T any](ctx context.Context, g *Guard, method string, send func() (T, error)) (T, error) {
	type answer struct {
		res T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			if r := recover(); r != nil {
				a = answer{err: g.panicked(ctx, method, r)}
			}
			done <- a
		}()
		a.res, a.err = send()
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		select {
		case a := <-done: // answered as ctx ended
			return a.res, a.err
		default:
			var zero T
			return zero, ctx.Err()
		}
	}
}

// notifyWait bounds how long the sender of a notification waits for its
// write to the client (see [Guard.notifyBounded]).
var notifyWait = 10 * time.Second

// errNotReading fails a notification its client did not take in time;
// errEarlierPending one sent while an earlier one to its stream (see
// notifyStream) is still being written past the wait.
var (
	errNotReading     = errors.New("mcpguard: the notification was not sent in time: its client is not reading")
	errEarlierPending = errors.New("mcpguard: the notification was not sent: an earlier one to its stream is still being written")
)

// notifyBounded sends a notification (a handler's progress or log
// message, the go-sdk's list_changed) through next, waiting at most
// notifyWait, or until ctx ends. The go-sdk writes it on the sender's
// goroutine, and a write to a client that stopped reading (its receive
// window full) never ends: a guarded call's handler would hold its call,
// its in-flight slot and Wait for as long as the client kept its
// connection. Past the wait the sender gets errNotReading while the write
// goes on by itself, and the later notifications to its stream fail at
// once until it ends (see notifyStream).
func (g *Guard) notifyBounded(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	if c, _ := ctx.Value(callKey{}).(*call); c != nil && ctx.Err() != nil {
		// A guarded call's that ended: not written (as over stdio, whose
		// write fails so): a write begun for each notification of a call
		// that ended, one after another while none is waited for, could
		// pile up on a stalled stream. Not the go-sdk's own broadcast
		// (list_changed, resources/updated), whose one ten-second context
		// serves every session in turn: one stalled client would use it up,
		// and no session after it would be told.
		return nil, ctx.Err()
	}
	var ss mcp.Session
	if req != nil {
		ss = streamOf(ctx, req.GetSession())
	}
	if ss != nil {
		g.stalledMu.Lock()
		n := g.stalled[ss]
		g.stalledMu.Unlock()
		if n > 0 {
			return nil, errEarlierPending
		}
	}
	type answer struct {
		res mcp.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			if r := recover(); r != nil {
				// On this goroutine a panic below would end the process.
				a = answer{nil, g.panicked(ctx, method, r)}
			}
			done <- a
		}()
		a.res, a.err = next(ctx, method, req)
	}()
	wait := time.NewTimer(notifyWait)
	select {
	case a := <-done:
		wait.Stop()
		return a.res, a.err
	case <-wait.C:
		g.log.Warn("mcpguard: a notification was not taken by its client in time; its sender goes on without it",
			"method", method, "wait", notifyWait)
		g.stalledUntil(ss, func() { <-done })
		return nil, errNotReading
	case <-ctx.Done():
	}
	select {
	case a := <-done: // sent as ctx ended
		wait.Stop()
		return a.res, a.err
	default:
	}
	// The sender leaves; its stream is marked only if the write is still
	// pending notifyWait after it began: one under way a moment when ctx
	// ended is no sign of a client that does not read.
	go func() {
		select {
		case <-done:
			wait.Stop()
		case <-wait.C:
			g.stalledUntil(ss, func() { <-done })
		}
	}()
	return nil, ctx.Err()
}

// stalledUntil marks the stream ss (nil: none) stalled until written, the
// wait for a notification's write to it, returns (see notifyBounded).
func (g *Guard) stalledUntil(ss mcp.Session, written func()) {
	if ss == nil {
		return
	}
	g.stalledMu.Lock()
	if g.stalled == nil {
		g.stalled = make(map[mcp.Session]int)
	}
	g.stalled[ss]++
	g.stalledMu.Unlock()
	go func() {
		written()
		g.stalledMu.Lock()
		if g.stalled[ss]--; g.stalled[ss] <= 0 {
			delete(g.stalled, ss)
		}
		g.stalledMu.Unlock()
	}()
}

// A notifyStream is the key of Guard.stalled for a notification a guarded
// call's handler sends with the call's context over stateful Streamable
// HTTP: go-sdk v1.8.0 writes it to the response stream of the call's POST
// (streamable.go:1847-1863), which its client reads apart from the
// session's other streams, each written under a lock of its own; so a
// client that stopped reading one call's stream, or the session's GET
// stream, stalls none of the others. Any other notification is keyed by
// its session: over stdio, in memory and the HTTP+SSE transport, every
// message of a session is written to one stream. (A server whose
// Streamable HTTP handler answers in JSON, JSONResponse, writes its
// calls' notifications to the GET stream: there a stalled GET stream
// holds each call's first notification the whole notifyWait.) It embeds
// its session, so that it keys g.stalled, a map by mcp.Session.
type notifyStream struct {
	mcp.Session
	// post is the header map of the POST that carried the outermost
	// guarded call: one stream per POST, which the calls of a JSON-RPC
	// batch (protocol 2025-03-26) share, as they share its header map
	// (go-sdk v1.8.0 gives each of its requests the POST's req.Header).
	// A pointer, so that the map outlives the key.
	post unsafe.Pointer
}

// streamOf returns the key of the stream that a notification to ss sent
// with ctx is written to, as far as the guard can tell (see notifyStream):
// ss, but for one sent with a guarded call's context over stateful
// Streamable HTTP (a session id, and the call's request came with HTTP
// headers, which the HTTP+SSE transport gives none).
func streamOf(ctx context.Context, ss mcp.Session) mcp.Session {
	if ss == nil || ss.ID() == "" {
		return ss
	}
	var req *mcp.CallToolRequest
	for c, _ := ctx.Value(callKey{}).(*call); c != nil; c = c.outer() {
		req = c.req // the call a handler's in-process call was made within
		if c.idCtx.Context == nil {
			break
		}
	}
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ss
	}
	return notifyStream{ss, reflect.ValueOf(req.Extra.Header).UnsafePointer()}
}

// askingClient is the sending middleware [Guard.AddTool] adds to a server: a
// request to the client (not a notification) is sent through askBounded, as
// under Install: a client that stopped reading holds neither the guard's
// question to confirm a call past its state's expiry nor a handler's past
// the write's cancellation (or its deadline), whether the request's own
// write or the notifications/cancelled go-sdk v1.8.0 then sends never ends.
func (g *Guard) askingClient(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		return g.askBounded(ctx, method, req, next)
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
			g.showTools(req.Session, seq, tools)
		}
	}
	return next(NewContext(ctx, id), "subscriptions/listen", req)
}

// shows reports whether pr may see t under the policy p: p shows it to
// pr and the guard does not refuse it under p.
func (g *Guard) shows(p *policy.Policy, pr *policy.Principal, t *mcp.Tool) bool {
	return p.Visible(pr, t.Name) && !g.refused(p, t)
}

// visibleTools returns the tools of tools that pr may see under the policy p.
func (g *Guard) visibleTools(p *policy.Policy, pr *policy.Principal, tools []*mcp.Tool) []*mcp.Tool {
	out := []*mcp.Tool{}
	for _, t := range tools {
		if g.shows(p, pr, t) {
			out = append(out, t)
		}
	}
	return out
}

// changedFor reports whether the tools pr may see of the listing before
// under the policy pb differ from those of the listing now under the
// policy pa: a tool one shows and the other does not, or that both show
// and that was replaced.
func (g *Guard) changedFor(pb, pa *policy.Policy, pr *policy.Principal, before, now []*mcp.Tool) bool {
	old := make(map[string]*mcp.Tool, len(before))
	for _, t := range before {
		old[t.Name] = t
	}
	for _, t := range now {
		o, had := old[t.Name]
		delete(old, t.Name)
		same := had && (o == t || sameTool(o, t))
		if same && pb == pa {
			continue
		}
		sa := g.shows(pa, pr, t)
		if !had {
			if sa {
				return true
			}
			continue
		}
		if sb := g.shows(pb, pr, o); sa != sb || (sa && !same) {
			return true
		}
	}
	for _, o := range old {
		if g.shows(pb, pr, o) {
			return true
		}
	}
	return false
}

// toolsChanged reports whether a tools/list_changed notification for the
// session of req is to be passed on (below answers the listing it makes):
// whether the tools its caller may see changed since the session last
// listed them or was notified (by the server, or for a new policy: see
// toolsView). A session that never listed them (nor listens
// for their changes) has none to refresh, and a listing that fails tells
// nothing: neither is notified.
func (g *Guard) toolsChanged(ctx context.Context, req mcp.Request, below mcp.MethodHandler) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil || below == nil {
		return false
	}
	pr, seq, _, ok := g.views.principal(ss)
	if !ok {
		return false
	}
	tools, err := listAll(ctx, below, ss)
	if err != nil {
		g.log.Error("mcpguard: tools/list_changed not passed on: listing the tools failed", "err", err)
		return false
	}
	pol, before, had, ok := g.showTools(ss, seq, tools)
	return ok && (!had || g.changedFor(before.pol, pol, &pr, before.tools, tools))
}

// elicitBounded asks ss's client p, as ss.Elicit does, and stops waiting
// when ctx ends, as askBounded does, whatever middleware the server has:
// the guard's question to confirm a call that Guard.Wrap guards on a
// server no guard is installed on passes through none of the guard's, and
// a client that stopped reading would hold it past its state's expiry
// (the request's own write to a stream does not end with ctx, nor does
// the notifications/cancelled go-sdk v1.8.0 writes on the sender's
// goroutine under MCPGODEBUG=blockingcancelnotify=1).
func (g *Guard) elicitBounded(ctx context.Context, ss *mcp.ServerSession, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return waitBounded(ctx, g, "elicitation/create", func() (*mcp.ElicitResult, error) { return ss.Elicit(ctx, p) })
}

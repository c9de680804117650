package mcpguard

import (
	"context"
	"runtime"
	"sync"
	"weak"

	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An openers records, for each session with an id that a guard saw opened
// over HTTP by a verified user or through mcpguard's gateway, who opened
// it: go-sdk v1.8.0 binds a Streamable HTTP session to the TokenInfo
// UserID of the request that opened it (its initialize), and the gateway
// binds each session to its subject; a session opened otherwise is bound
// to no one, whoever uses it later (see bound). Sessions are keyed weakly:
// a record goes when its session is collected. It is safe for concurrent
// use.
type openers struct {
	mu sync.RWMutex
	m  map[weak.Pointer[mcp.ServerSession]]opener
}

// An opener is who opened a session: the verified user (auth.TokenInfo
// UserID) of the request that opened it, and the gateway's subject
// header ([token.HeaderSubject]) on it; either may be empty.
type opener struct{ user, subject string }

// openersKey is the context key under which the guard's receiving
// middleware hands its openers to the pipeline of a call (see bound).
type openersKey struct{}

// opened records who opened req's session, from req, an initialize the
// go-sdk accepted: the first of its session, which it refuses once the
// session is initialized. Only the request that opened the session counts,
// as only that one binds it: an initialize sent on a session that some
// other request opened (it carries the session's Mcp-Session-Id) records
// nothing, nor does one on a session with no id (stateless, or a stream
// transport), or one by no verified user and not through the gateway.
func (o *openers) opened(req *mcp.ServerRequest[*mcp.InitializeParams]) {
	ss := req.Session
	if ss == nil || ss.ID() == "" || req.Extra == nil || req.Extra.Header == nil ||
		req.Extra.Header.Get("Mcp-Session-Id") != "" {
		return
	}
	var op opener
	if ti := req.Extra.TokenInfo; ti != nil {
		op.user = ti.UserID
	}
	op.subject = req.Extra.Header.Get(token.HeaderSubject)
	if op == (opener{}) {
		return
	}
	k := weak.Make(ss)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[weak.Pointer[mcp.ServerSession]]opener{}
	}
	if _, ok := o.m[k]; ok {
		return
	}
	o.m[k] = op
	runtime.AddCleanup(ss, o.forget, k)
}

func (o *openers) forget(k weak.Pointer[mcp.ServerSession]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, k)
}

// openerOf returns who opened ss, as recorded by the openers in ctx; ok is
// false when none is.
func openerOf(ctx context.Context, ss *mcp.ServerSession) (op opener, ok bool) {
	o, _ := ctx.Value(openersKey{}).(*openers)
	if o == nil {
		return opener{}, false
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	op, ok = o.m[weak.Make(ss)]
	return op, ok
}

// noteUnbound logs, once for the guard, req, a request whose caller it
// authenticated from a bearer token, when it came over HTTP on a session
// with an id and without a verified user (auth.TokenInfo): the go-sdk
// answers 403 to such a request on a session bound to a user, so its
// session is bound to no one, and a binding for the guard's tokens would
// have given the request the TokenInfo of its token. The handler is then
// behind no session binding, or one for another kind of token (as
// token.Table.BindSessions in front of a JWT verifier, which passes the
// JWTs on unverified), and anyone who learns a session's id can use it and
// end it. A request through mcpguard's gateway, which binds its sessions
// itself, is not warned of.
func (g *Guard) noteUnbound(req mcp.Request) {
	if g.unboundWarned.Load() {
		return
	}
	extra := extraOf(req)
	if extra == nil || extra.Header == nil || extra.TokenInfo != nil || extra.Header.Get(token.HeaderSubject) != "" {
		return
	}
	if ss, _ := req.GetSession().(*mcp.ServerSession); ss == nil || ss.ID() == "" {
		return
	}
	if _, ok := token.Bearer(extra.Header); !ok {
		return
	}
	if g.unboundWarned.CompareAndSwap(false, true) {
		g.log.Warn("mcpguard: a caller the guard authenticates by bearer token is using an MCP session over HTTP that is " +
			"bound to no one (the request carried no verified user): anyone who learns its id can use it and end it; wrap the " +
			"Streamable HTTP handler with token.BindSessions and the verifier of the guard's tokens (token.Table.BindSessions " +
			"for a static table, jwt.Verifier() for a *token.JWT); warned once")
	}
}

// unseenOpenings reports whether req, a call over HTTP on a session with
// an id, reached a pipeline that no installed guard hands the openers
// of its sessions (see bound): a handler Guard.Wrap or Guard.AddTool
// guards, or a stand-alone Confirm, on a server without Guard.Install.
// Such a pipeline cannot tell a bound session from an unbound one.
func unseenOpenings(ctx context.Context, req *mcp.CallToolRequest) bool {
	if req.Session == nil || req.Session.ID() == "" || req.Extra == nil || req.Extra.Header == nil {
		return false
	}
	o, _ := ctx.Value(openersKey{}).(*openers)
	return o == nil
}

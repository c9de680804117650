package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A named session is a real MCP session of the app's server whose id we
// choose: the stdio process's session, or the session a REST client names in
// X-Session-Id. The go-sdk gives stdio and in-memory sessions no id; with
// one, the guard keys the limiter on it and the audit trail records it, so
// the trail can be queried by session on every transport.

// sessionConn is a server connection with a session id that, when hdrs is
// set, hands the server each request's HTTP headers (as the Streamable HTTP
// transport does) so that the guard authenticates every request on its own.
type sessionConn struct {
	mcp.Connection
	id   string
	hdrs *sync.Map // request id -> http.Header, filled by clientConn
}

func (c *sessionConn) SessionID() string { return c.id }

func (c *sessionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && c.hdrs != nil && req.ID.IsValid() {
		if h, ok := c.hdrs.LoadAndDelete(req.ID.Raw()); ok {
			req.Extra = &mcp.RequestExtra{Header: h.(http.Header)}
		}
	}
	return m, err
}

// sessionTransport connects a server over t with session id id.
type sessionTransport struct {
	t    mcp.Transport
	id   string
	hdrs *sync.Map
}

func (t *sessionTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sessionConn{Connection: c, id: t.id, hdrs: t.hdrs}, nil
}

// headerKey carries a REST request's headers to clientConn.Write.
type headerKey struct{}

// clientConn is the client end of a REST session: it passes the headers of
// each call (from the call's context) to the server end, keyed by request id.
type clientConn struct {
	mcp.Connection
	hdrs *sync.Map
}

func (c *clientConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
		if h, ok := ctx.Value(headerKey{}).(http.Header); ok {
			c.hdrs.Store(req.ID.Raw(), h)
		}
	}
	return c.Connection.Write(ctx, m)
}

type clientTransport struct {
	t    mcp.Transport
	hdrs *sync.Map
}

func (t *clientTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &clientConn{Connection: c, hdrs: t.hdrs}, nil
}

// maxRESTSessions bounds the REST sessions kept open; the oldest is closed
// beyond it (its limiter budget survives: it is keyed by the session id).
const maxRESTSessions = 1024

// restSessions maps REST session names (X-Session-Id) to MCP sessions of
// the app's server, so that REST calls pass the same guard as MCP ones, one
// choke point. Safe for concurrent use.
type restSessions struct {
	server *mcp.Server
	authn  mcpguard.Authenticator // the guard's, to tell whose a session is
	client *mcp.Client

	mu       sync.Mutex
	sessions map[string]*restSession
	order    []string
}

type restSession struct {
	cs    *mcp.ClientSession
	ss    *mcp.ServerSession
	owner string // the first subject that used it; r.mu guards it
}

// errSessionOwned refuses a caller that names a REST session another
// caller opened: sessions carry budgets, and one caller must not spend, or
// use up, another's.
var errSessionOwned = errors.New("the REST session belongs to another caller")

func newRESTSessions(s *mcp.Server, authn mcpguard.Authenticator) *restSessions {
	return &restSessions{
		server:   s,
		authn:    authn,
		client:   mcp.NewClient(&mcp.Implementation{Name: "ticket-rest", Version: "v1.0.0"}, nil),
		sessions: map[string]*restSession{},
	}
}

// restSessionID is the MCP session id of REST session name: prefixed, so it
// never equals the id of a Streamable HTTP session.
func restSessionID(name string) string { return "rest-" + name }

// get returns REST session name for subject ("" for a caller without a
// valid identity), opening it if needed, or errSessionOwned when another
// subject used it first. A caller without an identity may use any session:
// the guard refuses its calls before they cost anything. The session is
// opened, and the oldest one beyond maxRESTSessions closed, outside r.mu:
// closing a session waits for its calls in flight, and a slow one must not
// stall the calls of every other session.
func (r *restSessions) get(ctx context.Context, name, subject string) (*mcp.ClientSession, error) {
	r.mu.Lock()
	s, ok := r.sessions[name]
	admitted := ok && s.admitLocked(subject)
	r.mu.Unlock()
	if ok {
		if !admitted {
			return nil, errSessionOwned
		}
		return s.cs, nil
	}
	hdrs := &sync.Map{}
	ct, st := mcp.NewInMemoryTransports()
	ctx = context.WithoutCancel(ctx)
	ss, err := r.server.Connect(ctx, &sessionTransport{t: st, id: restSessionID(name), hdrs: hdrs}, nil)
	if err != nil {
		return nil, err
	}
	cs, err := r.client.Connect(ctx, &clientTransport{t: ct, hdrs: hdrs}, nil)
	if err != nil {
		ss.Close()
		return nil, err
	}
	s = &restSession{cs: cs, ss: ss, owner: subject}

	var closing []*restSession
	r.mu.Lock()
	admitted = true
	if cur, ok := r.sessions[name]; ok {
		// Opened meanwhile by another call: use that one.
		closing = append(closing, s)
		s = cur
		admitted = s.admitLocked(subject)
	} else {
		for len(r.order) >= maxRESTSessions {
			old := r.order[0]
			r.order = r.order[1:]
			closing = append(closing, r.sessions[old])
			delete(r.sessions, old)
		}
		r.sessions[name] = s
		r.order = append(r.order, name)
	}
	r.mu.Unlock()
	for _, c := range closing {
		c.close()
	}
	if !admitted {
		return nil, errSessionOwned
	}
	return s.cs, nil
}

// admitLocked reports whether subject may use s, which it then owns if no
// one did; r.mu is held.
func (s *restSession) admitLocked(subject string) bool {
	switch {
	case subject == "" || s.owner == subject:
		return true
	case s.owner == "":
		s.owner = subject
		return true
	}
	return false
}

func (s *restSession) close() {
	s.cs.Close()
	s.ss.Close()
}

// call calls tool with args in REST session name, as the caller that h
// (the HTTP request's headers) authenticates. It returns errSessionOwned
// when another caller used the session first.
func (r *restSessions) call(ctx context.Context, h http.Header, name, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	subject := ""
	if id, err := r.authn.Authenticate(ctx, restRequest(h, tool)); err == nil && id != nil && id.Principal != nil {
		subject = id.Principal.Subject
	}
	cs, err := r.get(ctx, name, subject)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, headerKey{}, h.Clone())
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// Close closes every REST session.
func (r *restSessions) Close() {
	r.mu.Lock()
	open := r.sessions
	r.sessions, r.order = map[string]*restSession{}, nil
	r.mu.Unlock()
	for _, s := range open {
		s.close()
	}
}

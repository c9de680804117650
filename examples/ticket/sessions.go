package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A named session is a real MCP session of the app's server whose id we
// choose: the stdio process's session, or the session a REST client names
// in X-Session-Id (one per name and caller, restSessionID). The go-sdk
// gives stdio and in-memory sessions no id; with one, the guard keys the
// limiter on it and the audit trail records it, so the trail can be
// queried by session on every transport.

// sessionConn is a server connection with a session id that, when hdrs is
// set, hands the server each request's HTTP headers (as the Streamable HTTP
// transport does) so that the guard authenticates every request on its own,
// and the user the REST adapter verified them to be (as the go-sdk's
// auth.RequireBearerToken does): the session, which only the adapter
// reaches, is that user's, not one over HTTP bound to no one.
type sessionConn struct {
	mcp.Connection
	id   string
	hdrs *sync.Map // request id -> *mcp.RequestExtra, filled by clientConn
}

func (c *sessionConn) SessionID() string { return c.id }

func (c *sessionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && c.hdrs != nil && req.ID.IsValid() {
		if e, ok := c.hdrs.LoadAndDelete(req.ID.Raw()); ok {
			req.Extra = e.(*mcp.RequestExtra)
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

// userKey carries the user the REST adapter authenticated a request's
// headers as (an *auth.TokenInfo) to clientConn.Write.
type userKey struct{}

// clientConn is the client end of a REST session: it passes the headers of
// each call, and the user they were verified as (from the call's context),
// to the server end, keyed by request id.
type clientConn struct {
	mcp.Connection
	hdrs *sync.Map
}

func (c *clientConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
		if h, ok := ctx.Value(headerKey{}).(http.Header); ok {
			ti, _ := ctx.Value(userKey{}).(*auth.TokenInfo)
			c.hdrs.Store(req.ID.Raw(), &mcp.RequestExtra{Header: h, TokenInfo: ti})
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
// beyond it, once the calls that hold it are done. Its caller's next call
// with its name opens it again, under the same id: its limiter budget
// survives (the limiter keys it by that id).
const maxRESTSessions = 1024

// restSessions maps REST sessions to MCP sessions of the app's server, so
// that REST calls pass the same guard as MCP ones, one choke point. A REST
// session is the pair of the name a caller gives in X-Session-Id and the
// caller's authenticated subject: the same name sent by two callers names
// two sessions, with two budgets and two MCP session ids, so that no caller
// can spend, use up or write records under another's session, whatever it
// names and however many sessions it opens. Safe for concurrent use.
type restSessions struct {
	server *mcp.Server
	authn  mcpguard.Authenticator // the guard's, to tell whose a session is
	client *mcp.Client

	mu       sync.Mutex
	sessions map[restKey]*restSession
	order    []restKey // oldest first
}

// restKey names a REST session: X-Session-Id and the caller's subject (""
// for a caller without a valid identity, whose calls the guard refuses).
type restKey struct {
	name, subject string
}

type restSession struct {
	cs *mcp.ClientSession
	ss *mcp.ServerSession
	// calls counts the calls that hold the session (acquire): an evicted
	// session is closed once the last of them is done, so that a call
	// handed the session just before its eviction is still sent on it.
	// Added to only under restSessions.mu while the session is in
	// restSessions.sessions, so never once close waits.
	calls sync.WaitGroup
}

func newRESTSessions(s *mcp.Server, authn mcpguard.Authenticator) *restSessions {
	return &restSessions{
		server:   s,
		authn:    authn,
		client:   mcp.NewClient(&mcp.Implementation{Name: "ticket-rest", Version: "v1.0.0"}, nil),
		sessions: map[restKey]*restSession{},
	}
}

// restSessionID is the MCP session id of the REST session name of subject,
// "rest-<name>@<subject>", the subject path-escaped: what the limiter keys
// the session's budget on and what its audit records show as session_id.
// It is one-to-one: name (sessionName) has no '@', so the first '@' ends
// it, and path escaping is one-to-one and leaves the id printable. The
// prefix keeps it apart from the ids of Streamable HTTP sessions.
func restSessionID(name, subject string) string {
	return "rest-" + name + "@" + url.PathEscape(subject)
}

// get returns the client of REST session name of subject, opening it if
// needed, without holding it (see acquire): for a caller that talks to the
// session itself, as tests do.
func (r *restSessions) get(ctx context.Context, name, subject string) (*mcp.ClientSession, error) {
	s, err := r.acquire(ctx, name, subject)
	if err != nil {
		return nil, err
	}
	s.calls.Done()
	return s.cs, nil
}

// acquire returns REST session name of subject ("" for a caller without a
// valid identity), opening it if needed, and held for one call: the caller
// calls s.calls.Done when the call is over, and the session is not closed
// before. The session is opened, and the oldest one beyond
// maxRESTSessions closed, outside r.mu: closing a session waits for its
// calls, and a slow one must not stall the calls of every other session.
func (r *restSessions) acquire(ctx context.Context, name, subject string) (*restSession, error) {
	key := restKey{name, subject}
	r.mu.Lock()
	s, ok := r.sessions[key]
	if ok {
		s.calls.Add(1)
	}
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	hdrs := &sync.Map{}
	ct, st := mcp.NewInMemoryTransports()
	ctx = context.WithoutCancel(ctx)
	ss, err := r.server.Connect(ctx, &sessionTransport{t: st, id: restSessionID(name, subject), hdrs: hdrs}, nil)
	if err != nil {
		return nil, err
	}
	cs, err := r.client.Connect(ctx, &clientTransport{t: ct, hdrs: hdrs}, nil)
	if err != nil {
		ss.Close()
		return nil, err
	}
	s = &restSession{cs: cs, ss: ss}

	var closing []*restSession
	r.mu.Lock()
	if cur, ok := r.sessions[key]; ok {
		// Opened meanwhile by another call: use that one.
		closing = append(closing, s)
		s = cur
	} else {
		for len(r.order) >= maxRESTSessions {
			old := r.order[0]
			r.order = r.order[1:]
			closing = append(closing, r.sessions[old])
			delete(r.sessions, old)
		}
		r.sessions[key] = s
		r.order = append(r.order, key)
	}
	s.calls.Add(1)
	r.mu.Unlock()
	for _, c := range closing {
		c.close()
	}
	return s, nil
}

// close closes the session once no call holds it.
func (s *restSession) close() {
	s.calls.Wait()
	s.cs.Close()
	s.ss.Close()
}

// call calls tool with args in REST session name of the caller that h (the
// HTTP request's headers) authenticates. The request reaches the server
// with h and, for a caller h authenticates, that caller as its verified
// user (auth.TokenInfo), as a Streamable HTTP request does behind
// token.BindSessions; the guard authenticates it from h again.
func (r *restSessions) call(ctx context.Context, h http.Header, name, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	subject := ""
	var user *auth.TokenInfo
	if id, err := r.authn.Authenticate(ctx, restRequest(h, tool)); err == nil && id != nil && id.Principal != nil && id.Principal.Subject != "" {
		subject = id.Principal.Subject
		user = &auth.TokenInfo{UserID: subject, Scopes: slices.Clone(id.Principal.Roles)}
	}
	s, err := r.acquire(ctx, name, subject)
	if err != nil {
		return nil, err
	}
	defer s.calls.Done()
	ctx = context.WithValue(ctx, headerKey{}, h.Clone())
	if user != nil {
		ctx = context.WithValue(ctx, userKey{}, user)
	}
	return s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// Close closes every REST session, each once its calls are done.
func (r *restSessions) Close() {
	r.mu.Lock()
	open := r.sessions
	r.sessions, r.order = map[restKey]*restSession{}, nil
	r.mu.Unlock()
	for _, s := range open {
		s.close()
	}
}

// maxMCPSessionsPerSubject bounds the Streamable HTTP sessions at /mcp
// that one caller holds open (mcpSessions).
const maxMCPSessionsPerSubject = 128

// mcpSessions bounds the Streamable HTTP sessions at /mcp. The go-sdk
// keeps a session until its DELETE (no SessionTimeout is set, so that an
// idle client keeps its session), and anyone may open
// one, without a token too (the guard then refuses its calls), so without
// a bound a loop of initialize requests grows the server without end.
// Each caller, by the subject of its bearer token, holds at most
// maxMCPSessionsPerSubject sessions, the sessions opened without a valid
// token counting as one caller's (""): opening one more closes the
// caller's oldest. A caller never closes another's, and the total is
// bounded by the callers the tokens stand for (the static table's, or an
// identity provider's users with --jwt-jwks). Safe for concurrent use.
type mcpSessions struct {
	server *mcp.Server

	mu   sync.Mutex
	held map[string][]string // subject -> ids of the sessions it opened, oldest first
}

func newMCPSessions(s *mcp.Server) *mcpSessions {
	return &mcpSessions{server: s, held: map[string][]string{}}
}

// handler wraps h, the /mcp handler: a POST without Mcp-Session-Id that
// h answers with one has opened a session, counted for its caller.
func (m *mcpSessions) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opening := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
		h.ServeHTTP(w, r)
		if !opening {
			return
		}
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			// The caller is the user the session binding verified (it
			// runs first: see httpHandler); "" without a valid token.
			subject := ""
			if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
				subject = ti.UserID
			}
			m.opened(subject, id)
		}
	})
}

// opened counts session id for subject, forgets the sessions that have
// ended (DELETE, a failed initialize), and closes subject's oldest beyond
// maxMCPSessionsPerSubject.
func (m *mcpSessions) opened(subject, id string) {
	var closing []*mcp.ServerSession
	m.mu.Lock()
	// Listed under the lock: a list taken before another opener's
	// session was counted would forget it.
	live := map[string]*mcp.ServerSession{}
	for ss := range m.server.Sessions() {
		live[ss.ID()] = ss
	}
	m.held[subject] = append(m.held[subject], id)
	for sub, ids := range m.held {
		kept := ids[:0]
		for _, i := range ids {
			if live[i] != nil {
				kept = append(kept, i)
			}
		}
		for sub == subject && len(kept) > maxMCPSessionsPerSubject {
			closing = append(closing, live[kept[0]])
			kept = kept[1:]
		}
		if len(kept) == 0 {
			delete(m.held, sub)
		} else {
			m.held[sub] = slices.Clip(kept)
		}
	}
	m.mu.Unlock()
	for _, ss := range closing {
		ss.Close()
	}
}

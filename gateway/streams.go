package gateway

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/corrid"
	"github.com/mcpguard/mcpguard/internal/recheck"
	"github.com/mcpguard/mcpguard/policy"
)

// defaultMaxStreams is the cap of Options.MaxStreams left zero.
const defaultMaxStreams = 32

// defaultStreamRetry is the reconnection delay (the SSE retry field) of the
// event stream answering a GET past Options.MaxStreams ([Gateway.waitStream]).
const defaultStreamRetry = 5 * time.Second

// streamWaitPrefix begins the event id of the event stream answering a GET
// past Options.MaxStreams, followed by the refusal's correlation id and the
// Last-Event-ID the GET resumed from, if any ([Gateway.waitStream]).
const streamWaitPrefix = "mcpguard-wait-"

// resumedFrom returns v, a GET's Last-Event-ID, without the gateway's own
// part ([streamWaitPrefix] and a correlation id): the id of the downstream's
// event the client resumes from, "" for none.
func resumedFrom(v string) string {
	if strings.HasPrefix(v, streamWaitPrefix) && len(v) >= len(streamWaitPrefix)+corrid.Len {
		return v[len(streamWaitPrefix)+corrid.Len:]
	}
	return v
}

// streamCount counts the streams each principal holds open through the
// gateway (Options.MaxStreams): its GET streams and subscriptions/listen
// ones, keyed by subject. A principal's entry is dropped when its last
// stream ends, so the map holds no more entries than streams are open.
// It is safe for concurrent use.
type streamCount struct {
	max  int // places per principal; 0 or less: no cap, nothing counted
	mu   sync.Mutex
	open map[string]int
}

// acquire takes one of subject's places and reports whether one was left.
func (s *streamCount) acquire(subject string) bool {
	if s.max <= 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.open[subject]
	if n >= s.max {
		return false
	}
	if s.open == nil {
		s.open = make(map[string]int)
	}
	s.open[subject] = n + 1
	return true
}

// release gives back a place acquire took for subject.
func (s *streamCount) release(subject string) {
	if s.max <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.open[subject]; n > 1 {
		s.open[subject] = n - 1
	} else {
		delete(s.open, subject)
	}
}

// serveStream forwards r, a GET (p nil) or the subscriptions/listen
// request p allows, as [Gateway.passThrough] does, holding one of pr's
// stream places (Options.MaxStreams) until it returns, however it returns
// (a panic, such as [abortCut]'s, included); with none left, r is refused
// and never forwarded ([Gateway.refuseStream]). A GET resuming from the
// gateway's own event id ([Gateway.waitStream]) is sent with the id it
// stood for, or none. Either stream may stay open for hours: the listings
// it carries are filtered by the policy of the moment ([Gateway.SetPolicy]),
// not by the one the subscriptions/listen was decided by.
func (g *Gateway) serveStream(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, body []byte, p *plan) {
	var m *message
	if p != nil {
		m = p.m
	}
	ctx, end := context.WithCancelCause(r.Context())
	defer end(nil)
	if !g.ends.add(&end) {
		g.endedStream(w, r, pr, cid, m)
		return
	}
	defer g.ends.remove(&end)
	r = r.WithContext(ctx)
	if !g.streams.acquire(pr.Subject) {
		g.refuseStream(w, r, pr, cid, m)
		return
	}
	defer g.streams.release(pr.Subject)
	if id := r.Header.Get(hdrSession); p == nil && id != "" {
		g.sessions.markStreamed(id, pr.Subject)
	}
	if v := r.Header.Get("Last-Event-ID"); p == nil && strings.HasPrefix(v, streamWaitPrefix) {
		r = r.Clone(r.Context())
		if id := resumedFrom(v); id != "" {
			r.Header.Set("Last-Event-ID", id)
		} else {
			r.Header.Del("Last-Event-ID")
		}
	}
	if p != nil {
		g.logDecision(cid, pr, p, nil)
	} else {
		g.log.Info("allow", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", r.Method)
	}
	// The stream lives as long as its client holds it: its token is
	// authenticated again before each write, and the stream ends once the
	// token is refused (revoked, expired) or stands for another principal
	// (its roles changed): the client's request to resume it is decided
	// anew.
	w = &recheck.Writer{ResponseWriter: w, Err: errTokenRefused, Check: func() bool {
		if g.sameCaller(r, pr) {
			return true
		}
		g.log.Info("stream ended", "cid", cid, "subject", pr.Subject, "reason", tokenRefusedReason)
		end(errTokenRefused)
		return false
	}}
	g.passThrough(w, r, nil, pr, cid, body, m, nil)
}

// tokenRefusedReason says why a stream ended before its client left.
const tokenRefusedReason = "its bearer token is refused now, or stands for another principal"

// errTokenRefused is the cause of a stream's context ended because its
// token is refused now (see [Gateway.serveStream]).
var errTokenRefused = errors.New("gateway: the stream's bearer token is refused now")

// sameCaller reports whether r's token is accepted now, for the principal
// pr it was accepted for when r's stream opened (the same subject and
// roles).
func (g *Gateway) sameCaller(r *http.Request, pr *policy.Principal) bool {
	now, e := g.authenticate(r)
	if e != nil && e.contract == "UPSTREAM_UNAVAILABLE" {
		// The Authenticator could not judge the token now (its
		// authorization server did not answer): not a refusal, as a new
		// request is answered 502, to be sent again.
		return true
	}
	if e != nil || now.Subject != pr.Subject {
		return false
	}
	// The same set of roles, in any order, a role given twice counted
	// once: a count would take [a a] for [a b].
	for _, role := range now.Roles {
		if !slices.Contains(pr.Roles, role) {
			return false
		}
	}
	for _, role := range pr.Roles {
		if !slices.Contains(now.Roles, role) {
			return false
		}
	}
	return true
}

// refuseStream logs, records and answers the refusal of pr's stream r
// (m its subscriptions/listen request, nil for a GET) past
// Options.MaxStreams: with -32029, 429 and a Retry-After of 1 s, but for a
// GET that reconnects a stream, answered with [Gateway.waitStream]: one
// that resumes from an event (Last-Event-ID), or of a session (its
// Mcp-Session-Id bound to pr) whose GET was sent downstream before. A
// go-sdk client takes a 429 to its session's first GET for "no stream" and
// goes on without it, but fails its session on one to a GET that
// reconnects.
func (g *Gateway) refuseStream(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, m *message) {
	e := g.errStreamCap()
	method := r.Method
	if m != nil {
		method = m.method
	}
	g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", method,
		"outcome", e.contract, "code", e.code, "reason", e.message)
	g.audit(r.Context(), pr, cid, infoOf(r), "", "", nil, audit.PhaseOutcome, false, e.contract, e.message, 0, g.now())
	if m == nil {
		sid := r.Header.Get(hdrSession)
		if r.Header.Get("Last-Event-ID") != "" || sid != "" && g.sessions.streamed(sid, pr.Subject) {
			g.waitStream(w, r, cid, e.message)
			return
		}
	}
	g.writeError(w, e, m.idOrNil(), cid)
}

// errStreamCap refuses a stream past Options.MaxStreams.
func (g *Gateway) errStreamCap() *rpcError {
	return &rpcError{code: CodeLimitExceeded, status: http.StatusTooManyRequests, contract: "CONCURRENCY_LIMIT_EXCEEDED",
		message: "Too many requests: open stream limit exceeded (" + strconv.Itoa(g.streams.max) +
			" GET or subscriptions/listen streams per principal)", retryAfter: time.Second}
}

// waitStream answers r, a GET refused past Options.MaxStreams (reason),
// with an event stream that ends at once: a comment giving reason and cid,
// then an event of no data whose id is [streamWaitPrefix], cid and the
// Last-Event-ID r resumed from ([resumedFrom]), and whose retry field asks
// for a reconnection after g.streamRetry. A go-sdk client fails its
// session on any status but 2xx answering a GET that reconnects after its
// stream ended (429 and 405 alike); this answer it takes for a stream the
// server ended (Streamable HTTP since 2025-11-25 lets a server close a
// stream so, for its client to poll) and reconnects, the id new each time,
// so that the client counts each as progress and never gives up. The
// reconnection is a GET as any other, sent downstream with the id it
// resumed from ([Gateway.serveStream]) once a place is free.
func (g *Gateway) waitStream(w http.ResponseWriter, r *http.Request, cid, reason string) {
	id := streamWaitPrefix + cid + resumedFrom(r.Header.Get("Last-Event-ID"))
	if strings.ContainsAny(id, "\r\n\x00") {
		// A line break would end the field (an embedder may call
		// ServeHTTP with any header); without the id it resumed from,
		// the client's stream starts afresh.
		id = streamWaitPrefix + cid
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	b := make([]byte, 0, 64+len(reason)+len(cid)+len(id))
	b = append(b, ": "...)
	b = append(b, reason...)
	b = append(b, " (correlation id "...)
	b = append(b, cid...)
	b = append(b, ")\nid: "...)
	b = append(b, id...)
	b = append(b, "\nretry: "...)
	b = strconv.AppendInt(b, g.streamRetry.Milliseconds(), 10)
	b = append(b, "\n\n"...)
	g.writeOwn(w, b)
}

// errStreamsEnded is the cause of a stream's context ended by
// [Gateway.EndStreams].
var errStreamsEnded = errors.New("gateway: event streams ended (EndStreams)")

// streamEnds holds the cancel functions of the streams the gateway relays,
// for [Gateway.EndStreams]. It is safe for concurrent use.
type streamEnds struct {
	mu    sync.Mutex
	ended bool
	live  map[*context.CancelCauseFunc]struct{}
}

// add registers end and reports true, or reports false once EndStreams
// has run.
func (s *streamEnds) add(end *context.CancelCauseFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	if s.live == nil {
		s.live = make(map[*context.CancelCauseFunc]struct{})
	}
	s.live[end] = struct{}{}
	return true
}

func (s *streamEnds) remove(end *context.CancelCauseFunc) {
	s.mu.Lock()
	delete(s.live, end)
	s.mu.Unlock()
}

// EndStreams ends the event streams the gateway relays (GET streams and
// subscriptions/listen ones), now and from then on, as a server that closes
// a stream does: each answer ends where the downstream's stream was cut,
// cleanly (HTTP/1.1's last chunk) between two events, so that its client
// reconnects (a GET with its Last-Event-ID) rather than failing its
// session, and the downstream's request ends. One cut inside an event
// ends as a broken stream does (the connection reset): a clean end after
// a cut line would fail a go-sdk client's session; so does one whose
// write to its client lasts a second from then (a client that stopped
// reading), rather than when the write guard ends it (Options.Timeout).
// A GET that comes after is answered with an
// event stream that ends at once, asking for a reconnection in 5 s, and a
// subscriptions/listen is refused 503 with JSON-RPC error -32003; neither
// reaches the downstream. Calls and other requests are served as before.
//
// It is for a server's shutdown: an open stream keeps its connection
// active, so http.Server.Shutdown would wait for every client's stream (a
// go-sdk client holds one per session) until its context ran out, and then
// cut the calls under way with them. Register it with
// http.Server.RegisterOnShutdown, and Shutdown waits for the calls only.
// It is safe to call more than once and concurrently with ServeHTTP.
func (g *Gateway) EndStreams() {
	g.ends.mu.Lock()
	g.ends.ended = true
	live := g.ends.live
	g.ends.live = nil
	g.ends.mu.Unlock()
	for end := range live {
		(*end)(errStreamsEnded)
	}
}

// cutOnEnd has a write of out (r's stream's answer) that lasts
// endedWriteWait once EndStreams ended the stream ended then, as the write
// guard ends one that lasts Timeout: a client that stopped reading would
// hold its stream, and the server's Shutdown, that long. The answer ends
// as a broken stream does. The function it returns stops it; it is called
// before out is stopped.
func cutOnEnd(r *http.Request, out *writeGuard) (stop func() bool) {
	return context.AfterFunc(r.Context(), func() {
		if streamEnded(r) {
			out.cutAfter(min(out.timeout, endedWriteWait))
		}
	})
}

// endedWriteWait is how long a write of a stream that EndStreams ended
// may last ([cutOnEnd]): a client that reads is not cut.
const endedWriteWait = time.Second

// streamEnded reports whether r's stream was ended by EndStreams.
func streamEnded(r *http.Request) bool {
	return context.Cause(r.Context()) == errStreamsEnded
}

// streamsClosedReason says why a stream was refused or ended after
// EndStreams.
const streamsClosedReason = "the gateway is shutting down: event streams are closed"

// endedStream answers r, a stream asked for after EndStreams (m its
// subscriptions/listen request, nil for a GET), without forwarding it.
func (g *Gateway) endedStream(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, m *message) {
	method := r.Method
	if m != nil {
		method = m.method
	}
	g.log.Info("stream refused", "cid", cid, "subject", pr.Subject, "method", method, "reason", streamsClosedReason)
	if m == nil {
		g.waitStream(w, r, cid, streamsClosedReason)
		return
	}
	g.writeError(w, errStreamsClosed(), m.idOrNil(), cid)
}

// errStreamsClosed answers a subscriptions/listen asked for after
// EndStreams, or ended by it in a batch ([batchOut.run]): 503, -32003.
func errStreamsClosed() *rpcError {
	e := errUpstream(false)
	e.status = http.StatusServiceUnavailable
	e.message = "Upstream unavailable: " + streamsClosedReason
	e.unsent = true
	return e
}

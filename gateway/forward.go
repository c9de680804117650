package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/textproto"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/gaveup"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// Headers the gateway sets downstream. Any client header in this namespace
// (also spelled with underscores) is dropped first.
const (
	HeaderSubject   = token.HeaderSubject
	HeaderRole      = token.HeaderRole
	HeaderRequestID = token.HeaderRequestID
)

const hdrSession = "Mcp-Session-Id"

// headerValue is h.Get(k) for a key k already in canonical form
// (textproto.CanonicalMIMEHeaderKey), without canonicalizing it again:
// the keys of a header net/http parsed are canonical, and every k the
// gateway looks up is a constant spelled so. The same holds for h[k] in
// place of h.Values(k).
func headerValue(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// hopByHop are the RFC 9110 §7.6.1 (RFC 7230 §6.1) connection-specific
// headers, plus Proxy-Connection.
var hopByHop = [...]string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func isHopByHop(k string) bool {
	for _, h := range hopByHop {
		if k == h {
			return true
		}
	}
	return false
}

// isGatewayHeader reports whether k is in the x-mcp-gateway-* namespace,
// however spelled (some servers fold "_" into "-").
func isGatewayHeader(k string) bool {
	const p = "x-mcp-gateway-"
	if len(k) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := k[i]
		if c == '_' {
			c = '-'
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// connectionListed returns the header names listed in Connection.
func connectionListed(h http.Header) map[string]bool {
	var out map[string]bool
	for _, v := range h["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				if out == nil {
					out = map[string]bool{}
				}
				out[textproto.CanonicalMIMEHeaderKey(f)] = true
			}
		}
	}
	return out
}

// withTrimmedHeader returns r, or when a header value of r has leading or
// trailing spaces or tabs, a shallow copy of r with a header of its own
// whose values have none. RFC 9110 §5.5 excludes that whitespace from a
// field value; net/http's HTTP/1 server drops it, its HTTP/2 server does
// not. The gateway trims it once, before any check, and then checks the
// very values it forwards: the upstream writer sends them verbatim and
// refuses, rather than trims, a value it could not.
func withTrimmedHeader(r *http.Request) *http.Request {
	trim := false
	for _, vs := range r.Header {
		if slices.ContainsFunc(vs, hasOuterSpace) {
			trim = true
			break
		}
	}
	if !trim {
		return r
	}
	h := r.Header.Clone()
	for _, vs := range h {
		for i, v := range vs {
			vs[i] = strings.Trim(v, " \t")
		}
	}
	r2 := *r
	r2.Header = h
	return &r2
}

// hasOuterSpace reports whether v begins or ends with a space or a tab.
func hasOuterSpace(v string) bool {
	return v != "" && (v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t')
}

// outboundHeader builds the header of a downstream request from the client's.
// Expect is not passed on: the gateway has read the whole body, so a
// client's 100-continue is met, and a downstream (or a net/http Transport,
// which waits for the 100) would wait for a go-ahead about a body already
// sent. Nor is a header whose name has an underscore (nginx's default,
// underscores_in_headers off): servers that map "_" to "-" (CGI, WSGI)
// would read Content_Encoding, Mcp_Session_Id or X_Mcp_Gateway_Role as the
// header the gateway checked, or set, under its real name. The client's
// Accept-Encoding is replaced by identity: the gateway reads answers (with
// Pins or FilterToolsList) as they come, and without the header a
// downstream may choose any coding (RFC 9110 §12.5.3). Nor are Origin and
// Sec-Fetch-Site: the gateway judged them (see [Gateway.checkOrigin]), as it
// judged the Host it does not send, and a downstream that checks them (the
// MCP transport asks servers to; http.CrossOriginProtection, which the
// go-sdk recommends, reads both) would refuse every page the gateway let
// through, which comes from another origin than the downstream's own.
func outboundHeader(in http.Header, pr *policy.Principal, cid string) http.Header {
	listed := connectionListed(in)
	out := make(http.Header, len(in)+3)
	for k, v := range in {
		switch {
		case isHopByHop(k), listed[k], isGatewayHeader(k), strings.IndexByte(k, '_') >= 0,
			k == "Authorization", k == "Accept-Encoding", k == "Content-Length", k == "Host", k == "Expect",
			k == "Forwarded", k == "X-Forwarded-For", k == "X-Forwarded-Host", k == "X-Forwarded-Proto",
			k == "Origin", k == "Sec-Fetch-Site":
			continue
		}
		out[k] = v
	}
	// One array holds the four values; each slice is capped at its own, so
	// that an append to one (by a RoundTripper) cannot write another.
	vals := [...]string{"identity", pr.Subject, strings.Join(pr.Roles, ","), cid}
	set := vals[:]
	out["Accept-Encoding"] = set[0:1:1]
	out[HeaderSubject] = set[1:2:2]
	out[HeaderRole] = set[2:3:3]
	out[HeaderRequestID] = set[3:4:4]
	return out
}

// copyResponseHeader copies a downstream response header to the client,
// without hop-by-hop headers and Content-Length; keepType false (the body
// is the gateway's own: a batch's merged answer) also drops Content-Type
// and Content-Encoding.
func copyResponseHeader(dst, src http.Header, keepType bool) {
	listed := connectionListed(src)
	for k, v := range src {
		if isHopByHop(k) || listed[k] || k == "Content-Length" || (!keepType && (k == "Content-Type" || k == "Content-Encoding")) {
			continue
		}
		dst[k] = v
	}
}

// upstreamCall is one request to the downstream with the gateway's timeout:
// the clock runs until the headers arrive and, for bodies read through
// [upstreamCall.Read], again during every read.
//
// One timer serves the whole call: a read only notes when it started, and
// the timer, when it fires early, re-arms itself for what is left. Resetting
// a timer per read would wake another OS thread (the runtime's network
// poller) each time.
//
// A POST's call outlives its client (see [Gateway.roundTrip]), but not by
// more than the timeout: once a read finds the client gone, the call ends
// at the latest one timeout after the client was last seen there (at the
// end of a read, or when the headers arrived), so that an answer that
// never ends (events each within the timeout of the last) does not hold
// the call, its connection and its in-flight slot forever.
type upstreamCall struct {
	resp     *http.Response
	cancel   context.CancelCauseFunc    // errTimeout when the timer ends the call
	timer    atomic.Pointer[time.Timer] // set just after it starts
	timedOut atomic.Bool
	timeout  time.Duration
	origin   time.Time
	// waitSince is when the current wait on the downstream began, in
	// nanoseconds since origin plus one; 0 means no wait in progress.
	waitSince atomic.Int64
	closed    atomic.Bool
	// client is a POST's client request context; nil for other methods.
	client context.Context
	// seen is when the client was last seen there, as waitSince, and
	// gone that it was found gone; only the reading goroutine uses them.
	seen int64
	gone bool
	// cut ends the call once its client has gone.
	cut atomic.Pointer[time.Timer]
	// out bounds the writes of the answer to the client (the timer
	// checks it); its w is set before the first.
	out writeGuard
	// guard is the writeGuard that writes the answer when not out (a
	// batch member's: the batch's); see [upstreamCall.watchClient].
	guard *writeGuard
}

// writeGuard bounds the writes of an answer to its client: a write that
// has not completed within timeout (the client stopped reading, its
// receive window full) is ended by a write deadline in the past on the
// client's connection, so that it and every later write fail as when the
// client went away. net/http then ends the request's context (HTTP/1
// cancels it on a failed write, HTTP/2 resets the stream), and the call
// ends as for a client gone: a POST's answer is still read, within the
// timeout. Without the guard, a client that sent a call and never read
// its answer would hold the handler, the answer read so far, the call's
// in-flight slot and the downstream's connection for as long as it kept
// its connection open. Writes go in pieces of at most maxGuardedWrite
// bytes, so that a slow client that reads is not cut.
type writeGuard struct {
	w       http.ResponseWriter
	timeout time.Duration
	origin  time.Time
	// since is when the current write began, in nanoseconds since
	// origin plus one; 0 means no write in progress.
	since atomic.Int64
	// failed is when a write last failed (the guard ended it, or the
	// client went away), as since; 0 means none did.
	failed atomic.Int64
	// mu is held by a check while it ends a write, and guards done:
	// see [writeGuard.stop].
	mu   sync.Mutex
	done bool
}

// maxGuardedWrite is the most a writeGuard writes at once.
const maxGuardedWrite = 32 << 10

func (g *writeGuard) begin() { g.since.Store(int64(time.Since(g.origin)) + 1) }
func (g *writeGuard) end()   { g.since.Store(0) }

// write writes p to g.w, in pieces of at most maxGuardedWrite bytes.
func (g *writeGuard) write(p []byte) (n int, err error) {
	for len(p) > 0 {
		k := min(len(p), maxGuardedWrite)
		g.begin()
		k, err = g.w.Write(p[:k])
		g.end()
		n += k
		if err != nil {
			g.failed.Store(int64(time.Since(g.origin)) + 1)
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// flush flushes rc, g.w's controller.
func (g *writeGuard) flush(rc *http.ResponseController) {
	g.begin()
	rc.Flush()
	g.end()
}

// check, run by a timer, ends a write that has lasted the timeout (see
// [writeGuard]) and returns when to check again.
func (g *writeGuard) check() time.Duration {
	s := g.since.Load()
	if s == 0 {
		return g.timeout
	}
	if left := g.timeout - time.Duration(int64(time.Since(g.origin))+1-s); left > 0 {
		return left
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done && g.since.CompareAndSwap(s, 0) {
		// g.w was set before since: [writeGuard.begin].
		http.NewResponseController(g.w).SetWriteDeadline(aLongTimeAgo)
	}
	return g.timeout
}

// cutAfter has a write that lasts d ended, as check ends one that lasts
// the timeout, until g is stopped (for a stream EndStreams ended:
// [cutOnEnd]).
func (g *writeGuard) cutAfter(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.done {
			return
		}
		next := d
		if s := g.since.Load(); s != 0 {
			if next = d - time.Duration(int64(time.Since(g.origin))+1-s); next <= 0 && g.since.CompareAndSwap(s, 0) {
				http.NewResponseController(g.w).SetWriteDeadline(aLongTimeAgo)
				return
			}
			next = max(next, time.Millisecond)
		}
		t.Reset(next)
	})
}

// stop ends g's checks, once no check is ending a write; called after
// the last write, before the handler returns. A check that found a write
// overdue just as it completed must not reach g.w after the handler
// returned: net/http's HTTP/2 ResponseWriter has given back its state by
// then (its SetWriteDeadline would dereference nil, a panic on the
// timer's goroutine, which ends the process), and HTTP/1's would set the
// deadline of a connection that may serve the next request.
func (g *writeGuard) stop() {
	g.mu.Lock()
	g.done = true
	g.mu.Unlock()
}

// watch checks g every timeout until stop is called, for writes that no
// call's timer checks (a batch's merged answer).
func (g *writeGuard) watch() (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTimer(g.timeout)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				t.Reset(g.check())
			}
		}
	}()
	return func() {
		close(done)
		g.stop()
	}
}

func (c *upstreamCall) mark() int64 { return int64(time.Since(c.origin)) + 1 }

// expire runs when the timer fires: it cancels the call if the current wait
// has lasted the timeout, checks the writes of its answer (c.out) and
// re-arms for the next of the two. It re-arms after a cancel too, until
// the call is closed: a read that the cancel did not reach (data already
// buffered, a Transport that does not heed its context) may still hand
// the answer a piece to write, and that write is bounded only while the
// timer checks it.
func (c *upstreamCall) expire() {
	if c.closed.Load() {
		return
	}
	next := c.timeout
	if s := c.waitSince.Load(); s != 0 && !c.timedOut.Load() {
		waited := time.Duration(c.mark() - s)
		if waited >= c.timeout {
			c.timedOut.Store(true)
			c.cancel(errTimeout)
		} else {
			next = c.timeout - waited
		}
	}
	next = min(next, c.out.check())
	t := c.timer.Load()
	for t == nil { // fired before roundTrip stored it
		runtime.Gosched()
		t = c.timer.Load()
	}
	t.Reset(next)
}

func (c *upstreamCall) stop() {
	c.closed.Store(true)
	if t := c.timer.Load(); t != nil {
		t.Stop()
	}
	if t := c.cut.Load(); t != nil {
		t.Stop()
	}
	c.out.stop()
}

// expireCut ends a call whose client went away, as a timeout does.
func (c *upstreamCall) expireCut() {
	if !c.closed.Load() {
		c.timedOut.Store(true)
		c.cancel(errTimeout)
	}
}

// watchClient notes, at now, whether the client of a POST is still there;
// the first time it is not, it arms the cut: one timeout after the client
// was last seen. A client is seen there until a write of its answer
// failed, too: one that stopped reading was there while the write waited
// for it, up to the timeout, and its answer is still read for up to one
// timeout after the write guard ended it, not cut at once.
func (c *upstreamCall) watchClient(now int64) {
	if c.client == nil || c.gone {
		return
	}
	if c.client.Err() == nil {
		c.seen = now
		return
	}
	c.gone = true
	g := c.guard
	if g == nil {
		g = &c.out
	}
	if f := g.failed.Load(); f != 0 {
		c.seen = max(c.seen, f+int64(g.origin.Sub(c.origin)))
	}
	if left := time.Duration(c.seen + int64(c.timeout) - now); left > 0 {
		c.cut.Store(time.AfterFunc(left, c.expireCut))
		return
	}
	c.expireCut()
}

// roundTrip sends one request downstream. body nil sends no body. The
// request's Mcp-Session-Id, if any, must be a valid session id (else 400)
// that the caller may use (else 404); an id bound to no one is bound to the
// caller, unconfirmed, just before the request is sent, so that of two
// principals' concurrent first uses only the first is forwarded and the
// other is refused. The answer settles the binding (see [sessions]): a 2xx
// confirms it, anything else drops it if unconfirmed and none of the
// caller's requests on it is still downstream, a 2xx to a DELETE ends it
// and its tombstone, and an id a 2xx answer names is bound to the caller as
// [sessions.bind] allows. A redirect (3xx) is never relayed: it is logged
// and given as the error of an answer without a response ([badAnswer]).
// guard, when not nil, is the writeGuard that writes the answer instead of
// the call's own (a batch member's: the batch's); it is known before the
// answer's headers arrive, when the client may be found gone already (see
// [upstreamCall.watchClient]). listen marks a POST of a subscriptions/listen
// request ([message.listen]): its call ends with its client, as a GET's does.
func (g *Gateway) roundTrip(r *http.Request, pr *policy.Principal, cid, method string, header http.Header, body []byte, guard *writeGuard, listen bool) (*upstreamCall, *rpcError) {
	ids := header[hdrSession]
	if len(ids) > 1 {
		// Only one could be checked; a downstream might read another.
		g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "outcome", "INVALID_REQUEST", "reason", "more than one session id")
		e := errInvalidRequest("more than one " + hdrSession + " header")
		e.unsent = true
		return nil, e
	}
	sid := ""
	if len(ids) == 1 {
		sid = ids[0]
		if !validSessionID(sid) {
			g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "outcome", "INVALID_REQUEST", "reason", "invalid session id")
			e := errSessionID()
			e.unsent = true
			return nil, e
		}
		if !g.sessions.admit(sid, pr.Subject) {
			// checkSession allowed it, but the id was bound to another
			// principal since, or the table filled up.
			g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "outcome", "FORBIDDEN", "reason", "session owned by another principal or no room")
			e := errSession()
			e.unsent = true
			return nil, e
		}
	}
	parent := r.Context()
	if method == http.MethodPost {
		if gaveup.Err(parent) != nil {
			// The client went away before its call was sent, or its
			// deadline passed though its context does not say so yet:
			// it is not sent, for nobody (the rest of a batch, say).
			if sid != "" {
				g.sessions.settle(sid, pr.Subject, false)
			}
			return nil, errClientGone(true)
		}
		// A POST's call goes on downstream whether or not its client
		// stays (a guarded write runs to completion): its answer is still
		// read, within the timeout (see [upstreamCall]), so that the call
		// keeps its in-flight slot until the downstream is done and its
		// outcome record says what the downstream answered. A GET stream
		// ends with its client, and so does a subscriptions/listen, which
		// runs nothing: its downstream waits for its request to end.
		if !listen {
			parent = context.WithoutCancel(parent)
		}
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, ctxKey{}, pr))
	c := &upstreamCall{cancel: cancel, timeout: g.timeout, origin: time.Now(), guard: guard}
	c.out.timeout, c.out.origin = c.timeout, c.origin
	if method == http.MethodPost && !listen {
		c.client = r.Context()
	}
	c.waitSince.Store(1)
	c.timer.Store(time.AfterFunc(g.timeout, c.expire))
	var resp *http.Response
	var err error
	out := g.outboundRequest(ctx, method, r.URL.RawQuery, header, body)
	if g.signer != nil {
		g.signer.Sign(header, time.Now(), method, out.URL.RequestURI(), body)
	}
	if g.ownClient {
		resp, err = g.rt.RoundTrip(out)
	} else {
		resp, err = g.sendGuarded(out, cid)
	}
	c.waitSince.Store(0)
	if err != nil {
		if sid != "" {
			g.sessions.settle(sid, pr.Subject, false)
		}
		c.stop()
		cancel(nil)
		if err == errTransportPanic {
			e := errTransportFailed()
			e.cause = failPanic
			return nil, e
		}
		if (method != http.MethodPost || listen) && r.Context().Err() != nil {
			// The client's going away ended the request; a POST's
			// request (but a subscriptions/listen's) does not end with
			// its client, so its failure is the downstream's.
			return nil, errClientGone(false)
		}
		timeout := c.timedOut.Load() || errors.Is(err, context.DeadlineExceeded)
		g.log.Warn("upstream error", "cid", cid, "upstream", g.upstreamStr, "timeout", timeout, "err", err)
		// A timeout that is not the call's timer's (a dial's, a custom
		// Transport's own) is answered as one, but its cause does not
		// name the gateway's timeout ([failTimeoutOther]).
		e := errUpstream(timeout)
		e.cause = failureOf(err, c.timedOut.Load(), false)
		return nil, e
	}
	c.resp = resp
	if isRedirect(resp.StatusCode) {
		// Never relayed: the client would follow it to wherever it points
		// (a downstream that redirects /mcp to /mcp/ names its own
		// address) and send its requests there, judged by no one, or read
		// a listing there that no filter or pin checked.
		if sid != "" {
			g.sessions.settle(sid, pr.Subject, false)
		}
		g.refuseRedirect(cid, resp)
		c.close()
		return nil, badAnswer(resp.StatusCode)
	}
	if c.client != nil {
		c.watchClient(c.mark())
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case method == http.MethodDelete && sid != "" && ok:
		g.sessions.end(sid, pr.Subject)
		return c, nil
	case sid != "":
		g.sessions.settle(sid, pr.Subject, ok)
		if method == http.MethodGet && ok {
			// A session first seen through this GET (opened before a
			// restart, or through another replica) is bound only now:
			// its next GET reconnects a stream too ([Gateway.refuseStream]).
			g.sessions.markStreamed(sid, pr.Subject)
		}
	}
	// An id no client could present (validSessionID) is not worth a place.
	if id := headerValue(resp.Header, hdrSession); ok && validSessionID(id) {
		g.sessions.bind(id, pr.Subject)
	}
	return c, nil
}

// errTransportPanic is the error of a custom Transport, or of its answer's
// body, that panicked ([Gateway.sendGuarded]).
var errTransportPanic = errors.New("gateway: the Transport panicked")

// Errors of a custom Transport that broke http.RoundTripper's contract
// ([Gateway.sendGuarded]), as net/http's Client gives them.
var (
	errTransportNoResponse = errors.New("gateway: the Transport returned a nil *Response with a nil error")
	errTransportNoBody     = errors.New("gateway: the Transport returned a *Response with a content length but a nil Body")
	errTransportBadStatus  = errors.New("gateway: the Transport returned a *Response whose status is not that of a final answer (200 to 999)")
)

// sendGuarded sends req with a Transport other than the gateway's own, and
// makes a panic of it, in RoundTrip or in its answer body's Read or Close,
// the call's failure (errTransportPanic), logged with its stack: the
// gateway goes on with the call as on any other failure (its in-flight
// place given back, its outcome recorded). Unrecovered, the panic left
// the call's in-flight place taken for good, and in a batch, whose members
// are sent from goroutines of their own, ended the process. As net/http's
// Client does, it fails a call answered with neither a response nor an
// error, and reads an answer's nil Body as empty (mock Transports give
// one) unless its ContentLength is positive: the gateway read the nil
// response or Body, and panicked. It fails an answer whose status is not
// a final one's, 200 to 999 (0 from a mock that sets none, or a 1xx, which
// the gateway's own client skips or refuses): relayed, WriteHeader
// panicked on it, and the call kept its place for good.
func (g *Gateway) sendGuarded(req *http.Request, cid string) (resp *http.Response, err error) {
	defer func() {
		if v := recover(); v != nil {
			g.transportPanicked(cid, v)
			resp, err = nil, errTransportPanic
		}
	}()
	resp, err = g.rt.RoundTrip(req)
	switch {
	case err != nil:
		return nil, err
	case resp == nil:
		return nil, errTransportNoResponse
	case resp.StatusCode < 200 || resp.StatusCode > 999:
		if resp.Body != nil {
			resp.Body.Close()
		}
		return nil, errTransportBadStatus
	case resp.Body == nil && resp.ContentLength > 0:
		return nil, errTransportNoBody
	case resp.Body == nil:
		resp.Body = http.NoBody
	}
	resp.Body = &guardedBody{rc: resp.Body, g: g, cid: cid}
	return resp, nil
}

// transportPanicked logs the panic v of a custom Transport.
func (g *Gateway) transportPanicked(cid string, v any) {
	g.log.Error("the Transport panicked; the call failed", "cid", cid, "panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
}

// guardedBody is the body of a custom Transport's answer, whose panic is
// a failed read ([Gateway.sendGuarded]); after one, every read fails.
type guardedBody struct {
	rc     io.ReadCloser
	g      *Gateway
	cid    string
	broken bool
}

func (b *guardedBody) Read(p []byte) (n int, err error) {
	if b.broken {
		return 0, errTransportPanic
	}
	defer func() {
		if v := recover(); v != nil {
			b.broken = true
			b.g.transportPanicked(b.cid, v)
			n, err = 0, errTransportPanic
		}
	}()
	return b.rc.Read(p)
}

func (b *guardedBody) Close() (err error) {
	defer func() {
		if v := recover(); v != nil {
			b.g.transportPanicked(b.cid, v)
			err = errTransportPanic
		}
	}()
	return b.rc.Close()
}

// outboundRequest returns the request to send downstream with ctx:
// method, to the upstream URL with the client's query ([escapeQuery])
// when the upstream URL has none (the operator's query, when it has one,
// is sent as configured: a client's never replaces or extends it), header,
// and body (nil: none).
//
// The gateway's own client, which never modifies a request, is given the
// upstream URL itself when the client sent no query; another Transport
// always gets a copy of its own: one that modifies its request
// (http.RoundTripper's contract says it should not) must not change where
// the next requests go.
func (g *Gateway) outboundRequest(ctx context.Context, method, query string, header http.Header, body []byte) *http.Request {
	u := g.upstream
	if query != "" {
		query = escapeQuery(query)
	}
	if !g.ownClient || u.RawQuery == "" && query != "" {
		uq := *g.upstream
		if uq.RawQuery == "" {
			uq.RawQuery = query
		}
		u = &uq
	}
	// One allocation, not two: WithContext copies a request made once.
	out := blankRequest.WithContext(ctx)
	out.Method, out.URL, out.Header, out.Host = method, u, header, u.Host
	if body != nil {
		if !g.ownClient {
			// body is a pooled buffer, given back when the handler
			// returns; a Transport may read the body after RoundTrip
			// returned (http.RoundTripper: it may close it "in a
			// separate goroutine even after RoundTrip returns"). The
			// gateway's own client never does.
			body = bytes.Clone(body)
		}
		out.Body = g.requestBody(body)
		out.ContentLength = int64(len(body))
		if g.ownClient || method != http.MethodPost || !idempotencyKeyed(header) {
			out.GetBody = func() (io.ReadCloser, error) { return g.requestBody(body), nil }
		}
		// Not for a POST with an Idempotency-Key through another
		// Transport: net/http's sends such a request with GetBody again
		// on a new connection, after it was written on a kept one that
		// failed, and a downstream that does not deduplicate on the key
		// (which a client may set and the gateway passes on; an MCP
		// server does not) would run a tools/call that wrote twice. The
		// gateway's own client never sends a written POST again. Other
		// POSTs keep GetBody, with which a Transport sends again only
		// what was not processed: one not written at all, an HTTP/2
		// stream the downstream refused (REFUSED_STREAM) or left past
		// its GOAWAY.
	}
	return out
}

// idempotencyKeyed reports whether h carries a header with which
// net/http's Transport takes a POST for replayable (see
// [Gateway.outboundRequest]).
func idempotencyKeyed(h http.Header) bool {
	_, a := h["Idempotency-Key"]
	_, b := h["X-Idempotency-Key"]
	return a || b
}

// blankRequest is the request [Gateway.outboundRequest] copies; never
// written.
var blankRequest = &http.Request{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}

// escapeQuery returns q, a client's query, with the bytes a request line
// cannot hold percent-encoded: controls, spaces, DEL, bytes from 0x80 up
// and '#' (RFC 9112 §3.2, RFC 3986 §3.4). An HTTP/1 client cannot send
// them, but url.ParseRequestURI, which net/http's HTTP/2 server parses a
// :path with, keeps spaces and those bytes in RawQuery: sent verbatim,
// "x HTTP/1.0" would end the request line early. Encoded, the query means
// the same to a downstream that decodes it.
func escapeQuery(q string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c > ' ' && c < 0x7f && c != '#' {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(q)+16), q[:i]...)
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	if b == nil {
		return q
	}
	return string(b)
}

// requestBody returns a reader of b, a request body read from memory, for
// g's Transport: a [bodyReader] for the gateway's own client, and for
// another io.NopCloser around a *bytes.Reader, which net/http's Transport
// knows to be in memory and writes with the header, in one piece (it
// flushes the header on its own before any other body: one more write,
// and packet, per request).
func (g *Gateway) requestBody(b []byte) io.ReadCloser {
	if g.ownClient {
		return newBodyReader(b)
	}
	return io.NopCloser(bytes.NewReader(b))
}

// bodyReader is a request body read from memory: bytes.Reader with a Close
// that does nothing, in one allocation (io.NopCloser around a
// *bytes.Reader takes two).
type bodyReader struct{ bytes.Reader }

func newBodyReader(b []byte) *bodyReader {
	r := new(bodyReader)
	r.Reset(b)
	return r
}

func (*bodyReader) Close() error { return nil }

// Read reads the body with the idle timeout running during the read.
func (c *upstreamCall) Read(p []byte) (int, error) {
	c.waitSince.Store(c.mark())
	n, err := c.resp.Body.Read(p)
	c.waitSince.Store(0)
	if err != nil && c.timedOut.Load() {
		err = errTimeout
	}
	if err == nil && c.client != nil {
		c.watchClient(c.mark())
	}
	return n, err
}

// errTimeout is the error of a read that the call's timer ended, and the
// cause of its context's cancellation.
var errTimeout = errors.New("gateway: upstream timed out")

func (c *upstreamCall) close() {
	c.stop()
	c.resp.Body.Close()
	c.cancel(nil)
}

func isSSE(h http.Header) bool {
	ct := headerValue(h, "Content-Type")
	return len(ct) >= 17 && strings.EqualFold(ct[:17], "text/event-stream")
}

// passThrough forwards the request bytes unchanged and relays the answer as
// it arrives: status, headers (without hop-by-hop ones) and body, flushed
// piece by piece when it is an event stream. m is the message body holds
// (a POST's single message), nil for a GET or a DELETE: its id is that of
// an error answered instead.
func (g *Gateway) passThrough(w http.ResponseWriter, r *http.Request, pol *policy.Policy, pr *policy.Principal, cid string, body []byte, m *message, call *callState) {
	start := g.now()
	listen := r.Method == http.MethodPost && m.listen()
	c, uerr := g.roundTrip(r, pr, cid, r.Method, outboundHeader(r.Header, pr, cid), body, nil, listen)
	if uerr != nil {
		g.unanswered(w, r, pr, cid, m, call, uerr, start)
		return
	}
	defer c.close()
	call.answered(c.resp.StatusCode)
	if s := c.resp.StatusCode; g.pins != nil && r.Method != http.MethodDelete && s >= 200 && s <= 299 {
		// Any answer may carry a listing (see [Gateway.guardAnswer]).
		g.relayChecked(w, r, pol, pr, cid, m, c, call, start, listen)
		return
	}
	copyResponseHeader(w.Header(), c.resp.Header, true)
	sse := isSSE(c.resp.Header)
	// A POST answer of known length keeps its Content-Length: a client
	// sees a short answer as short (net/http closes the connection) rather
	// than as a complete one.
	known := !sse && r.Method == http.MethodPost && c.resp.ContentLength > 0 &&
		c.resp.StatusCode != http.StatusNoContent && c.resp.StatusCode != http.StatusNotModified
	if known {
		w.Header()["Content-Length"] = []string{strconv.FormatInt(c.resp.ContentLength, 10)}
	}
	w.WriteHeader(c.resp.StatusCode)
	c.out.w = w
	if sse {
		// The header at once: a client may wait for it (the go-sdk's
		// Connect waits for its GET stream's), and the first event may be
		// long in coming. Guarded as the body's writes: a client that
		// stopped reading a previous answer on its connection may hold
		// this one too.
		c.out.flush(http.NewResponseController(w))
	}
	// A GET stream, and a subscriptions/listen one, may be silent for
	// long: no timeout once their header has come.
	stream := r.Method == http.MethodGet || listen && sse
	if stream {
		defer cutOnEnd(r, &c.out)()
	}
	var rd io.Reader = c.resp.Body
	if !stream {
		rd = c
	}
	var tap *answerTap
	if call != nil && call.tap && !stream && c.resp.StatusCode == http.StatusOK {
		// A charged call's answer may ask for a next round (rounds.go).
		tap = &answerTap{r: rd}
		rd = tap
	}
	n, tail, gone, err := g.copyBody(r.Context(), &c.out, rd, sse, r.Method == http.MethodPost && !listen)
	if tap != nil && err == nil {
		call.noteRounds(tap, sse)
	}
	if errors.Is(err, errTokenRefused) {
		// A stream whose token was refused since it opened
		// (see [Gateway.serveStream]) is broken, not ended: the refused write may
		// have been inside an event, and a clean end after a cut line
		// fails a go-sdk client's session (see abortCut). Its client
		// learns of the refusal when it asks to resume.
		call.finish("")
		if g.log.Enabled(r.Context(), slog.LevelInfo) {
			g.logRelayed(r.Context(), cid, c.resp.StatusCode, n, sse, false, start, err)
		}
		abortNow(&c.out)
	}
	// A stream EndStreams ended (its client still there) ends cleanly
	// where it stands between two events; inside one, it is cut as a
	// broken stream is (see abortCut).
	ended := (r.Method == http.MethodGet || listen) && !gone && streamEnded(r)
	cut := false
	if ended && err != nil {
		err, cut = nil, !sse || !atEventEnd(tail)
	} else if last := byte(tail); err == nil && sse && last != '\n' && last != '\r' {
		// A body delimited by the connection's close has no framing to
		// tell that it was cut, but an event stream does not end inside
		// a line. What was read counts, written or not: the outcome
		// record of a call whose client went away says how the
		// downstream's answer ended. Cut here when EndStreams ran
		// meanwhile: abortCut would not, the stream's context ended.
		err, cut = errEndedInLine, ended
	}
	code := ""
	if err != nil {
		code = "UPSTREAM_UNAVAILABLE"
		if !gone || r.Method == http.MethodPost && !listen {
			// The downstream's failure, not a failed write to the
			// client (a POST's answer is read on: see [Gateway.copyBody]).
			call.failed(failureOf(err, false, true))
		}
	}
	// A copy that failed once the client had gone was cut short too: a
	// POST's answer is then read for at most the timeout; a GET's or a
	// subscriptions/listen's stream, and a DELETE's answer, end with their
	// client.
	gone = gone || err != nil && r.Context().Err() != nil && !ended
	if gone {
		call.clientWentAway()
	}
	call.finish(code)
	if g.log.Enabled(r.Context(), slog.LevelInfo) {
		g.logRelayed(r.Context(), cid, c.resp.StatusCode, n, sse, gone, start, err)
	}
	if cut {
		abortNow(&c.out)
	}
	if err != nil && !gone {
		abortCut(&c.out, r)
	}
}

// unanswered ends a call that got no answer to relay (uerr): refused
// before it was sent, its client gone, or the downstream unavailable.
func (g *Gateway) unanswered(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, m *message, call *callState, uerr *rpcError, start time.Time) {
	if call == nil && uerr.unsent && uerr.status != 499 && g.sink != nil {
		// A request without a tools/call (a GET, a DELETE, an
		// initialize) refused for its session: its one record.
		g.audit(r.Context(), pr, cid, infoOf(r), "", "", nil, audit.PhaseOutcome, false, uerr.contract, uerr.message, 0, start)
	}
	if uerr.unsent || g.neverSent(uerr) {
		call.refund()
	}
	call.answeredErr(uerr)
	if uerr.status == 499 && streamEnded(r) {
		// EndStreams ended the stream before the downstream's header
		// came: answered as one asked for after it.
		g.endedStream(w, r, pr, cid, m)
		return
	}
	if uerr.status == 499 {
		if uerr.unsent {
			call.notForwarded()
		}
		call.clientWentAway()
		call.finish(uerr.contract)
		if e := deadlineAnswer(r.Context(), uerr); e != uerr {
			// Not its client's hanging up but a deadline: the client
			// may be waiting still, and a handler that writes nothing
			// answers it 200 with an empty body.
			g.writeErrorOf(w, e, m.idOrNil(), cid, isRequest(m))
		}
		return
	}
	if r.Context().Err() != nil {
		call.clientWentAway()
	}
	call.finish(uerr.contract)
	g.writeErrorOf(w, uerr, m.idOrNil(), cid, isRequest(m))
}

// isRequest reports whether m is a JSON-RPC request (it has an id and is
// not a client's response); false for nil.
func isRequest(m *message) bool {
	return m != nil && m.id != nil && !m.response
}

// logRelayed writes the "upstream" line of an answer relayed as it came:
// its status, the bytes relayed, whether it was an event stream, whether
// the client went away, the time since start and how the relay failed.
// It builds its record itself rather than through [Gateway.infoAttrs]:
// attrs passed to that one are an array in this frame, and the two
// frames together are deeper, on the deepest call of a forwarded
// request (see TestForwardFitsItsStack; logChecked too, where the room
// left is smallest).
func (g *Gateway) logRelayed(ctx context.Context, cid string, status int, n int64, sse, gone bool, start time.Time, err error) {
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "upstream", 0)
	rec.AddAttrs(slog.String("cid", cid), slog.Int("status", status),
		slog.Int64("bytes", n), slog.Bool("sse", sse), slog.Bool("client_gone", gone),
		slog.Float64("ms", float64(g.now().Sub(start).Microseconds())/1000), slog.String("err", errString(err)))
	_ = g.log.Handler().Handle(ctx, rec)
}

// errEndedInLine is the error of an event stream that ended inside a
// line: the downstream's connection closed in the middle of an event
// (the SSE specification discards such an event; a go-sdk client
// dispatches the cut line, fails to decode it and fails its session).
var errEndedInLine = errors.New("gateway: downstream event stream ended inside a line")

// abortCut ends out.w, the response to r whose header is written, as cut
// short when the downstream's answer failed before its end (its
// connection broke, a bad chunk, a silence past the timeout, an event the
// gateway refuses, an event stream ended inside a line) and r's client is
// still there: what was written is flushed (the client gets the status
// and the bytes relayed), then the handler panics with
// http.ErrAbortHandler, as httputil.ReverseProxy does, and the server
// breaks the connection (resets the stream) instead of ending the answer
// cleanly. A client then reads an error, not a complete answer; a go-sdk
// client that read a clean end after a cut line would dispatch the cut
// event, fail to decode it and fail its whole session.
//
// The flush goes through out, the guard of the response's writes: a
// client that stopped reading would hold it for good otherwise.
func abortCut(out *writeGuard, r *http.Request) {
	if r.Context().Err() == nil {
		abortNow(out)
	}
}

// abortNow flushes what was written to out.w and breaks the connection
// (see abortCut).
func abortNow(out *writeGuard) {
	out.flush(http.NewResponseController(out.w))
	panic(http.ErrAbortHandler)
}

// atEventEnd reports whether an event stream whose last four bytes are
// tail (the last in its low byte; '\n's before the stream's start) ends
// between two events: its last line, once its end ("\r\n", "\n" or
// "\r") is left out, is empty.
func atEventEnd(tail uint32) bool {
	b := [4]byte{byte(tail >> 24), byte(tail >> 16), byte(tail >> 8), byte(tail)}
	var i int
	switch {
	case b[3] == '\n' && b[2] == '\r':
		i = 1
	case b[3] == '\n' || b[3] == '\r':
		i = 2
	default:
		return false
	}
	return b[i] == '\n' || b[i] == '\r'
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// copyBody copies src to out's writer; for an event stream every piece
// read is flushed at once. n counts the bytes written, and tail holds the
// last four bytes read from src, the last in its low byte ('\n's before
// the first: an empty stream ends at a line's end). Without drain, a
// failed write (the client went away, or stopped reading: see
// [writeGuard]) ends the copy with its error and gone set. With drain, a
// client that went away (ctx, the client's request context, ended before
// a write, or a write failed) sets gone, and the rest of src is read and
// discarded, so that the caller learns how the downstream's answer ended.
// err is src's error otherwise.
func (g *Gateway) copyBody(ctx context.Context, out *writeGuard, src io.Reader, flush, drain bool) (n int64, tail uint32, gone bool, err error) {
	bp := g.bufs.Get().(*bytes.Buffer)
	defer g.bufs.Put(bp)
	bp.Reset()
	bp.Grow(32 << 10)
	buf := bp.AvailableBuffer()[:32<<10]
	rc := http.NewResponseController(out.w)
	tail = 0x0a0a0a0a
	for {
		k, rerr := src.Read(buf)
		for _, b := range buf[max(0, k-4):k] {
			tail = tail<<8 | uint32(b)
		}
		if k > 0 && drain && !gone && ctx.Err() != nil {
			gone = true
		}
		if k > 0 && !gone {
			if _, werr := out.write(buf[:k]); werr != nil {
				if !drain {
					return n, tail, true, werr
				}
				gone = true
			} else {
				n += int64(k)
				if flush {
					out.flush(rc)
				}
			}
		}
		if rerr == io.EOF {
			return n, tail, gone, nil
		}
		if rerr != nil {
			return n, tail, gone, rerr
		}
	}
}

package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// upstreamClient is the default transport to the downstream: an HTTP/1.1
// client that writes each request and reads its response on the calling
// goroutine, over a keep-alive pool of connections per host.
//
// net/http's Transport runs a writer and a reader goroutine per connection
// and hands every request and response between them and the caller; in a
// proxy process on a small virtual machine those handoffs (futex wakeups of
// other OS threads) cost more than the proxying. Here a request costs one
// write and the reads of its answer, on the handler's goroutine.
//
// A connection is reused only when its response was read to the end with
// nothing left over, neither side asked to close, and the request's context
// did not interrupt it; an idle connection that the peer closed or wrote to
// is discarded when it is taken from the pool, and so is one idle for
// longer than idleTimeout or than its downstream's Keep-Alive timeout less
// keepAliveMargin (see [hostPool]).
type upstreamClient struct {
	dialer      net.Dialer
	tlsConfig   *tls.Config // nil: the zero configuration
	maxIdle     int         // idle connections kept per host
	idleTimeout time.Duration
	maxHeader   int64 // bytes of response header read at most

	mu    sync.Mutex
	pools map[string]*hostPool // "scheme://host:port" -> its idle connections

	// last is the last request URL's target: the gateway sends every
	// request to one URL.
	last atomic.Pointer[target]
}

// target is a request URL split as dial needs it, with its pool key.
type target struct {
	scheme, rawHost string // the URL's Scheme and Host
	parts           *urlParts
	key             string
}

// hostPool is the idle connections to one downstream, and what it
// announced of its own idle timeout.
//
// The timeout a downstream announces (Keep-Alive: timeout=N) holds for all
// its connections, whichever answer carried it (an answer that closes its
// connection is not read for it: Node sends the header only on the
// others): Node closes every idle connection after its keepAliveTimeout,
// but leaves out the header when the handler set Connection itself, as
// the TypeScript SDK does on its event streams, which answer most of its
// requests. So the last timeout a downstream announced stays in force, for
// connections whose answers did not repeat it too, until another one is
// announced. One limit for all the connections of a pool also keeps its
// bottom the first to expire, which put's sweep relies on.
type hostPool struct {
	idle []*upConn // most recent last
	// keepFor is the last Keep-Alive timeout announced less
	// keepAliveMargin (0 or less: a connection is not kept), when
	// announced.
	keepFor   time.Duration
	announced bool
}

func newUpstreamClient() *upstreamClient {
	return &upstreamClient{
		dialer:      net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     256,
		idleTimeout: 90 * time.Second,
		maxHeader:   1 << 20,
		pools:       map[string]*hostPool{},
	}
}

// upConn is one connection to a downstream.
type upConn struct {
	key    string
	nc     net.Conn
	rec    *recordConn // under nc's TLS; nil for a plain connection
	peek   idlePeek
	lr     limitedConn
	wc     trackingWriter
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
	used   bool // carried a request before
}

// limitedConn reads from a connection at most n bytes while n >= 0 (the
// response header phase); n < 0 means no limit.
type limitedConn struct {
	net.Conn
	n int64
}

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.Conn.Read(p)
	}
	if l.n == 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.Conn.Read(p)
	l.n -= int64(k)
	return k, err
}

// trackingWriter records whether anything was written to a connection,
// and the error a write to it failed with.
type trackingWriter struct {
	w     io.Writer
	wrote bool
	err   error
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.wrote = true
	n, err := t.w.Write(p)
	if err != nil {
		t.err = err
	}
	return n, err
}

var (
	errHeaderTooLarge = errors.New("gateway: downstream response header too large")
	errUnsupported    = errors.New("gateway: downstream answered 101 Switching Protocols")
)

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

func hostKey(u *urlParts) string { return u.scheme + "://" + u.addr }

type urlParts struct{ scheme, addr, host string }

func splitURL(r *http.Request) (*urlParts, error) {
	u := r.URL
	if u == nil {
		return nil, errors.New("gateway: request without URL")
	}
	p := &urlParts{scheme: u.Scheme, host: u.Hostname()}
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
	default:
		return nil, fmt.Errorf("gateway: unsupported scheme %q", u.Scheme)
	}
	if p.host == "" {
		return nil, errors.New("gateway: request URL without host")
	}
	p.addr = net.JoinHostPort(p.host, port)
	return p, nil
}

// get returns an idle connection to key that is still usable, or nil.
func (c *upstreamClient) get(key string, now time.Time) *upConn {
	for {
		c.mu.Lock()
		hp := c.pools[key]
		if hp == nil || len(hp.idle) == 0 {
			c.mu.Unlock()
			return nil
		}
		limit := c.idleLimit(hp)
		pc := hp.idle[len(hp.idle)-1]
		hp.idle[len(hp.idle)-1] = nil
		hp.idle = hp.idle[:len(hp.idle)-1]
		c.mu.Unlock()
		if now.Sub(pc.idleAt) < limit && pc.peek.usable() {
			return pc
		}
		pc.nc.Close()
	}
}

// idleLimit is how long a connection of hp may stay idle: idleTimeout, or
// less when its downstream announced a shorter timeout (0 or less: not at
// all). c.mu is held.
func (c *upstreamClient) idleLimit(hp *hostPool) time.Duration {
	if hp.announced && hp.keepFor < c.idleTimeout {
		return hp.keepFor
	}
	return c.idleTimeout
}

// poolLocked returns key's pool, made if it has none. c.mu is held.
func (c *upstreamClient) poolLocked(key string) *hostPool {
	hp := c.pools[key]
	if hp == nil {
		hp = &hostPool{}
		c.pools[key] = hp
	}
	return hp
}

// announce records t, the idle timeout key's downstream announced
// (Keep-Alive: timeout=N), for all its connections (see [hostPool]), and
// reports whether a connection to it may be kept at all: not when t is
// keepAliveMargin or less.
func (c *upstreamClient) announce(key string, t time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	hp := c.poolLocked(key)
	hp.keepFor, hp.announced = t-keepAliveMargin, true
	return hp.keepFor > 0
}

// put returns a connection whose exchange completed cleanly to the pool.
// It also closes the connections idle for longer than they may be
// (idleLimit), from the bottom: get takes the most recent, so under steady
// traffic the older ones, at the bottom, would never be taken, checked and
// closed.
func (c *upstreamClient) put(pc *upConn) {
	pc.idleAt = time.Now()
	pc.used = true
	c.mu.Lock()
	hp := c.poolLocked(pc.key)
	limit := c.idleLimit(hp)
	idle := hp.idle
	n := 0
	for n < len(idle) && pc.idleAt.Sub(idle[n].idleAt) >= limit {
		n++
	}
	var expired []*upConn
	if n > 0 {
		expired = slices.Clone(idle[:n])
		idle = append(idle[:0], idle[n:]...)
		clear(idle[len(idle) : len(idle)+n])
	}
	// A limit of 0 or less (the downstream announced a timeout too short
	// to use the connection again) keeps none.
	full := len(idle) >= c.maxIdle || limit <= 0
	if !full {
		idle = append(idle, pc)
	}
	hp.idle = idle
	c.mu.Unlock()
	for _, e := range expired {
		e.nc.Close()
	}
	if full {
		pc.nc.Close()
	}
}

// CloseIdleConnections closes the connections kept idle. What their
// downstreams announced of their idle timeouts is kept.
func (c *upstreamClient) CloseIdleConnections() {
	var idle []*upConn
	c.mu.Lock()
	for _, hp := range c.pools {
		idle = append(idle, hp.idle...)
		hp.idle = nil
	}
	c.mu.Unlock()
	for _, pc := range idle {
		pc.nc.Close()
	}
}

func (c *upstreamClient) dial(ctx context.Context, u *urlParts, key string) (*upConn, error) {
	if u.scheme != "https" {
		nc, err := c.dialer.DialContext(ctx, "tcp", u.addr)
		if err != nil {
			return nil, err
		}
		return newUpConn(key, nc, nc, nil), nil
	}
	cfg := c.tlsConfig.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.host
	}
	cfg.NextProtos = []string{"http/1.1"}
	// As tls.Dialer: the dialer's timeout bounds the handshake too.
	if c.dialer.Timeout != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.dialer.Timeout)
		defer cancel()
	}
	raw, err := c.dialer.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		return nil, err
	}
	rec := &recordConn{Conn: raw}
	tc := tls.Client(rec, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("gateway: TLS handshake with the downstream %s: %w", u.addr, err)
	}
	return newUpConn(key, tc, raw, rec), nil
}

// newUpConn returns the upConn of nc, over the TCP connection raw (nc
// itself, or the one under nc's TLS, read through rec).
func newUpConn(key string, nc, raw net.Conn, rec *recordConn) *upConn {
	pc := &upConn{key: key, nc: nc, rec: rec}
	pc.peek.init(raw)
	pc.lr = limitedConn{Conn: nc, n: -1}
	pc.br = bufio.NewReaderSize(&pc.lr, 16<<10)
	pc.wc = trackingWriter{w: nc}
	pc.bw = bufio.NewWriterSize(&pc.wc, 16<<10)
	return pc
}

// recordConn is the TCP connection under a TLS one: it follows the TLS
// record framing of what is read from it, so that [upConn.tlsDrained] can
// tell the first bytes of a record that has not arrived whole, read from
// the socket with the end of an answer into the TLS connection's buffer,
// from nothing at all: a read of the TLS connection fails the same way
// (its deadline) for both.
type recordConn struct {
	net.Conn
	hdr  [5]byte
	nhdr int // bytes of the current record's header read
	left int // bytes of the current record's payload not read
}

func (r *recordConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	for b := p[:n]; len(b) > 0; {
		if r.left > 0 {
			k := min(r.left, len(b))
			r.left -= k
			b = b[k:]
			continue
		}
		k := copy(r.hdr[r.nhdr:], b)
		r.nhdr += k
		b = b[k:]
		if r.nhdr == len(r.hdr) {
			r.nhdr, r.left = 0, int(r.hdr[3])<<8|int(r.hdr[4])
		}
	}
	return n, err
}

// atBoundary reports whether what was read ends a record.
func (r *recordConn) atBoundary() bool { return r.nhdr == 0 && r.left == 0 }

// RoundTrip implements http.RoundTripper for HTTP/1.1 requests to http and
// https URLs.
func (c *upstreamClient) RoundTrip(req *http.Request) (*http.Response, error) {
	u, key, err := c.target(req)
	if err != nil {
		closeReader(req.Body)
		return nil, err
	}
	if strings.IndexFunc(req.Host, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		closeReader(req.Body)
		return nil, fmt.Errorf("gateway: invalid Host %q", req.Host)
	}
	if err := checkHeader(req.Header); err != nil {
		closeReader(req.Body)
		return nil, err
	}
	ctx := req.Context()
	body := req.Body // the request is not modified: a retry rewinds this
	for attempt := 0; ; attempt++ {
		pc := c.get(key, time.Now())
		if pc == nil {
			if pc, err = c.dial(ctx, u, key); err != nil {
				closeReader(body)
				return nil, err
			}
		}
		resp, retry, err := c.exchange(ctx, pc, req, body)
		if err == nil {
			return resp, nil
		}
		closeReader(body)
		if !retry || attempt > 0 || ctx.Err() != nil {
			return nil, err
		}
		if body != nil && body != http.NoBody {
			if body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// target returns req's URL split as dial needs it, and its pool key; the
// last URL's are kept.
func (c *upstreamClient) target(req *http.Request) (*urlParts, string, error) {
	if t := c.last.Load(); t != nil && req.URL != nil && req.URL.Scheme == t.scheme && req.URL.Host == t.rawHost {
		return t.parts, t.key, nil
	}
	u, err := splitURL(req)
	if err != nil {
		return nil, "", err
	}
	t := &target{scheme: req.URL.Scheme, rawHost: req.URL.Host, parts: u, key: hostKey(u)}
	c.last.Store(t)
	return u, t.key, nil
}

func closeReader(rc io.ReadCloser) {
	if rc != nil {
		rc.Close()
	}
}

// exchange writes req on pc and reads its response header. When the write
// fails after the downstream answered (it stopped reading the body), that
// answer is returned, and pc is not kept. On error pc is closed; retry
// reports that the request may be sent again on a new connection (pc was
// reused, and either nothing was written or the request is replayable and
// the peer closed before answering).
func (c *upstreamClient) exchange(ctx context.Context, pc *upConn, req *http.Request, body io.ReadCloser) (*http.Response, bool, error) {
	var interrupted atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		interrupted.Store(true)
		pc.nc.SetDeadline(aLongTimeAgo)
	})
	fail := func(err error, retry bool) (*http.Response, bool, error) {
		stop()
		pc.nc.Close()
		if interrupted.Load() {
			return nil, false, fmt.Errorf("%w (%v)", context.Cause(ctx), err)
		}
		if _, isTLS := pc.nc.(*tls.Conn); isTLS && !pc.used && (pc.lr.n < 0 || pc.lr.n == c.maxHeader) {
			// A TLS 1.3 downstream judges the client certificate after
			// the client's handshake ended: one it refuses closes the
			// connection, which fails the request's write or the read of
			// its answer (an alert, or a reset) before a byte of it.
			err = &tlsClosedError{err}
		}
		return nil, retry && pc.used, err
	}
	pc.wc.wrote, pc.wc.err = false, nil
	if err := writeRequest(pc.bw, req, body); err != nil {
		if pc.wc.err != nil && !interrupted.Load() {
			// The downstream may have answered before it read the whole
			// body and stopped reading it (a body over its limit: 413,
			// then close), which failed the write. Its answer, already
			// received, is the request's, as net/http's Transport reads
			// it; the connection is not kept.
			if resp := c.earlyAnswer(pc, req, &interrupted); resp != nil {
				resp.Body = &upBody{c: c, pc: pc, body: resp.Body, stop: stop, noBody: resp.Body == http.NoBody}
				if resp.Body.(*upBody).noBody {
					resp.Body.(*upBody).finish(true)
				}
				return resp, false, nil
			}
		}
		return fail(err, !pc.wc.wrote && (body == nil || body == http.NoBody || req.GetBody != nil))
	}
	resp, err := c.readFinal(pc, req)
	if err != nil {
		// The peer closed a reused connection without a byte of answer
		// (none buffered, none read for this one): it was going away, and
		// a replayable request may be sent again.
		noAnswer := (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err)) && pc.br.Buffered() == 0 && pc.lr.n == c.maxHeader
		return fail(err, noAnswer && replayable(req))
	}
	keep := !resp.Close && !req.Close
	if t, ok := keepAliveTimeout(resp.Header); ok && keep {
		// The downstream closes its connections once idle for t (Node,
		// under the TypeScript SDK, after 5 s): a request sent on one
		// near then could meet the close, unanswered, and one that is
		// not replayable (a tools/call) would fail.
		keep = c.announce(pc.key, t)
	}
	resp.Body = &upBody{c: c, pc: pc, body: resp.Body, stop: stop, keep: keep, noBody: resp.Body == http.NoBody}
	if resp.Body.(*upBody).noBody {
		resp.Body.(*upBody).finish(true)
	}
	return resp, false, nil
}

// readFinal reads the header of the final response to req on pc, reading
// at most maxHeader bytes for it and skipping informational (1xx) ones.
func (c *upstreamClient) readFinal(pc *upConn, req *http.Request) (*http.Response, error) {
	pc.lr.n = c.maxHeader
	var resp *http.Response
	var err error
	for range 10 {
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode < 100 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			err = errUnsupported
			break
		}
		// 1xx informational: skip, the final answer follows.
	}
	if err == nil && resp.StatusCode < 200 {
		err = errors.New("gateway: too many informational responses")
	}
	if err != nil {
		return nil, asMalformed(err)
	}
	pc.lr.n = -1
	return resp, nil
}

// keepAliveMargin is taken off the idle timeout a downstream announces
// (Keep-Alive: timeout=N) for how long its connections may stay in the
// pool: the downstream's timer, and the time a request takes to reach it,
// are not ours. The connections of a downstream that announces this or
// less are not kept.
const keepAliveMargin = time.Second

// maxKeepAlive bounds the timeout keepAliveTimeout reads; idleTimeout is
// shorter.
const maxKeepAlive = time.Hour

// keepAliveTimeout returns the idle timeout h's Keep-Alive header
// announces (timeout=N, in seconds: RFC 2068 §19.7.1.1), the least if it
// announces several, at most maxKeepAlive, and whether it announces one.
// Other parameters, and a timeout that is not a number of seconds, are
// skipped.
func keepAliveTimeout(h http.Header) (time.Duration, bool) {
	var least time.Duration
	found := false
	for _, v := range h["Keep-Alive"] {
		for v != "" {
			var p string
			p, v, _ = strings.Cut(v, ",")
			k, val, ok := strings.Cut(p, "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(k), "timeout") {
				continue
			}
			val = strings.TrimSpace(val)
			if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			if val == "" {
				continue
			}
			var secs int64
			for i := 0; i < len(val) && secs >= 0; i++ {
				if val[i] < '0' || val[i] > '9' {
					secs = -1
				} else if secs = secs*10 + int64(val[i]-'0'); secs > int64(maxKeepAlive/time.Second) {
					secs = int64(maxKeepAlive / time.Second)
				}
			}
			if secs < 0 {
				continue
			}
			if t := time.Duration(secs) * time.Second; !found || t < least {
				least, found = t, true
			}
		}
	}
	return least, found
}

// earlyAnswerWait bounds the wait for an answer on a connection whose
// write failed: one sent before the downstream stopped reading has
// arrived by then, and a connection that broke otherwise fails its read at
// once.
const earlyAnswerWait = time.Second

// earlyAnswer reads the answer to req that the downstream sent on pc
// before a write of req failed, or returns nil when there is none. The
// wait for its header is bounded by earlyAnswerWait; its body is read as
// any answer's, until the context interrupts it (interrupted).
func (c *upstreamClient) earlyAnswer(pc *upConn, req *http.Request, interrupted *atomic.Bool) *http.Response {
	pc.nc.SetReadDeadline(time.Now().Add(earlyAnswerWait))
	resp, err := c.readFinal(pc, req)
	pc.nc.SetReadDeadline(time.Time{})
	if interrupted.Load() {
		// The context's deadline in the past, which the line above may
		// have replaced, is set again.
		pc.nc.SetDeadline(aLongTimeAgo)
		err = errors.New("interrupted")
	}
	if err != nil {
		return nil
	}
	return resp
}

// replayable reports whether r may be sent again on a fresh connection
// after a reused one failed once it was written: a request without a body
// or with GetBody, and an idempotent method. Unlike net/http, an
// Idempotency-Key header does not make a POST replayable: the client sets
// it, and an MCP server does not deduplicate on it, so a tools/call that
// writes could run twice.
func replayable(r *http.Request) bool {
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		return false
	}
	switch r.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// isDialError reports whether err, of a TLS dial, is the TCP connection's
// (a refused connection, a dial timeout), not the handshake's.
func isDialError(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && ne.Op == "dial"
}

func isConnReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && strings.Contains(ne.Err.Error(), "reset by peer")
}

// upBody is a response body; the connection goes back to the pool when it
// is read to its end, and is closed when the body is closed before.
type upBody struct {
	c      *upstreamClient
	pc     *upConn
	body   io.ReadCloser
	stop   func() bool
	keep   bool
	noBody bool
	mu     sync.Mutex // Close may race Read (a client going away)
	done   bool
	err    error // returned after the end
}

var errBodyClosed = errors.New("gateway: read on closed response body")

func (b *upBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.done {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	b.mu.Unlock()
	n, err := b.body.Read(p)
	if err != nil {
		err = asMalformed(err) // a bad chunk
		b.mu.Lock()
		if !b.done {
			b.finishLocked(err == io.EOF)
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *upBody) Close() error {
	b.mu.Lock()
	if !b.done {
		b.finishLocked(false)
		b.err = errBodyClosed
	}
	b.mu.Unlock()
	return nil
}

func (b *upBody) finish(ok bool) {
	b.mu.Lock()
	b.finishLocked(ok)
	b.err = io.EOF
	b.mu.Unlock()
}

// finishLocked ends the exchange: the connection is kept when the body was
// read to its end, nothing follows it, both sides keep the connection and
// the context did not interrupt it.
func (b *upBody) finishLocked(ok bool) {
	b.done = true
	stopped := b.stop()
	if ok && stopped && b.keep && b.pc.br.Buffered() == 0 && b.pc.tlsDrained() {
		b.c.put(b.pc)
		return
	}
	b.pc.nc.Close()
}

// tlsDrained reports whether pc's TLS connection, if it is one, holds
// nothing read from the socket that was not given out: a TLS record that
// arrived with the end of an answer is read into the connection's own
// buffer, where neither pc.br nor the idle peek sees it, and the next
// request on pc would take it for its answer. A read with a deadline in the
// past takes such a record, or fails at once (post-handshake messages, such
// as session tickets, are handled on the way); it fails the same way when
// only the first bytes of a record arrived, which pc.rec tells.
func (pc *upConn) tlsDrained() bool {
	tc, ok := pc.nc.(*tls.Conn)
	if !ok {
		return true
	}
	tc.SetReadDeadline(aLongTimeAgo)
	var b [1]byte
	n, err := tc.Read(b[:])
	tc.SetReadDeadline(time.Time{})
	return n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && (pc.rec == nil || pc.rec.atBoundary())
}

// writeRequest writes req, with body in place of req.Body, in HTTP/1.1
// wire format: request line, Host,
// Content-Length or chunked Transfer-Encoding, headers, body.
func writeRequest(bw *bufio.Writer, req *http.Request, body io.ReadCloser) (err error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	bw.WriteString(method)
	bw.WriteByte(' ')
	bw.WriteString(req.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	// As net/http: a zero ContentLength with a body means unknown.
	n := req.ContentLength
	if body == http.NoBody {
		body = nil
	}
	if body == nil {
		n = 0
	} else if n == 0 {
		n = -1
	}
	switch {
	case n > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(n, 10))
		bw.WriteString("\r\n")
	case n < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch:
		bw.WriteString("Content-Length: 0\r\n")
	}
	if req.Close {
		bw.WriteString("Connection: close\r\n")
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Trailer":
			continue
		}
		for _, v := range vs {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v) // checkHeader: nothing to trim or escape
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("\r\n")
	if body != nil {
		if n > 0 {
			var k int64
			if br, ok := body.(*bodyReader); ok && int64(br.Len()) == n {
				// The gateway's body, in memory: written as it is,
				// without a LimitReader (an allocation).
				k, err = br.WriteTo(bw)
			} else {
				k, err = io.Copy(bw, io.LimitReader(body, n))
			}
			if err == nil && k != n {
				err = fmt.Errorf("gateway: request body has %d bytes, Content-Length %d", k, n)
			}
		} else {
			if _, err = io.Copy(chunkWriter{bw}, body); err == nil {
				_, err = bw.WriteString("0\r\n\r\n")
			}
		}
		body.Close()
		if err != nil {
			bw.Reset(nil) // never send an incomplete request
			return err
		}
	}
	return bw.Flush()
}

type chunkWriter struct{ bw *bufio.Writer }

func (c chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
	c.bw.WriteString("\r\n")
	c.bw.Write(p)
	_, err := c.bw.WriteString("\r\n")
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// checkHeader refuses header names that are not HTTP tokens and values
// with control characters other than tab, as net/http's Transport does (a
// request must not smuggle another one), or with leading or trailing
// spaces or tabs, which RFC 9110 §5.5 excludes from a field value: the
// downstream would read the value without them, and writeRequest sends
// every value as it is, never one other than the gateway checked.
func checkHeader(h http.Header) error {
	for k, vs := range h {
		if !validFieldName(k) {
			return fmt.Errorf("gateway: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !validFieldValue(v) {
				return fmt.Errorf("gateway: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// validFieldValue reports whether v can be sent as an HTTP field value
// exactly as it is: no control characters other than tab, and no leading
// or trailing space or tab. Bytes from 0x80 up (obs-text, as UTF-8 is
// sent) are allowed.
func validFieldValue(v string) bool {
	if hasOuterSpace(v) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validFieldName reports whether k is an HTTP token (RFC 9110 §5.6.2), as
// a field name must be.
func validFieldName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !tokenChars[k[i]] {
			return false
		}
	}
	return true
}

// tokenChars marks the bytes of a token: visible ASCII but the delimiters.
var tokenChars = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

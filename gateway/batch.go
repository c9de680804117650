package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/policy"
)

// Bounds of one batch.
const (
	// maxBatchMembers bounds the messages of one batch: a larger batch is
	// refused whole with -32600 before anything is decided or forwarded.
	maxBatchMembers = 256
	// maxBatchInFlight bounds the members of one batch that are downstream
	// at once: a member holds its place from its request until its answer
	// has been read, so one request never opens more than this many
	// downstream requests and connections.
	maxBatchInFlight = 16
	// maxBatchAnswers bounds the bytes of members' answers one batch holds
	// at once (read and not yet written to the client), as maxUpstreamBody
	// bounds one JSON answer: a member whose answer would pass it is
	// answered with an upstream error instead (errBatchTooLarge). Without
	// it, 256 members' answers of 64 MiB each were held until the last
	// was read, and copied once more into the merged answer.
	maxBatchAnswers = maxUpstreamBody
)

// A member is one forwarded message of a batch.
type member struct {
	p   *plan
	cid string
	ctx context.Context // the client's request context
	// stream is a subscriptions/listen member's request context, which
	// EndStreams ends ([batchOut.run]); nil for another member. end ends
	// it, and req is the request it was sent with, whose token the relay
	// authenticates again before each write ([batchOut.recheck]).
	stream  context.Context
	end     context.CancelCauseFunc
	req     *http.Request
	refused bool          // its token was refused since it was sent
	c       *upstreamCall // set under batchOut.mu
	err     *rpcError
	// held is the bytes of m's answers held in batchOut.answers, charged
	// to batchOut.held; set and cleared under batchOut.mu.
	held int64
}

// serveBatch answers a batch member by member. Refused members are answered
// here; the others are sent downstream as separate requests (a downstream
// speaking protocol 2025-06-18 or later refuses batches), at most
// maxBatchInFlight at a time in the client's order, and their answers
// merged: as one JSON array in the client's order, or, when the client
// accepts an event stream and a downstream answer is one, as an event
// stream relaying every answer as it arrives (those read before the first
// stream began come first). A member's answer is one response at most,
// with the member's own id ([batchOut.collect], [batchOut.relay]).
func (g *Gateway) serveBatch(w http.ResponseWriter, r *http.Request, pol *policy.Policy, pr *policy.Principal, cid string, plans []plan, start time.Time) {
	var members []*member
	for i := range plans {
		if plans[i].local == nil {
			members = append(members, &member{p: &plans[i], cid: cid, ctx: r.Context()})
		}
	}
	b := &batchOut{g: g, w: w, pr: pr, cid: cid, lst: &listing{r: r, pol: pol, pr: pr, cid: cid, start: start, together: true}, plans: plans, members: members,
		acceptSSE: acceptsSSE(r.Header), answers: make(map[*plan][][]byte, len(members))}
	b.out.timeout, b.out.origin = g.timeout, time.Now()
	defer b.out.watch()()
	b.runAll(r)
	g.withheldSummary(b.lst)
	sseMode := b.ew != nil
	if !sseMode {
		b.withholdShown()
		b.writeJSON()
	}
	intercepted := len(plans) - len(members)
	g.log.Info("upstream", "cid", cid, "upstream", g.upstreamStr, "forwarded", len(members), "intercepted", intercepted,
		"sse", sseMode, "ms", float64(g.now().Sub(start).Microseconds())/1000)
}

// batchOut merges the answers of one batch's members into the client's
// response. Its methods are safe for concurrent use.
type batchOut struct {
	g         *Gateway
	w         http.ResponseWriter
	pr        *policy.Principal
	cid       string
	lst       *listing // for the tools/list members' answers
	plans     []plan
	members   []*member
	acceptSSE bool

	// held counts the bytes of members' answers read and not yet
	// written to the client, bounded by maxBatchAnswers.
	held atomic.Int64

	mu      sync.Mutex
	answers map[*plan][][]byte // answers read, until the response is a stream
	ew      *eventWriter       // non-nil once the response is an event stream

	// out bounds the writes to the client (see [writeGuard]).
	out writeGuard
}

// run forwards m and reads its answer to the end. A redirect is answered
// with an upstream error, as a single request's is ([Gateway.roundTrip]),
// and so is an answer the gateway must read (with Pins, or m a tools/list
// it filters) but cannot read as its client would ([readableAnswer]).
//
// A subscriptions/listen member is sent as a single one is
// ([Gateway.serveStream]): its downstream request ends with its client,
// and EndStreams ends it (its answer then says so, [errStreamsClosed]);
// after EndStreams, it is answered so without being sent.
func (b *batchOut) run(r *http.Request, m *member) {
	listen := m.p.m.listen()
	if listen {
		ctx, end := context.WithCancelCause(r.Context())
		defer end(nil)
		if !b.g.ends.add(&end) {
			b.runEnded(m)
			return
		}
		defer b.g.ends.remove(&end)
		r = r.WithContext(ctx)
		m.stream, m.end, m.req = ctx, end, r
		// Once EndStreams ends it, a write of the batch's answer lasts
		// a second at most, as a single stream's ([cutOnEnd]).
		defer cutOnEnd(r, &b.out)()
	}
	h := outboundHeader(r.Header, b.pr, b.cid)
	memberHeaders(h, m.p.m)
	c, err := b.g.roundTrip(r, b.pr, b.cid, http.MethodPost, h, m.p.m.raw, &b.out, listen)
	if c != nil {
		m.p.call.answered(c.resp.StatusCode)
		if s, sse := c.resp.StatusCode, isSSE(c.resp.Header); (m.p.filter || b.g.pins != nil) && (sse || s >= 200 && s <= 299) && !readableAnswer(c.resp.Header, sse) {
			b.g.refuseUnreadable(b.cid, c.resp)
			c.close()
			c, err = nil, badAnswer(s)
			err.cause = failUnreadable
		}
	}
	b.mu.Lock()
	m.c, m.err = c, err
	b.mu.Unlock()
	if c != nil {
		defer c.close()
		if b.acceptSSE && isSSE(c.resp.Header) {
			b.relay(m)
			return
		}
	}
	msgs, held := b.collect(m)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ew == nil {
		b.answers[m.p] = msgs
		m.held = held
		return
	}
	for _, msg := range msgs {
		b.ew.writeMessage(msg)
	}
	b.held.Add(-held)
	m.written()
}

// runEnded answers m, a subscriptions/listen member run after EndStreams,
// without sending it.
func (b *batchOut) runEnded(m *member) {
	b.g.log.Info("stream refused", "cid", b.cid, "subject", b.pr.Subject, "method", m.p.m.method,
		"reason", streamsClosedReason)
	b.mu.Lock()
	m.err = errStreamsClosed()
	b.mu.Unlock()
	msgs, _ := b.collect(m)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ew == nil {
		b.answers[m.p] = msgs
		return
	}
	for _, msg := range msgs {
		b.ew.writeMessage(msg)
	}
	m.written()
}

// recheck reports whether m's event may be written: m is no
// subscriptions/listen member, or its token still stands for the principal
// it was sent for, as a single listen's ([Gateway.serveStream]). Once it
// does not, m's stream is ended and nothing more of it written.
func (b *batchOut) recheck(m *member) bool {
	switch {
	case m.end == nil:
		return true
	case m.refused:
		return false
	case b.g.sameCaller(m.req, b.pr):
		return true
	}
	m.refused = true
	b.g.log.Info("stream ended", "cid", b.cid, "subject", b.pr.Subject, "reason", tokenRefusedReason)
	m.end(errTokenRefused)
	return false
}

// ended reports whether EndStreams ended m's stream.
func (m *member) ended() bool {
	return m.stream != nil && context.Cause(m.stream) == errStreamsEnded
}

// readFailed returns m's answer to err, the failed read of its
// downstream's answer, and logs the failure unless EndStreams ended it.
func (b *batchOut) readFailed(m *member, n int, err error) *rpcError {
	if m.ended() {
		return errStreamsClosed()
	}
	if m.refused {
		return errUnauthenticated("the stream's bearer token is refused now", true)
	}
	b.g.answerUnread(b.cid, m.c.resp.StatusCode, n, err)
	return errUpstreamFor(err, err == errTimeout, true)
}

// runAll forwards b's members, at most maxBatchInFlight at a time, and
// returns once each has been answered or relayed ([batchOut.run]). A panic
// on a member's goroutine (the operator's log handler's, say) is raised
// again on the request's own once every member is done, as a
// [*memberPanic] (http.ErrAbortHandler as itself): net/http then breaks
// the request's connection, as for a panic of a single call's handler,
// where unrecovered on the member's goroutine it ended the process.
func (b *batchOut) runAll(r *http.Request) {
	slots := make(chan struct{}, maxBatchInFlight)
	var wg sync.WaitGroup
	var first atomic.Pointer[memberPanic]
	for _, m := range b.members {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() {
				if v := recover(); v != nil {
					first.CompareAndSwap(nil, &memberPanic{v: v, stack: debug.Stack()})
				}
				<-slots
				wg.Done()
			}()
			b.run(r, m)
		}()
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		if p.v == http.ErrAbortHandler {
			panic(p.v)
		}
		panic(p)
	}
}

// A memberPanic is the panic, v, of a batch member's goroutine, raised
// again on the request's ([batchOut.runAll]), with the stack of the
// member's goroutine where it began.
type memberPanic struct {
	v     any
	stack []byte
}

func (p *memberPanic) Error() string {
	return fmt.Sprintf("%v (on a batch member's goroutine)\n\n%s", p.v, p.stack)
}

// Unwrap returns v if it is an error.
func (p *memberPanic) Unwrap() error {
	err, _ := p.v.(error)
	return err
}

// copyHeaderLocked copies to the client the header of the first member, in
// the client's order, that has a downstream answer.
func (b *batchOut) copyHeaderLocked() {
	for _, m := range b.members {
		if m.c != nil {
			copyResponseHeader(b.w.Header(), m.c.resp.Header, false)
			return
		}
	}
}

// stream turns the response into an event stream, the first time it is
// called: it writes the local refusals and the answers read so far, which
// later answers follow as they arrive.
func (b *batchOut) stream() *eventWriter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ew != nil {
		return b.ew
	}
	b.copyHeaderLocked()
	b.w.Header().Set("Content-Type", "text/event-stream")
	b.w.Header().Set("Cache-Control", "no-cache, no-transform")
	b.w.WriteHeader(http.StatusOK)
	b.out.w = b.w // before the first write: see [writeGuard.check]
	b.ew = &eventWriter{out: &b.out, rc: http.NewResponseController(b.w)}
	for i := range b.plans {
		if p := &b.plans[i]; p.local != nil && !p.m.notification() {
			b.ew.writeMessage(p.local.appendResponse(nil, p.m.id, b.cid))
		}
	}
	for i := range b.plans {
		for _, msg := range b.answers[&b.plans[i]] {
			b.ew.writeMessage(msg)
		}
	}
	for _, m := range b.members {
		b.held.Add(-m.held)
		m.held = 0
		if _, ok := b.answers[m.p]; ok {
			m.written()
		}
	}
	b.answers = nil
	b.out.flush(b.ew.rc) // the header at once, whether or not an event follows
	return b.ew
}

// relay relays m's event stream into the merged one, event by event: the
// downstream's requests and notifications unchanged (but for the lines
// some client splits in two: [eventWriter.write], [breaksLine]), and m's
// answer, the first response, with m's own id ([withID]), in an event
// every client reads; other responses, and data a client could not read as
// one request, notification or response (an array of responses, not
// JSON), are dropped ([batchOut.dropped]). An event every client skips
// for its name ([event.ignored]) is no message: neither relayed nor
// taken for the answer.
func (b *batchOut) relay(m *member) {
	ew := b.stream()
	var tf func([]byte) []byte
	switch {
	case m.p.filter:
		tf = func(msg []byte) []byte { return b.g.filterTools(b.lst, msg) }
	case b.g.pins != nil:
		// Any answer may carry a listing (see [Gateway.guardAnswer]).
		tf = func(msg []byte) []byte { return b.g.guardAnswer(b.lst, msg) }
	default:
		// Unchanged, but with a tf all the same: the write then drops a
		// line other than data that some client ends a line in
		// ([breaksLine]), after which that client would read a data line
		// never classified here (an answer with any id).
		tf = func(msg []byte) []byte { return msg }
	}
	answered, dropped := false, 0
	answer := func(msg []byte) []byte {
		if msg = b.answer(m, msg); msg != nil {
			answered = true
			m.p.call.read(msg)
		}
		return msg
	}
	var rd io.Reader = m.c
	if m.stream != nil {
		// A subscriptions/listen's stream, silent until something
		// changes: no timeout once its header has come, as a single
		// one's ([Gateway.passThrough]).
		rd = m.c.resp.Body
	}
	err := readEvents(rd, func(ev *event) {
		if !b.recheck(m) {
			return
		}
		if !ev.hasData {
			ew.write(ev, tf, true) // no message: a client dispatches none
			return
		}
		if len(ev.data) == 0 || ev.ignored() {
			// An empty data field (a go-sdk downstream's priming
			// event, whose id is stripped here), or an event every
			// client skips for its name: a client dispatches nothing,
			// so nothing was dropped.
			return
		}
		switch kind, _ := classify(ev.data); {
		case kind == kindServer:
			ew.write(ev, tf, true)
		case kind == kindResponse && m.expectsAnswer() && !answered:
			if ev.named && string(ev.name) != "message" {
				// A name that some client reads as "message" and
				// another does not ([event.ignored]): without it,
				// every client reads the answer.
				ev = ev.unnamed()
			}
			ew.write(ev, answer, true)
			if !answered {
				dropped++ // unreadable (see [batchOut.answer])
				return
			}
			m.checkGone() // after the write, which the guard may end
		default:
			dropped++
		}
	})
	b.dropped(m, dropped)
	var msgs [][]byte
	switch {
	case answered || err == nil && !m.expectsAnswer():
		m.p.call.finish("")
	case err != nil:
		msgs = b.g.synth(m, b.readFailed(m, -1, err), "UPSTREAM_UNAVAILABLE")
	default:
		msgs = b.g.synth(m, noResponse(m.c.resp.StatusCode), "UPSTREAM_UNAVAILABLE")
	}
	for _, msg := range msgs {
		ew.writeMessage(msg)
	}
}

// answer returns msg, a response to m ([classify]), as m's answer: filtered
// as m's answers are ([Gateway.filterTools], [Gateway.guardAnswer]), with
// m's id ([withID]); nil when the filter refuses it.
func (b *batchOut) answer(m *member, msg []byte) []byte {
	_, msg = classify(msg)
	switch {
	case m.p.filter:
		msg = b.g.filterTools(b.lst, msg)
	case b.g.pins != nil:
		// Any answer may carry a listing (see [Gateway.guardAnswer]).
		msg = b.g.guardAnswer(b.lst, msg)
	}
	if msg == nil {
		return nil
	}
	return withID(bytes.TrimSpace(msg), m.p.m.id)
}

// dropped logs, once for m, the n messages of m's downstream answer that
// were dropped: responses past the first (or any, when m is not a request
// with an id), and what a client could not read as one message.
func (b *batchOut) dropped(m *member, n int) {
	if n > 0 {
		b.g.log.Warn("upstream answers dropped", "cid", b.cid, "upstream", b.g.upstreamStr, "method", m.p.m.method,
			"tool", m.p.m.tool, "count", n)
	}
}

// expectsAnswer reports whether m is answered: a request with an id, not a
// notification or a client's response to a server request.
func (m *member) expectsAnswer() bool {
	return m.p.m.id != nil && !m.p.m.response
}

// withholdShown removes from the answers held, once all are read, the
// tools of a name that one member's answer showed and another's withheld
// for the pins ([Gateway.listable]): the downstream listed it with the
// approved definition and another in one batch, as in one listing
// ([Pins.listedAmong]). An event stream's answers are relayed as they
// come, and one written cannot be taken back.
func (b *batchOut) withholdShown() {
	l := b.lst
	l.mu.Lock()
	var drop map[string]bool
	for key := range l.shown {
		if l.changed[key] {
			if drop == nil {
				drop = map[string]bool{}
			}
			drop[key] = true
		}
	}
	l.mu.Unlock()
	if drop == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for p, msgs := range b.answers {
		for i, msg := range msgs {
			msgs[i] = dropTools(msg, drop)
		}
		b.answers[p] = msgs
	}
}

// dropTools returns msg, one JSON-RPC message already filtered
// ([Gateway.filterTools]), without the tools of its result whose names'
// keys (pinKey) drop holds; msg itself when it has none.
func dropTools(msg []byte, drop map[string]bool) []byte {
	if len(msg) == 0 || msg[0] != '{' {
		return msg
	}
	result, ok := memberOf(msg, "result")
	if !ok || result == nil || result[0] != '{' {
		return msg
	}
	tools, ok := memberOf(result, "tools")
	if !ok || tools == nil || tools[0] != '[' {
		return msg
	}
	out, n := []byte{'['}, 0
	forEachElement(tools, 0, func(tool []byte) {
		if tool[0] == '{' {
			if v, ok := memberOf(tool, "name"); ok && v != nil {
				if s, ok := jsonString(v); ok && drop[pinKey(clientName(s))] {
					n++
					return
				}
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, tool...)
	})
	if n == 0 {
		return msg
	}
	out = append(out, ']')
	newResult := rewriteObject(result, func(k, v []byte) []byte {
		if string(k) == "tools" {
			return out
		}
		return v
	})
	return rewriteObject(msg, func(k, v []byte) []byte {
		if string(k) == "result" {
			return newResult
		}
		return v
	})
}

// writeJSON answers with one JSON array in the client's order, once every
// member's answer has been read. The answers are written as they are held,
// not copied into one buffer first.
func (b *batchOut) writeJSON() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.copyHeaderLocked()
	var all [][]byte
	size := 0
	for i := range b.plans {
		p := &b.plans[i]
		var msgs [][]byte
		if p.local != nil {
			if p.m.notification() {
				continue
			}
			msgs = [][]byte{p.local.appendResponse(nil, p.m.id, b.cid)}
		} else {
			msgs = b.answers[p]
		}
		for _, msg := range msgs {
			all = append(all, msg)
			size += len(msg) + 1 // and a comma or a bracket
		}
	}
	w := b.w
	defer func() {
		for _, m := range b.members {
			if _, ok := b.answers[m.p]; ok {
				m.written()
			}
		}
	}()
	if len(all) == 0 {
		if len(b.members) > 0 {
			w.WriteHeader(http.StatusAccepted)
		} else {
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(size+1))
	w.WriteHeader(http.StatusOK)
	b.out.w = w // no member writes any more
	sep := []byte{'['}
	for _, msg := range all {
		b.out.write(sep)
		b.out.write(msg)
		sep[0] = ','
	}
	b.out.write([]byte{']'})
}

// memberHeaders fixes the protocol 2026-07-28 standard headers for a member
// sent alone: the client's describe the batch, not the member.
func memberHeaders(h http.Header, m *message) {
	hadMethod := h.Get("Mcp-Method") != ""
	for k := range h {
		if k == "Mcp-Method" || k == "Mcp-Name" || strings.HasPrefix(k, "Mcp-Param-") {
			delete(h, k)
		}
	}
	if hadMethod && m.hasMethod {
		h.Set("Mcp-Method", m.method)
		if m.tool != "" {
			h.Set("Mcp-Name", m.tool)
		}
	}
}

// collect reads a member's answer and returns it: the first JSON-RPC
// response (in an event stream, the first in an event a client reads:
// [event.ignored]), with m's id ([batchOut.answer]), for a request with an id;
// nothing otherwise (server requests and notifications on an event stream
// are dropped: the client did not accept a stream; other responses and
// response arrays too, logged: [batchOut.dropped]). It also returns the
// bytes it holds, charged to b.held: an answer that would take b.held past
// maxBatchAnswers is not kept, and the member is answered with
// errBatchTooLarge.
func (b *batchOut) collect(m *member) ([][]byte, int64) {
	g := b.g
	if m.err != nil {
		if m.err.unsent {
			m.p.call.refund()
			if m.err.status == 499 {
				m.p.call.notForwarded()
			}
		} else if g.neverSent(m.err) {
			m.p.call.refund()
		}
		e := m.err
		if e.status == 499 && m.ended() {
			// EndStreams ended m's stream before its header came.
			e = errStreamsClosed()
		} else if e.status == 499 {
			// A member left unsent by its request's deadline is answered
			// as a single request is, not as though its client had gone.
			e = deadlineAnswer(m.ctx, e)
		}
		return g.synth(m, e, ""), 0
	}
	var answer []byte
	dropped := 0
	take := func(msg []byte) {
		if !m.expectsAnswer() || answer != nil {
			dropped++
		} else if answer = b.answer(m, msg); answer == nil {
			dropped++
		} else {
			m.p.call.read(answer)
		}
	}
	cr := &chargedReader{r: m.c, held: &b.held}
	fail := func(e *rpcError) ([][]byte, int64) {
		b.held.Add(-cr.n)
		if e == nil {
			g.log.Warn("upstream answer refused: the batch answers over the limit", "cid", b.cid, "subject", b.pr.Subject,
				"method", m.p.m.method, "tool", m.p.m.tool, "outcome", "UPSTREAM_UNAVAILABLE", "limit", maxBatchAnswers)
			e = errBatchTooLarge()
			e.cause = failBatchLimit
		}
		return g.synth(m, e, "UPSTREAM_UNAVAILABLE"), 0
	}
	if isSSE(m.c.resp.Header) {
		over := false
		err := readEvents(m.c, func(ev *event) {
			if over || len(ev.data) == 0 || ev.ignored() {
				// No message: a priming event's empty data, or an
				// event every client skips for its name.
				return
			}
			switch kind, _ := classify(ev.data); {
			case kind == kindServer:
			case kind == kindResponse && m.expectsAnswer() && answer == nil:
				if !cr.charge(len(ev.data)) {
					over = true
					return
				}
				take(bytes.Clone(ev.data))
			default:
				dropped++
			}
		})
		b.dropped(m, dropped)
		switch {
		case over:
			return fail(nil)
		case err != nil && answer == nil:
			return fail(b.readFailed(m, int(cr.n), err))
		}
	} else {
		// A byte past the bound, so that an answer over it also takes
		// the batch past maxBatchAnswers (which is no larger) and is
		// refused as too large, not read cut short as no JSON.
		body, err := io.ReadAll(io.LimitReader(cr, maxUpstreamBody+1))
		switch {
		case err == errOverBatchLimit:
			return fail(nil)
		case err != nil:
			return fail(b.readFailed(m, len(body), err))
		}
		switch kind, t := classify(body); {
		case kind == kindResponse:
			take(t)
		case kind == kindOther && len(t) > 0:
			dropped++ // an array with answers in it, not JSON, an ambiguous object
		}
		b.dropped(m, dropped)
	}
	if answer == nil {
		if m.expectsAnswer() {
			return fail(noResponse(m.c.resp.StatusCode))
		}
		b.held.Add(-cr.n)
		return nil, 0
	}
	// The call is finished once its answer is written ([member.written]).
	return [][]byte{answer}, cr.n
}

// chargedReader reads r and charges every byte read to held, the bytes a
// batch holds: a Read that takes held past maxBatchAnswers fails with
// errOverBatchLimit. n is what it charged.
type chargedReader struct {
	r    io.Reader
	held *atomic.Int64
	n    int64
}

func (c *chargedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && !c.charge(n) {
		return n, errOverBatchLimit
	}
	return n, err
}

// charge charges n bytes, and reports whether held is still within
// maxBatchAnswers.
func (c *chargedReader) charge(n int) bool {
	c.n += int64(n)
	return c.held.Add(int64(n)) <= maxBatchAnswers
}

// errOverBatchLimit ends the reading of a batch member's answer that
// would take the batch past maxBatchAnswers.
var errOverBatchLimit = errors.New("gateway: a batch's answers over the limit")

// errBatchTooLarge answers a batch member whose answer was not kept, as
// the batch's answers would have passed maxBatchAnswers.
func errBatchTooLarge() *rpcError {
	e := errUpstream(false)
	e.message = "Upstream answer too large: a batch's answers are held to " + strconv.Itoa(maxBatchAnswers>>20) + " MiB in all"
	return e
}

// written finishes m's call, whose answers collect read, once they have
// been written to the client (or the write failed: the guard ended it, or
// the client went away, which its outcome record then says). Until then
// the call keeps its in-flight place, as a single call does while its
// answer is relayed.
func (m *member) written() {
	m.checkGone()
	m.p.call.finish("")
}

// checkGone notes in m's outcome record that the client went away, if it
// has, before m's answer is written.
func (m *member) checkGone() {
	if m.ctx != nil && m.ctx.Err() != nil {
		m.p.call.clientWentAway()
	}
}

func badAnswer(status int) *rpcError {
	e := errUpstream(false)
	e.message = "Upstream answered without a JSON-RPC response"
	e.data = map[string]any{"upstream_status": status}
	return e
}

// noResponse is badAnswer(status) for a batch member's answer read whole
// that held no JSON-RPC response for it.
func noResponse(status int) *rpcError {
	e := badAnswer(status)
	e.cause = failNoResponse
	return e
}

// synth finishes m's call with code and answers it with e (nothing for a
// notification or a client response).
func (g *Gateway) synth(m *member, e *rpcError, code string) [][]byte {
	if code == "" {
		code = e.contract
	}
	m.checkGone()
	m.p.call.answeredErr(e)
	m.p.call.finish(code)
	if m.p.m.id == nil || m.p.m.response {
		return nil
	}
	return [][]byte{e.appendResponse(nil, m.p.m.id, m.cid)}
}

// Kinds of message a downstream sends in answer to a batch member
// ([classify]).
const (
	kindOther    = iota // not one message a client reads as below
	kindResponse        // a response: a result or an error, no method
	kindServer          // a request or a notification: a method, no result or error
)

// classify returns the kind of msg, one JSON-RPC message a downstream sent
// (a JSON body, or an event's data), and msg without the JSON white space
// around it, which a client skips. An object that names "id", "result",
// "error" or "method" twice or under another spelling ([ambiguousKey]), or
// has a method and a result or an error, is kindOther: clients disagree
// about what it is. So is an array of messages, but one of requests and
// notifications only (a server's batch, which has no answer in it).
func classify(msg []byte) (int, []byte) {
	msg = bytes.Trim(msg, " \t\r\n")
	if len(msg) == 0 || !json.Valid(msg) {
		return kindOther, msg
	}
	switch msg[0] {
	case '[':
		n, server := 0, true
		forEachElement(msg, 0, func(v []byte) {
			n++
			if k, _ := classify(v); v[0] != '{' || k != kindServer {
				server = false
			}
		})
		if n > 0 && server {
			return kindServer, msg
		}
		return kindOther, msg
	case '{':
	default:
		return kindOther, msg
	}
	var seen [4]int // id, result, error, method
	bad := false
	forEachField(msg, func(k, _ []byte) *rpcError {
		for i, name := range [...]string{"id", "result", "error", "method"} {
			switch {
			case string(k) == name:
				seen[i]++
			case ambiguousKey(k, name):
				bad = true
			}
		}
		return nil
	})
	switch {
	case bad || seen[0] > 1 || seen[1] > 1 || seen[2] > 1 || seen[3] > 1:
		return kindOther, msg
	case seen[3] == 1 && seen[1]+seen[2] == 0:
		return kindServer, msg
	case seen[3] == 0 && seen[1]+seen[2] > 0:
		return kindResponse, msg
	}
	return kindOther, msg
}

// withID returns msg, a JSON object without white space around it that
// names "id" at most once ([classify]), with id as its id: the value of
// its "id" member replaced, or, without one, an "id" member put first. The
// rest is kept byte for byte; msg itself is returned when its id is id.
func withID(msg, id []byte) []byte {
	i := skipWS(msg, 1)
	for msg[i] != '}' {
		kEnd := skipValue(msg, i)
		key := msg[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, _ := jsonString(msg[i:kEnd])
			key = []byte(s)
		}
		v := skipWS(msg, skipWS(msg, kEnd)+1) // past the ':'
		vEnd := skipValue(msg, v)
		if string(key) == "id" {
			if bytes.Equal(msg[v:vEnd], id) {
				return msg
			}
			return slices.Concat(msg[:v], id, msg[vEnd:])
		}
		if i = skipWS(msg, vEnd); msg[i] == '}' {
			break
		}
		i = skipWS(msg, i+1) // past the ','
	}
	sep := []byte{','}
	if msg[skipWS(msg, 1)] == '}' {
		sep = nil
	}
	return slices.Concat(msg[:1], []byte(`"id":`), id, sep, msg[1:])
}

package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/gaveup"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// A plan is the gateway's verdict on one message of a POST.
type plan struct {
	m       *message
	local   *rpcError // refused here; nil means forward
	filter  bool      // a tools/list whose result must be filtered
	call    *callState
	outcome string // for the summary log
}

// callState follows one allowed tools/call until its response is relayed.
type callState struct {
	g        *Gateway
	pr       *policy.Principal
	cid      string
	ri       reqInfo
	tool     string
	class    string
	args     []byte
	cost     float64
	start    time.Time
	lim      limiter.Decision
	hasLim   bool
	done     bool
	refunded bool
	// reply is what the response says, where the gateway read it
	// ([callState.read]), and status the downstream's HTTP status when not
	// a 2xx ([callState.answered]): small, in the room the bools leave.
	reply  replyKind
	fail   failKind // why there was no answer, or a cut one ([callState.failed])
	status int16
	// tap: the answer is read for a next round it asks for (see rounds.go).
	tap bool
	// failOpen: the limiter admitted the call because its store failed.
	failOpen bool
	detail   string // the outcome record's detail
	// round is the next round the call is, taken from the gateway's
	// memory: it was charged nothing (rounds.go); nil for any other call.
	round *takenRound
	price float64 // the call's cost before a next round's (see rounds.go)
}

// restoreRound remembers again the next round c is, refused before it ran
// (by the gateway before it was sent, or by the downstream as retryable):
// its client may send it again.
func (c *callState) restoreRound() {
	if c.round != nil {
		c.g.rounds.restore(c.round.key, c.round.entry)
		c.round = nil
	}
}

// refund gives back the calls and cost the limiter charged the call, which
// is refused before it is forwarded, and makes its record's cost what
// stays charged (nothing after a refund right after the decision; see
// limiter.Limiter.Kept); call it before finish, at most once. A refund the
// limiter could not make is logged, and the record keeps the charge.
func (c *callState) refund() {
	if c == nil || c.done || c.refunded {
		return
	}
	c.refunded = true
	c.restoreRound()
	if c.hasLim {
		now := c.g.now()
		if err := c.g.lim.Refund(context.Background(), now, c.lim); err != nil {
			c.g.log.Error("the charge of a refused call was not given back", "cid", c.cid, "tool", c.tool, "err", err)
			return
		}
		c.cost *= c.g.lim.Kept(now, c.lim)
		return
	}
	c.cost = 0
}

// The outcome record's details of a call whose client went away, or whose
// connection to the client was closed (a server's WriteTimeout, its
// shutdown: the gateway cannot tell these apart): before its answer was
// relayed, or before it was sent downstream (it was not).
const (
	clientGone       = "the client went away, or its connection was closed, before the answer was relayed"
	clientGoneUnsent = "not forwarded: the client went away, or its connection was closed, before the call was sent downstream"
)

// clientGoneUndecided is the outcome record's detail of a call the limiter
// refused as its request's context had ended (or its deadline passed)
// before it decided: the client's leaving, not the limiter's failure.
const clientGoneUndecided = "not forwarded: the client went away (the request's context ended) before the limiter decided"

// clientGoneUnchecked is the outcome record's detail of a call refused as
// the authenticator could not judge its token once its request's context
// had ended (or its deadline passed): the client's leaving ended the
// check, not the authorization server's failure.
const clientGoneUnchecked = "not forwarded: the client went away (the request's context ended) before its token was checked"

// clientWentAway notes in the call's outcome record that its client went
// away (or its connection was closed) before its answer was relayed,
// unless the record says already that the call was not forwarded.
func (c *callState) clientWentAway() {
	if c != nil && c.detail == "" {
		c.detail = clientGone
	}
}

// notForwarded notes in the call's outcome record that it was not sent
// downstream because its client had gone.
func (c *callState) notForwarded() {
	if c != nil {
		c.detail = clientGoneUnsent
	}
}

// A replyKind is what a response the gateway read (a batch member's, any
// with Pins) says, for the call's outcome record: none read yet, nothing of
// note, a JSON-RPC error, or a result that is a tool error (isError true),
// which the record says as the guard's does.
type replyKind uint8

const (
	replyNone replyKind = iota
	replyResult
	replyRPCError
	replyToolError
)

// answered notes in the call's outcome record the HTTP status of the
// downstream's answer, when it is not a 2xx: "downstream answered HTTP
// 503". A 3xx is never relayed (see [Gateway.roundTrip]).
func (c *callState) answered(status int) {
	if c != nil && (status < 200 || status > 299) {
		c.status = int16(status) // 100 to 999: see [Gateway.sendGuarded]
	}
}

// answeredErr notes the status of e, an upstream error answering the
// call, when e says one ([badAnswer]), and its cause ([rpcError.cause]).
func (c *callState) answeredErr(e *rpcError) {
	if s, ok := e.data["upstream_status"].(int); ok {
		c.answered(s)
	}
	c.failed(e.cause)
}

// failed notes in the call's outcome record why the downstream's exchange
// failed (k, unless failNone), unless a cause is noted already.
func (c *callState) failed(k failKind) {
	if c != nil && c.fail == failNone {
		c.fail = k
	}
}

// read notes in the call's outcome record what msg, the call's JSON-RPC
// response that the gateway read, says when it is a JSON-RPC error or a
// tool error ([replyOf]); a nil msg is none. Only the first is noted: the
// one a client takes (the go-sdk's stops reading there); a later one is
// dropped or ignored.
func (c *callState) read(msg []byte) {
	if c != nil && c.reply == replyNone && msg != nil {
		c.reply = replyOf(msg)
		c.noteRound(msg)
	}
}

// replyOf returns replyRPCError for msg, a JSON-RPC response, valid JSON
// with white space around it, when it has an error, replyToolError when
// its result has isError true, else replyResult.
func replyOf(msg []byte) replyKind {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 || msg[0] != '{' {
		return replyResult
	}
	kind := replyResult
	forEachField(msg, func(k, v []byte) *rpcError {
		switch {
		case string(k) == "error" && v[0] == '{':
			kind = replyRPCError
		case string(k) == "result" && v[0] == '{':
			forEachField(v, func(k, v []byte) *rpcError {
				if string(k) == "isError" && string(v) == "true" {
					kind = replyToolError
				}
				return nil
			})
		}
		return nil
	})
	return kind
}

// outcomeDetail returns the outcome record's detail: the status and reply
// noted, the cause of a failure noted, then the detail noted (the client
// gone), joined with "; ". An answer without a JSON-RPC response whose
// status is noted is told by its status alone, and a timeout once the
// client had gone is not told: the gateway ends the call of a client gone
// one timeout after it was last seen ([upstreamCall.watchClient]).
func (c *callState) outcomeDetail() string {
	d := ""
	switch c.reply {
	case replyRPCError:
		d = "downstream answered a JSON-RPC error"
	case replyToolError:
		d = "tool reported an error"
	}
	if c.status != 0 {
		h := "downstream answered HTTP " + strconv.Itoa(int(c.status))
		switch c.reply {
		case replyNone, replyResult:
			d = h
		case replyRPCError:
			d = h + " with a JSON-RPC error"
		default:
			d = h + "; " + d
		}
	}
	switch {
	case c.fail == failNone, c.fail == failNoResponse && c.status != 0, c.fail == failTimeout && c.detail == clientGone:
	case d == "":
		d = c.fail.phrase(c.g.timeout)
	default:
		d += "; " + c.fail.phrase(c.g.timeout)
	}
	if c.detail != "" {
		if d == "" {
			return c.detail
		}
		d += "; " + c.detail
	}
	return d
}

// finish releases the call's in-flight slot and writes its outcome event.
// code is "" for a relayed answer, else the error-contract name.
func (c *callState) finish(code string) {
	if c == nil || c.done {
		return
	}
	c.done = true
	if c.hasLim {
		c.g.lim.Release(c.lim)
	}
	detail := c.detail
	if c.status != 0 || c.reply > replyResult || c.fail != failNone {
		detail = c.outcomeDetail()
	}
	if c.failOpen {
		detail = joinDetail(audit.DetailFailOpen, detail)
	}
	if c.round != nil {
		// Its cost is 0: the trail says where the logical call's is.
		detail = joinDetail(nextRoundDetail, detail)
	}
	c.g.audit(context.Background(), c.pr, c.cid, c.ri, c.tool, c.class, c.args, audit.PhaseOutcome, code == "", code, detail, c.cost, c.start)
}

// nextRoundDetail begins the outcome record's detail of a next round of a
// multi round-trip, charged nothing (see rounds.go).
const nextRoundDetail = "next round of a multi round-trip, charged with its first"

// joinDetail joins two parts of a record's detail with "; ", either empty.
func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func (g *Gateway) servePost(w http.ResponseWriter, r *http.Request, cid string) {
	start := g.now()
	// The token first: a caller who has none, or a bad one, cannot make
	// the gateway hold MaxBodyBytes of a body (refuseCaller reads at most
	// strangerBody of it).
	pr, aerr := g.authenticate(r)
	if aerr != nil {
		g.refuseCaller(w, r, cid, aerr, start)
		return
	}
	buf, berr := g.readBody(r)
	if berr != nil {
		g.refuseBody(w, r, pr, cid, berr, start)
		return
	}
	defer g.putBuf(buf)
	body := buf.Bytes()
	msgs, batch, perr := parseBody(body)
	if perr != nil {
		g.refuseEnvelope(w, r, pr, cid, perr, start)
		return
	}
	// Refusals that concern the whole request come before any decision,
	// so that they charge no limit: the session's owner (a refused attempt
	// on another's session must not use up that session's budget) and, for
	// a single message, the standard headers.
	if e, reason := g.checkSession(r, pr); e != nil {
		g.refuseSession(w, r, pr, cid, msgs, batch, e, reason, start)
		return
	}
	// One policy decides every message of the request, and filters the
	// listings in its answers, whatever SetPolicy does meanwhile (but for
	// a subscriptions/listen stream's, as a GET's: see serveStream).
	pol := g.pol.Load()
	plans := make([]plan, len(msgs))
	for i := range msgs {
		plans[i] = g.planMessage(r, pol, pr, cid, &msgs[i], batch, start)
	}
	if !batch {
		p := &plans[0]
		if p.local != nil {
			g.refuseMessage(w, cid, pr, p)
			return
		}
		if p.m.listen() {
			g.serveStream(w, r, pr, cid, body, p)
			return
		}
		g.logDecision(cid, pr, p, nil)
		if p.filter {
			g.forwardFiltered(w, r, pol, pr, cid, p, start)
			return
		}
		g.passThrough(w, r, pol, pr, cid, body, p.m, p.call)
		return
	}
	g.serveBatchPlans(w, r, pol, pr, cid, plans, start)
}

// serveBatchPlans logs the decisions of a batch's plans and serves it. A
// subscriptions/listen member holds one of pr's stream places
// (Options.MaxStreams) while the batch runs, as a single one does while its
// stream is open: past the cap it is refused, never sent.
func (g *Gateway) serveBatchPlans(w http.ResponseWriter, r *http.Request, pol *policy.Policy, pr *policy.Principal, cid string, plans []plan, start time.Time) {
	held := 0
	defer func() {
		for range held {
			g.streams.release(pr.Subject)
		}
	}()
	for i := range plans {
		if p := &plans[i]; p.local == nil && p.m.listen() {
			if !g.streams.acquire(pr.Subject) {
				p.local = g.errStreamCap()
				g.audit(r.Context(), pr, cid, infoOf(r), "", "", nil, audit.PhaseOutcome, false, p.local.contract, p.local.message, 0, g.now())
				continue
			}
			held++
		}
	}
	for i := range plans {
		g.logDecision(cid, pr, &plans[i], plans[i].local)
	}
	g.serveBatch(w, r, pol, pr, cid, plans, start)
}

// planMessage decides message m of a POST: refused locally for its standard
// headers, or as [Gateway.decide] judges it.
func (g *Gateway) planMessage(r *http.Request, pol *policy.Policy, pr *policy.Principal, cid string, m *message, batch bool, start time.Time) plan {
	if m.invalid == nil {
		check := checkStandardHeaders
		if batch {
			check = checkMemberHeaders
		}
		if e := check(r.Header, m); e != nil {
			if m.method == "tools/call" {
				g.audit(r.Context(), pr, cid, infoOf(r), m.tool, "", m.args, audit.PhaseOutcome, false, e.contract, e.message, 0, start)
			}
			return plan{m: m, local: e}
		}
	}
	return g.decide(r, pol, pr, cid, m, start)
}

// strangerBody is the most of a POST's body that the gateway reads when
// its caller is not authenticated: enough for the messages of any request
// a client means (for the answer's id, the log and the records), and no
// more, so that callers without a token cannot make it hold MaxBodyBytes
// each.
const strangerBody = 64 << 10

// refuseCaller logs, records and answers the refusal aerr of a POST whose
// caller is not authenticated. It reads the body, when it is at most
// strangerBody long (and MaxBodyBytes), unencoded and in UTF-8
// ([checkBodyCoding]), to answer a single request with its id and record
// each tools/call; another is left unread (the rest of it, past
// strangerBody), and an HTTP/1 connection closed after the answer. An HTTP/2
// stream's unread body is dropped by the server, which resets the stream:
// "Connection: close" there would make it shut down the whole connection
// (a GOAWAY), with the other streams of its client, or of the proxy in
// front that multiplexes many callers on it.
func (g *Gateway) refuseCaller(w http.ResponseWriter, r *http.Request, cid string, aerr *rpcError, start time.Time) {
	var msgs []message
	batch := false
	unread := true
	if limit := min(g.maxBody, strangerBody); checkBodyCoding(r.Header) == nil && r.ContentLength <= limit {
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err == nil && int64(len(body)) <= limit {
			msgs, batch, _ = parseBody(body)
			unread = false
		}
	}
	if unread && r.ProtoMajor < 2 {
		w.Header().Set("Connection", "close")
	}
	var id []byte
	request := false
	if !batch && len(msgs) == 1 {
		id = msgs[0].id
		request = id != nil && !msgs[0].response
	}
	// A call's record has no detail, as the guard's record of an
	// unauthenticated call; but one the authenticator could not judge
	// says so: its UPSTREAM_UNAVAILABLE is not the downstream's. Nor is
	// it the authorization server's when the request's context had ended
	// (or its deadline passed): that ended the check.
	detail := ""
	if aerr.contract != "UNAUTHENTICATED" {
		detail = aerr.message
		if gaveup.Err(r.Context()) != nil {
			detail = clientGoneUnchecked
		}
	}
	g.auditRefusal(r, nil, cid, msgs, aerr, detail, start)
	g.logRefusedCaller(cid, "", aerr)
	g.writeErrorOf(w, aerr, id, cid, request)
}

// logRefusedCaller logs the refusal aerr of a request's caller (method:
// a GET's or a DELETE's; "" for a POST), with why its token was refused
// where the authenticator said (rpcError.why).
func (g *Gateway) logRefusedCaller(cid, method string, aerr *rpcError) {
	args := []any{"cid", cid}
	if method != "" {
		args = append(args, "method", method)
	}
	args = append(args, "outcome", aerr.contract, "code", aerr.code, "reason", aerr.message)
	if aerr.why != "" {
		args = append(args, "why", aerr.why)
	}
	g.log.Warn("deny", args...)
}

// refuseEnvelope logs, records and answers the refusal perr of a POST
// whose body is not a JSON-RPC message or batch.
func (g *Gateway) refuseEnvelope(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, perr *rpcError, start time.Time) {
	g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "outcome", perr.contract, "code", perr.code, "reason", perr.message)
	if g.sink != nil {
		g.audit(r.Context(), pr, cid, infoOf(r), "", "", nil, audit.PhaseOutcome, false, perr.contract, perr.message, 0, start)
	}
	g.writeError(w, perr, nil, cid)
}

// refuseSession logs, records and answers the refusal e of a POST for its
// session ([Gateway.checkSession]), for reason: one log line for each of
// its messages, as each decision is logged.
func (g *Gateway) refuseSession(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, msgs []message, batch bool, e *rpcError, reason string, start time.Time) {
	for i := range msgs {
		m := &msgs[i]
		method := m.method
		if m.response {
			method = "(response)"
		}
		g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", method, "tool", m.tool,
			"outcome", e.contract, "code", e.code, "reason", reason)
	}
	g.auditRefusal(r, pr, cid, msgs, e, e.message, start)
	var id []byte
	if !batch {
		id = msgs[0].id
	}
	g.writeErrorOf(w, e, id, cid, id != nil && !batch && !msgs[0].response)
}

// refuseMessage logs and answers the local refusal of a POST's single
// message p: 204 without a body for a notification.
func (g *Gateway) refuseMessage(w http.ResponseWriter, cid string, pr *policy.Principal, p *plan) {
	g.logDecision(cid, pr, p, p.local)
	if p.m.notification() {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	g.writeErrorOf(w, p.local, p.m.id, cid, p.m.id != nil && !p.m.response)
}

// checkSession refuses a request that carries more than one Mcp-Session-Id
// (only one could be checked; a downstream might read another) or one that
// is not a valid session id ([validSessionID]), with 400, or the id of a
// session the caller may not use (see [sessions.allows]), with 404, and
// gives the reason to log. It binds nothing: an unseen id is bound when a
// request carrying it is sent downstream ([Gateway.roundTrip]), so a
// request refused here or by a later decision leaves it bound to no one.
func (g *Gateway) checkSession(r *http.Request, pr *policy.Principal) (*rpcError, string) {
	ids := r.Header[hdrSession]
	switch {
	case len(ids) > 1:
		return errInvalidRequest("more than one " + hdrSession + " header"), "more than one session id"
	case len(ids) == 0:
		return nil, ""
	case !validSessionID(ids[0]):
		return errSessionID(), "invalid session id"
	case !g.sessions.allows(ids[0], pr.Subject):
		return errSession(), "session owned by another principal or no room"
	}
	return nil, ""
}

// checkStandardHeaders refuses a single request whose Mcp-Method or Mcp-Name
// header (protocol 2026-07-28 standard headers) contradicts its body: a
// downstream that routes on the header must not run something other than
// what was authorized.
func checkStandardHeaders(h http.Header, m *message) *rpcError {
	if v := h["Mcp-Method"]; len(v) > 0 && (len(v) > 1 || !m.hasMethod || v[0] != m.method) {
		return errInvalidRequest("Mcp-Method header does not match the body")
	}
	if v := h["Mcp-Name"]; len(v) > 0 && m.method == "tools/call" && (len(v) > 1 || v[0] != m.tool) {
		return errInvalidParams("Mcp-Name header does not match params.name")
	}
	return nil
}

// checkMemberHeaders refuses a batch member whose method or tool name,
// which the gateway sends as its Mcp-Method and Mcp-Name headers when the
// client sent Mcp-Method ([memberHeaders]), cannot be sent as a header
// value exactly as it is ([validFieldValue]): a downstream that routes on
// the header would read another name than the one authorized. parseMessage
// refuses every such method and tool name already, so neither refusal
// fires today; the check stays so that the headers the gateway builds do
// not rest on the envelope's checks alone.
func checkMemberHeaders(h http.Header, m *message) *rpcError {
	if headerValue(h, "Mcp-Method") == "" || !m.hasMethod {
		return nil
	}
	if !validFieldValue(m.method) {
		return errInvalidRequest("method cannot be sent as the Mcp-Method header")
	}
	if !validFieldValue(m.tool) {
		return errInvalidParams("params.name cannot be sent as the Mcp-Name header")
	}
	return nil
}

// decide authorizes one message. Only tools/call is subject to the policy;
// other requests, notifications and client responses are forwarded.
func (g *Gateway) decide(r *http.Request, pol *policy.Policy, pr *policy.Principal, cid string, m *message, start time.Time) plan {
	p := plan{m: m}
	if m.invalid != nil {
		p.local = m.invalid
		if m.method == "tools/call" && g.sink != nil {
			// A refused tools/call is recorded like any other denial
			// (without its arguments, which were not understood); one
			// refused for its name's characters has no tool, and the
			// name, escaped and cut, in its detail.
			detail := m.invalid.message
			if m.badName != "" {
				detail += ": " + quoted(m.badName)
			}
			g.audit(r.Context(), pr, cid, infoOf(r), m.tool, "", nil, audit.PhaseOutcome, false, m.invalid.contract, detail, 0, start)
		}
		return p
	}
	if strings.EqualFold(m.method, "tools/list") && (g.filter || g.pins != nil) {
		p.filter = true
	}
	if m.method != "tools/call" {
		return p
	}
	ri := infoOf(r)
	var args policy.Args
	var ra *rawArgs
	if pol.HasArgLimits(m.tool) || g.cost != nil {
		raw := m.args
		if g.cost != nil {
			// m.args is a slice of the pooled body, given back (and read
			// into by the next request) when the handler returns; a Cost
			// function may keep args and read it later (to bill in
			// another goroutine): its view reads a copy of its own.
			raw = bytes.Clone(raw)
		}
		ra = newRawArgs(raw)
		args = ra
	}
	d := pol.Decide(pr, m.tool, args)
	class := ""
	if d.Rule != nil {
		class = d.Rule.Class.String()
	}
	if !d.Allowed() {
		p.local = g.denial(pol, pr, m.tool, d)
		if p.local.status == http.StatusNotFound && headerValue(r.Header, hdrSession) != "" {
			// A 404 to a request naming a session says the session has
			// ended (the MCP transport): a client following it (mcp-go)
			// starts a new one, and reads no error.
			p.local.status = http.StatusBadRequest
		}
		detail := d.Reason
		if _, ruled := pol.Resolve(m.tool); ruled && d.Code == policy.NotFound {
			// The caller is told what an unknown tool's caller is; the
			// trail tells a probe of a hidden tool from a missing name.
			detail = audit.DetailHidden
		}
		g.audit(r.Context(), pr, cid, ri, m.tool, class, m.args, audit.PhaseOutcome, false, p.local.contract, detail, 0, start)
		return p
	}
	if d.Rule.Confirm {
		p.local = confirmRefusal(m.tool)
		g.audit(r.Context(), pr, cid, ri, m.tool, class, m.args, audit.PhaseOutcome, false, p.local.contract, p.local.message, 0, start)
		return p
	}
	if g.pins != nil {
		if v := g.pins.callable(m.tool); v != pinOK {
			p.local = pinRefusal(v, m.tool)
			g.audit(r.Context(), pr, cid, ri, m.tool, class, m.args, audit.PhaseOutcome, false, p.local.contract, p.local.message, 0, start)
			return p
		}
	}
	c := &callState{g: g, pr: pr, cid: cid, ri: ri, tool: m.tool, class: class, args: m.args, start: start}
	c.cost = d.Rule.Cost
	if g.cost != nil {
		if ra.broken {
			// Read as absent here, such a field may be read as its last
			// spelling downstream (encoding/json into a struct matches
			// "AMOUNT" to amount): no Cost can price the call.
			p.local = errInvalidParams("an argument is named twice (or twice under case folding): the call's cost cannot be read")
			g.audit(r.Context(), pr, cid, ri, m.tool, class, m.args, audit.PhaseOutcome, false, p.local.contract, p.local.message, 0, start)
			return p
		}
		var ok bool
		if c.cost, ok = g.priceCall(cid, m.tool, d.Rule.Name, args); !ok {
			p.local = errCostFailed()
			g.audit(r.Context(), pr, cid, ri, m.tool, class, m.args, audit.PhaseOutcome, false, p.local.contract, "cost function failed", 0, start)
			return p
		}
	}
	if g.lim != nil {
		// The session key: the session id, or with none (stateless HTTP)
		// the caller's own, as in the library's pipeline, never one key
		// shared by every caller. Both are prefixed: a client chooses its
		// session id freely and could otherwise name another caller's key.
		// The id is the session table's key ([sessionKey]): its case
		// does not make another session.
		sess := "sid:" + sessionKey(ri.session)
		if ri.session == "" {
			sess = "user:" + pr.Subject
		}
		calls := 1
		c.price = c.cost
		if m.state != "" {
			k := newRoundKey(pr.Subject, m.tool, m.args, m.state, class, c.price)
			if e, ok := g.rounds.take(k, g.now()); ok {
				// The next round of a call charged when it asked.
				calls, c.cost = 0, 0
				c.round = &takenRound{k, e}
			}
		}
		ld := g.lim.AllowAt(r.Context(), g.now(), limiter.Request{
			Session: sess, User: pr.Subject, Tool: m.tool,
			Write: d.Rule.Class == policy.Write, Calls: calls, Cost: c.cost,
		})
		if !ld.Allowed {
			c.restoreRound() // refused: still to come
		}
		if ld.Err != nil {
			g.limiterFailed(r.Context(), cid, m.tool, ld)
		}
		if !ld.Allowed {
			g.lim.Release(ld)
			p.local = limitError(ld)
			detail := p.local.message
			if ld.Err != nil && gaveup.Err(r.Context()) != nil {
				// The limiter refuses such a call whatever its store
				// and fail-open options say: the client's leaving. One
				// whose deadline passed is answered as a call its
				// deadline left unsent is, not as the limiter's failure.
				p.local = deadlineAnswer(r.Context(), p.local)
				detail = clientGoneUndecided
			}
			// Nothing was charged: the record's cost is 0 (audit.Event.Cost).
			g.audit(r.Context(), pr, cid, ri, m.tool, class, m.args, audit.PhaseOutcome, false, p.local.contract, detail, 0, start)
			return p
		}
		c.lim, c.hasLim, c.tap = ld, true, true
		// Admitted because the store failed (fail open): its record says
		// it ran uncapped.
		c.failOpen = ld.Err != nil
	}
	if d.Rule.Class == policy.Write && g.sink != nil {
		if gaveup.Err(r.Context()) != nil {
			// The client went away, or its deadline passed, before the
			// intent was begun (a batch's later member): the call cannot
			// be sent (roundTrip), so no record of it is begun either.
			c.refund()
			c.notForwarded()
			p.local = deadlineAnswer(r.Context(), errClientGone(true))
			c.finish(p.local.contract)
			return p
		}
		e := g.event(pr, cid, ri, m.tool, class, m.args, audit.PhaseIntent, true, "", "", 0, start) // the outcome carries the charge, once
		// Bounded by Timeout: a sink that stops answering without
		// failing (a PostgreSQL server whose host froze) would hold the
		// call, and forward it however late once it answered; and by the
		// request's deadline, if sooner. Not by the client's leaving: the
		// record begun is made whole (the call is then not sent, for
		// nobody: roundTrip), not cut and refused as the trail's failure.
		limit := time.Now().Add(g.timeout)
		if dl, ok := r.Context().Deadline(); ok && dl.Before(limit) {
			limit = dl
		}
		ictx, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), limit)
		err := g.writeAudit(ictx, cid, e, true)
		cancel()
		if err != nil && errors.Is(gaveup.Err(r.Context()), context.DeadlineExceeded) {
			// The request's deadline cut the record, not the trail: the
			// call is answered as one its deadline left unsent.
			c.refund()
			c.notForwarded()
			p.local = errDeadlinePassed()
			c.finish(p.local.contract)
			return p
		}
		if err != nil {
			g.log.Error("write-ahead audit record failed; call not forwarded", "cid", cid, "err", err)
			c.refund()                                   // never forwarded: it consumes nothing
			c.detail = "write-ahead intent not recorded" // the library's words
			c.finish("AUDIT_UNAVAILABLE")
			p.local = &rpcError{code: CodeInternal, status: http.StatusServiceUnavailable, contract: "AUDIT_UNAVAILABLE", message: "Audit unavailable: the call was not forwarded"}
			return p
		}
	}
	p.call = c
	return p
}

// priceCall returns the cost of a call of tool whose policy rule is named
// rule: Cost's for tool, or, when tool equals rule only under case
// folding (policy.Policy.Resolve), the larger of Cost's for the two
// names, for a downstream lenient with the case of names runs that tool
// under it. ok is false when either failed (see callCost).
func (g *Gateway) priceCall(cid, tool, rule string, args policy.Args) (cost float64, ok bool) {
	if cost, ok = g.callCost(cid, tool, args); !ok || rule == "" || rule == tool {
		return cost, ok
	}
	theirs, ok := g.callCost(cid, rule, args)
	return max(cost, theirs), ok
}

// callCost returns Options.Cost's cost of a call of tool with args, and
// false, logged, when it cannot be charged: Cost panicked, or returned a
// cost that is negative, NaN or infinite (limiter.CheckCost). As in the
// library's pipeline, the call is then refused: no cap can take such a
// cost, no record can hold a NaN or an infinity, and a retry cannot help.
// A panic must not end the handler either: the batch members decided
// before the call would keep their in-flight places for good.
func (g *Gateway) callCost(cid, tool string, args policy.Args) (cost float64, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("Options.Cost panicked; the call was refused", "cid", cid, "tool", tool,
				"panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
			cost, ok = 0, false
		}
	}()
	cost = g.cost(tool, args)
	if limiter.CheckCost(cost) != nil {
		g.log.Error("Options.Cost returned a cost that is negative, NaN or infinite; the call was refused", "cid", cid,
			"tool", tool, "cost", strconv.FormatFloat(cost, 'g', -1, 64))
		return 0, false
	}
	return cost, true
}

// denial builds the -32001 (or -32601) refusal of a policy decision.
func (g *Gateway) denial(pol *policy.Policy, pr *policy.Principal, tool string, d policy.Decision) *rpcError {
	shown := shortName(tool)
	if d.Code == policy.NotFound {
		return &rpcError{code: CodeMethodNotFound, status: http.StatusNotFound, contract: d.Code.String(),
			message: "Method not found: unknown tool '" + shown + "'", data: map[string]any{"tool": shown}}
	}
	sets := requiredRoleSets(pol.RequiredRoles(tool))
	if strings.HasPrefix(d.Reason, "argument ") {
		// Refused for an argument (policy.Policy.DecideArgs), once the
		// caller's roles were met: the roles would read as what it lacks.
		sets = nil
	}
	roles := pr.Roles
	if roles == nil {
		roles = []string{} // a list, as for a principal given none
	}
	data := map[string]any{"tool": shown, "roles": roles, "reason": d.Reason}
	switch {
	case len(sets) == 1:
		data["required_roles"] = sets[0]
	case len(sets) > 1:
		// Each set must be met: a flat list would read as roles any one
		// of which would do.
		data["required_role_sets"] = sets
	}
	if len(pr.Roles) > 0 {
		data["role"] = pr.Roles[0]
	}
	msg := "Unauthorized Tool Call: tool '" + shown + "': " + d.Reason
	if d.Reason == "caller lacks a required role" && len(sets) > 0 {
		need := make([]string, len(sets))
		for i, set := range sets {
			need[i] = "role " + strings.Join(set, " or ")
		}
		msg = "Unauthorized Tool Call: tool '" + shown + "' requires " + strings.Join(need, " and ") +
			", caller has role '" + strings.Join(pr.Roles, ",") + "'."
	}
	return &rpcError{code: CodeForbidden, status: http.StatusForbidden, contract: d.Code.String(), message: msg, data: data}
}

// requiredRoleSets returns the role sets of policy.Policy.RequiredRoles
// that a caller must meet, each once and each role in it once (a rule may
// name a role twice), without a set that holds another (meeting the
// smaller one meets it), in their order.
func requiredRoleSets(sets [][]string) [][]string {
	sets = slices.Clone(sets)
	for i, s := range sets {
		var u []string
		for _, r := range s {
			if !slices.Contains(u, r) {
				u = append(u, r)
			}
		}
		sets[i] = u
	}
	var out [][]string
	for i, s := range sets {
		implied := false
		for j, o := range sets {
			// o holds fewer roles, or the same ones and comes first.
			if j != i && (j < i || len(o) < len(s)) && subset(o, s) {
				implied = true
				break
			}
		}
		if !implied {
			out = append(out, s)
		}
	}
	return out
}

// subset reports whether every role of a is in b.
func subset(a, b []string) bool {
	for _, r := range a {
		if !slices.Contains(b, r) {
			return false
		}
	}
	return true
}

// confirmRefusal is the -32001 refusal of a call whose rule asks for a
// human confirmation (policy.ToolRule.Confirm), which the gateway has no
// way to obtain: forwarded, the call would run without one.
func confirmRefusal(tool string) *rpcError {
	shown := shortName(tool)
	return &rpcError{code: CodeForbidden, status: http.StatusForbidden, contract: "CONFIRMATION_REQUIRED",
		message: "Unauthorized Tool Call: tool '" + shown + "' needs a human confirmation, which this gateway cannot obtain",
		data:    map[string]any{"tool": shown, "reason": "confirmation required"}}
}

// pinRefusal is the -32001 refusal of a call of a tool whose definition
// the pins do not approve (see [Pins]).
func pinRefusal(v pinVerdict, tool string) *rpcError {
	shown := shortName(tool)
	msg := "Tool definition changed: tool '" + shown + "', or another spelling of its name, was listed with another definition than the one approved; its calls are refused until the approved one is listed again (after another spelling was listed, until the gateway restarts)"
	if v == pinNotPinned {
		msg = "Tool not approved: tool '" + shown + "' has no approved definition"
	}
	return &rpcError{code: CodeForbidden, status: http.StatusForbidden, contract: v.contract(), message: msg,
		data: map[string]any{"tool": shown, "reason": strings.ToLower(v.contract())}}
}

// limiterFailed logs the decision ld that the limiter could not make as
// asked for a call of tool (its store failed; the call is refused, or let
// through by a fail-open option), with the store's error, as the guard
// does: the refusal's own line gives its contract and message ("Limiter
// unavailable"), not the store's error. A refusal of a call whose client
// gave up first is not the limiter's failure: it is answered and recorded
// as the client's leaving.
func (g *Gateway) limiterFailed(ctx context.Context, cid, tool string, ld limiter.Decision) {
	if !ld.Allowed && gaveup.Err(ctx) != nil {
		return
	}
	g.log.Error("limiter failed", "cid", cid, "tool", tool, "allowed", ld.Allowed, "err", ld.Err)
}

func limitError(d limiter.Decision) *rpcError {
	if d.Err != nil && d.Limit.Kind == 0 {
		return &rpcError{code: CodeLimitExceeded, status: http.StatusServiceUnavailable, contract: "RATE_LIMIT_EXCEEDED",
			message: "Limiter unavailable: the call was not forwarded", retryAfter: time.Second}
	}
	contract, what := "RATE_LIMIT_EXCEEDED", "rate"
	switch d.Limit.Kind {
	case limiter.Spend:
		contract, what = "SPEND_LIMIT_EXCEEDED", "spend"
	case limiter.Concurrency:
		contract, what = "CONCURRENCY_LIMIT_EXCEEDED", "in-flight"
	}
	ra := d.RetryAfter
	if ra <= 0 {
		if d.Limit.Kind != limiter.Concurrency {
			// The limiter found no wait that helps: the call takes more
			// than the limit holds, and a retry would be refused forever.
			return &rpcError{code: CodeLimitExceeded, status: http.StatusTooManyRequests, contract: contract,
				message: "Too many requests: the call takes more than the " + what + " limit allows (" + d.Limit.String() + ")",
				data:    map[string]any{"retryable": false}}
		}
		ra = time.Second
	}
	return &rpcError{code: CodeLimitExceeded, status: http.StatusTooManyRequests, contract: contract,
		message: "Too many requests: " + what + " limit exceeded (" + d.Limit.String() + ")", retryAfter: ra}
}

func (g *Gateway) logDecision(cid string, pr *policy.Principal, p *plan, e *rpcError) {
	method := p.m.method
	if p.m.response {
		method = "(response)"
	}
	if e != nil {
		p.outcome = "deny"
		g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", method, "tool", p.m.tool, "outcome", e.contract, "code", e.code, "reason", e.message)
		return
	}
	p.outcome = "allow"
	if g.log.Enabled(context.Background(), slog.LevelInfo) {
		g.infoAttrs(context.Background(), "allow", slog.String("cid", cid), slog.String("subject", pr.Subject),
			slog.String("roles", strings.Join(pr.Roles, ",")), slog.String("method", method), slog.String("tool", p.m.tool))
	}
}

// infoAttrs logs msg with attrs at Info once the caller has checked that
// Info is enabled. It is g.log.LogAttrs without the caller's program
// counter, which slog.Logger finds with runtime.Callers on every line: the
// two lines of every forwarded request (the decision and the upstream's
// answer) need no source location.
func (g *Gateway) infoAttrs(ctx context.Context, msg string, attrs ...slog.Attr) {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	_ = g.log.Handler().Handle(ctx, r)
}

// auditUnread records the refusal e of a request whose messages were not
// read (its Origin, its HTTP method, its body) or could not be, or of an
// unauthenticated GET or DELETE: an outcome without a tool or a principal.
func (g *Gateway) auditUnread(r *http.Request, cid string, e *rpcError, start time.Time) {
	if g.sink != nil {
		g.audit(r.Context(), nil, cid, infoOf(r), "", "", nil, audit.PhaseOutcome, false, e.contract, e.message, 0, start)
	}
}

// auditRefusal records the refusal e of a whole request whose messages
// are msgs, for pr (nil before authentication): an outcome for each of its
// tools/calls, with callDetail as detail and without the arguments of one
// whose params could not be read (as [Gateway.decide]), or, when it has
// none (an initialize, a body not JSON), one outcome without a tool, with
// e's message.
func (g *Gateway) auditRefusal(r *http.Request, pr *policy.Principal, cid string, msgs []message, e *rpcError, callDetail string, start time.Time) {
	if g.sink == nil {
		return
	}
	ri := infoOf(r)
	recorded := false
	for i := range msgs {
		m := &msgs[i]
		if m.method != "tools/call" {
			continue
		}
		args := m.args
		if m.invalid != nil {
			args = nil
		}
		g.audit(r.Context(), pr, cid, ri, m.tool, "", args, audit.PhaseOutcome, false, e.contract, callDetail, 0, start)
		recorded = true
	}
	if !recorded {
		g.audit(r.Context(), pr, cid, ri, "", "", nil, audit.PhaseOutcome, false, e.contract, e.message, 0, start)
	}
}

// audit writes an outcome or intent event when a sink is configured.
func (g *Gateway) audit(ctx context.Context, pr *policy.Principal, cid string, ri reqInfo, tool, class string, args []byte, phase audit.Phase, allowed bool, code, detail string, cost float64, start time.Time) {
	if g.sink == nil {
		return
	}
	e := g.event(pr, cid, ri, tool, class, args, phase, allowed, code, detail, cost, start)
	if err := g.writeAudit(context.WithoutCancel(ctx), cid, e, false); err != nil {
		g.log.Error("audit write failed", "cid", cid, "err", err)
	}
}

// errSinkPanic is the failure of an audit write whose sink panicked.
var errSinkPanic = errors.New("gateway: the audit sink panicked")

// writeAudit writes e to the sink, durably (audit.WriteDurable) when
// durable. A panic of the sink is its write failing (errSinkPanic),
// logged with its stack: unrecovered, it kept the call's in-flight place
// for good, and a batch member's, decided on a goroutine of its own, ended
// the process.
func (g *Gateway) writeAudit(ctx context.Context, cid string, e *audit.Event, durable bool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("the audit sink panicked", "cid", cid, "panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
			err = errSinkPanic
		}
	}()
	if durable {
		return audit.WriteDurable(ctx, g.sink, e)
	}
	return g.sink.Write(ctx, e)
}

func (g *Gateway) event(pr *policy.Principal, cid string, ri reqInfo, tool, class string, args []byte, phase audit.Phase, allowed bool, code, detail string, cost float64, start time.Time) *audit.Event {
	now := g.now()
	e := &audit.Event{
		Time: now.UTC(), CorrelationID: cid, SessionID: ri.session, ProtocolVersion: ri.proto, Tool: tool, Class: class,
		Phase: phase, Allowed: allowed, Code: code, Detail: detail, Cost: cost,
		LatencyMS:  float64(now.Sub(start).Microseconds()) / 1000,
		ArgsSHA256: string(audit.AppendArgsHMAC(make([]byte, 0, 512), g.argsKey, args)),
	}
	if pr != nil {
		e.Subject, e.Roles = pr.Subject, pr.Roles
	}
	if e.LatencyMS < 0 {
		e.LatencyMS = 0
	}
	return e
}

// reqInfo is what the audit record takes from the HTTP request.
type reqInfo struct{ session, proto string }

// infoOf returns the session id and protocol version of r, each "" unless
// it is one ([validSessionID], [validProtocolVersion]): any client, an
// unauthenticated one too, sets these headers to what it likes, up to the
// server's header limit, and every record of the request would repeat
// them (256 records for a batch).
func infoOf(r *http.Request) reqInfo {
	ri := reqInfo{session: headerValue(r.Header, hdrSession), proto: headerValue(r.Header, "Mcp-Protocol-Version")}
	if !validSessionID(ri.session) {
		ri.session = ""
	}
	if !validProtocolVersion(ri.proto) {
		ri.proto = ""
	}
	return ri
}

// validProtocolVersion reports whether v can be a protocol version (such
// as "2025-11-25"): one to 64 visible ASCII characters.
func validProtocolVersion(v string) bool {
	return v != "" && len(v) <= 64 && validSessionID(v)
}

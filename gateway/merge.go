package gateway

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// forwardFiltered forwards a single tools/list unchanged and removes from its
// result the tools the caller may not call. A JSON answer is rewritten whole;
// an event stream is relayed event by event, only the answer rewritten. One
// it cannot read as its client does ([readableAnswer]) is a 502.
func (g *Gateway) forwardFiltered(w http.ResponseWriter, r *http.Request, pol *policy.Policy, pr *policy.Principal, cid string, p *plan, start time.Time) {
	c, uerr := g.roundTrip(r, pr, cid, http.MethodPost, outboundHeader(r.Header, pr, cid), p.m.raw, nil, false)
	if uerr != nil {
		// A client gone is answered nothing; one whose deadline passed is
		// answered, as in [Gateway.unanswered].
		if uerr.status == 499 {
			uerr = deadlineAnswer(r.Context(), uerr)
		}
		if uerr.status != 499 {
			g.writeError(w, uerr, p.m.id, cid)
		}
		return
	}
	defer c.close()
	if s, sse := c.resp.StatusCode, isSSE(c.resp.Header); (sse || s >= 200 && s <= 299) && !readableAnswer(c.resp.Header, sse) {
		// Its client would read another listing than the gateway filtered.
		g.refuseUnreadable(cid, c.resp)
		g.writeError(w, badAnswer(s), p.m.id, cid)
		return
	}
	// One answer, which may hold more than one response (an array, or
	// events): a name one of them withheld for the pins is withheld from
	// the others too, and its change not cleared ([listing.judged]).
	lst := &listing{r: r, pol: pol, pr: pr, cid: cid, start: start, together: true}
	defer g.withheldSummary(lst)
	tf := func(msg []byte) []byte { return g.filterTools(lst, msg) }
	if isSSE(c.resp.Header) {
		copyResponseHeader(w.Header(), c.resp.Header, true)
		w.WriteHeader(c.resp.StatusCode)
		c.out.w = w
		ew := &eventWriter{out: &c.out, rc: http.NewResponseController(w)}
		c.out.flush(ew.rc)
		// Without ids: a client that resumed the stream with a GET would
		// get the replayed answer through passThrough, unfiltered.
		err := readEvents(c, func(ev *event) { ew.write(ev, tf, true) })
		g.log.Info("upstream", "cid", cid, "status", c.resp.StatusCode, "sse", true, "filtered", true,
			"ms", float64(g.now().Sub(start).Microseconds())/1000, "err", errString(err))
		if err != nil {
			abortCut(&c.out, r)
		}
		return
	}
	body, err := io.ReadAll(io.LimitReader(c, maxUpstreamBody))
	if err != nil {
		g.answerUnread(cid, c.resp.StatusCode, len(body), err)
		g.writeError(w, errUpstream(err == errTimeout), p.m.id, cid)
		return
	}
	out := tf(body)
	if out == nil {
		if c.resp.StatusCode < 200 || c.resp.StatusCode > 299 {
			// An error answer in plain text (404 for an ended session,
			// which a client needs to see to start a new one) has no
			// tools to hide.
			out = body
		} else {
			g.log.Warn("upstream answer refused: not JSON, or larger than the limit", "cid", cid, "status", c.resp.StatusCode, "bytes", len(body))
			g.writeError(w, badAnswer(c.resp.StatusCode), p.m.id, cid)
			return
		}
	}
	copyResponseHeader(w.Header(), c.resp.Header, true)
	w.WriteHeader(c.resp.StatusCode)
	c.out.w = w
	c.out.write(out)
	g.log.Info("upstream", "cid", cid, "status", c.resp.StatusCode, "filtered", true, "ms", float64(g.now().Sub(start).Microseconds())/1000)
}

// answerUnread logs a downstream answer that broke off (its connection, a
// silence past the timeout) after n bytes were read (-1: not counted, an
// event stream relayed as it came), where the gateway answers the request
// or member -32003 itself: a filtered tools/list's or, with Pins, any JSON
// answer, read whole, and a batch member's. For a request without an audit
// record (a tools/list), this line is the only trail of why.
func (g *Gateway) answerUnread(cid string, status, n int, err error) {
	g.log.Warn("upstream error", "cid", cid, "upstream", g.upstreamStr, "status", status, "bytes", n,
		"timeout", err == errTimeout, "err", err)
}

// maxUpstreamBody bounds a downstream JSON answer the gateway must parse.
const maxUpstreamBody = 64 << 20

// A listing is the request whose answers filterTools reads (a tools/list,
// or with Pins any request: see [Gateway.guardAnswer]): the caller's,
// under the correlation id its withheld tools are recorded with.
type listing struct {
	r *http.Request
	// pol decides which tools the caller may call (FilterToolsList): the
	// policy a POST loaded when it came; nil for a GET's stream or a
	// subscriptions/listen's, whose listings the policy of the moment
	// filters.
	pol   *policy.Policy
	pr    *policy.Principal
	cid   string
	start time.Time
	// records counts the withheld tools recorded one by one, and more
	// those past maxWithheldRecords, by verdict: tools a fixed set does not
	// name, which the downstream chooses, never crowd out the record of a
	// pinned tool's change. Batch members share a listing.
	records [pinNotPinned + 1]atomic.Int64
	more    [pinNotPinned + 1]atomic.Int64
	// together is set for the listings whose answers are judged as one: a
	// batch's, whose members' answers come concurrently, and the answer to
	// one POST, which may hold more than one response (a JSON array, or
	// events) of which a client takes the first: under mu, changed holds
	// the keys (pinKey) of the names one of them withheld for the pins, and
	// shown those another showed ([Gateway.listable],
	// [batchOut.withholdShown]).
	together       bool
	mu             sync.Mutex
	changed, shown map[string]bool
}

// filterTools rewrites msg, an answer in the body or stream of a tools/list
// (whatever its id), keeping only the tools l's caller may call (with
// FilterToolsList) whose definitions the pins approve (with Pins). A
// message without a result object is returned unchanged; a result whose
// tools cannot be read loses all of them, a tool whose name cannot be read
// is withheld; and a msg that is not JSON at all (cut at the size limit,
// say), or that names its result, or the result its tools, twice or under
// another spelling ("Result", "Tools": see [ambiguousKey]), gives nil,
// which the callers turn into an error or drop (fail closed). With Pins, a
// result's instructions (an initialize's) are held to the approved ones
// too, as the tool [InstructionsPin], and dropped from the result
// otherwise; named twice or under another spelling, they make it nil.
func (g *Gateway) filterTools(l *listing, msg []byte) []byte {
	msg = bytes.TrimSpace(msg)
	if !json.Valid(msg) {
		return nil
	}
	if msg[0] == '[' {
		// An array of messages (some clients accept one for a single
		// request): each is filtered.
		out := []byte{'['}
		bad := false
		forEachElement(msg, 0, func(m []byte) {
			f := g.filterTools(l, m)
			if f == nil {
				bad = true
			}
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, f...)
		})
		if bad {
			return nil
		}
		return append(out, ']')
	}
	if msg[0] != '{' {
		return msg
	}
	// Every answer in the body or stream of a filtered tools/list is
	// filtered, whatever its id: the downstream may rewrite the id it was
	// given (the go-sdk answers 1.5 with 1), and only the answer to this
	// request travels there.
	result, ok := memberOf(msg, "result")
	if !ok {
		return nil
	}
	if result == nil || result[0] != '{' {
		return msg
	}
	if _, ok := memberOf(result, "tools"); !ok {
		return nil
	}
	if g.pins != nil {
		if _, ok := memberOf(result, "instructions"); !ok {
			return nil
		}
	}
	scoped := false // the result has a cacheScope
	newResult := rewriteObject(result, func(k, v []byte) []byte {
		switch string(k) {
		case "instructions":
			if g.pins != nil && !g.instructionsApproved(l, v) {
				return nil // dropped
			}
		case "tools":
			pol := l.pol
			if pol == nil {
				// A GET's or a subscriptions/listen's stream, which may
				// last for hours: the policy now, one for the listing.
				pol = g.pol.Load()
			}
			out := []byte{'['}
			if v[0] == '[' {
				mixed := g.mixedNames(v)
				forEachElement(v, 0, func(tool []byte) {
					if tool[0] != '{' {
						return
					}
					name, ok := memberOf(tool, "name")
					if !ok || name == nil {
						return
					}
					if s, ok := jsonString(name); ok && g.listable(l, pol, s, tool, mixed) {
						if len(out) > 1 {
							out = append(out, ',')
						}
						out = append(out, tool...)
					}
				})
			}
			return append(out, ']')
		case "cacheScope":
			scoped = true
			return []byte(`"private"`)
		}
		return v
	})
	if g.filter && !scoped {
		// An absent cacheScope means "public" (protocol 2026-07-28): an
		// intermediary may serve one caller's list to another. Older
		// clients ignore the member.
		// newResult is compact: "{}" or "{...}".
		sep := ","
		if len(newResult) == 2 {
			sep = ""
		}
		newResult = append(append(newResult[:len(newResult)-1], sep...), `"cacheScope":"private"}`...)
	}
	return rewriteObject(msg, func(k, v []byte) []byte {
		if string(k) == "result" {
			return newResult
		}
		return v
	})
}

// memberOf returns the value of the member name of obj, a valid JSON
// object (nil if it has none), and false when obj names it twice or has a
// member whose name is another spelling of it ([ambiguousKey]): clients
// disagree about which value such an object has, or whether it has one.
func memberOf(obj []byte, name string) (v []byte, ok bool) {
	n := 0
	bad := false
	forEachField(obj, func(k, val []byte) *rpcError {
		switch {
		case string(k) == name:
			v = val
			n++
		case ambiguousKey(k, name):
			bad = true
		}
		return nil
	})
	return v, n <= 1 && !bad
}

// ambiguousKey reports whether k is another spelling of the member name
// name that some client takes for it: encoding/json, and the Go clients
// that decode with it, match member names without regard to case, under
// Unicode folding ("reſult" is "result"), as bytes.EqualFold does, and a
// client that keeps names as C strings (cJSON) reads a name cut at its
// first NUL ("result\u0000" is "result"; see cutNUL); encoding/json/v2's
// case-insensitive matching also ignores '_' and '-' ("to_ols" is "tools";
// see foldsToKnown). (The go-sdk, the TypeScript and the Python SDKs match
// them exactly.)
func ambiguousKey(k []byte, name string) bool {
	return string(k) != name && foldsToKnown(k, []string{name})
}

// listable reports whether a tools/list answer keeps the tool named name,
// defined by tool: with FilterToolsList, l's caller may call it under pol
// (l.pol, or the policy of the moment for a stream's listing) (a tool
// whose rule asks for a confirmation never, nor one whose name no call
// may have: one policy.CheckName refuses, or with U+FFFD (an escaped lone
// surrogate), as a tools/call's name is refused; " admin_x" matches no
// admin_* rule); with Pins, its definition is the one approved. A tool
// withheld for its definition is logged and recorded, once per definition
// ([Pins.listed]), and one by one for at most maxWithheldRecords tools per
// request and verdict (see [Gateway.withheldSummary] for the rest); mixed
// names the tools its listing lists with two definitions or more
// ([Gateway.mixedNames], [Pins.listedAmong]).
func (g *Gateway) listable(l *listing, pol *policy.Policy, name string, tool []byte, mixed map[string]bool) bool {
	if g.filter {
		if policy.CheckName(name) != nil || strings.ContainsRune(name, utf8.RuneError) {
			return false
		}
		// Authorize: everything but the arguments, whose limits a call
		// may meet.
		if d := pol.Authorize(l.pr, name); !pol.Visible(l.pr, name) || !d.Allowed() || d.Rule.Confirm {
			return false // Confirm: refused at call time (confirmRefusal)
		}
	}
	if g.pins == nil {
		return true
	}
	d := ToolDigest(tool)
	var v pinVerdict
	var first bool
	var pinned string
	if l.together {
		v, first, pinned = l.judged(g.pins, name, d, mixed)
	} else {
		v, first, pinned = g.pins.listedAmong(name, d, mixed)
	}
	if v == pinOK {
		return true
	}
	if first {
		if l.records[v].Add(1) > maxWithheldRecords {
			l.more[v].Add(1)
			return false
		}
		detail := "listed definition sha256 " + d + "; approved " + pinned
		if pinned == "" {
			detail = "listed definition sha256 " + d + "; none approved"
		}
		// The downstream chooses the name: one that is long, or has a
		// control or invisible character, is recorded as a refused call's
		// is, quoted, escaped and cut in the detail, without a tool.
		tool, shown := name, name
		if len(name) > maxQuoted || policy.CheckName(name) != nil {
			tool, shown = "", quoted(name)
			detail += "; name " + shown
		}
		g.log.Warn("tool withheld", "cid", l.cid, "subject", l.pr.Subject, "tool", shown, "outcome", v.contract(), "sha256", d, "approved", pinned)
		g.audit(l.r.Context(), l.pr, l.cid, infoOf(l.r), tool, "", nil, audit.PhaseOutcome, false, v.contract(), detail, 0, l.start)
	}
	return false
}

// judged is [Pins.listedAmong] for a tool of a response to l, a listing
// judged together (a batch's, whose members' answers come concurrently,
// or one POST's, which may hold several responses): another response
// that withheld name for the pins makes this one a mixed listing of it,
// withheld without clearing the change, whichever was read first; the
// names shown and withheld are kept for [batchOut.withholdShown].
func (l *listing) judged(p *Pins, name, d string, mixed map[string]bool) (v pinVerdict, first bool, pinned string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := pinKey(clientName(name))
	if l.changed[key] {
		mixed = map[string]bool{clientName(name): true}
	}
	v, first, pinned = p.listedAmong(name, d, mixed)
	set := &l.changed
	if v == pinOK {
		set = &l.shown
	}
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[key] = true
	return v, first, pinned
}

// instructionsApproved reports whether v, the instructions of a result,
// are those the pins approve (see [InstructionsPin]); withheld ones are
// logged and recorded once per change, as a tool's definition is.
func (g *Gateway) instructionsApproved(l *listing, v []byte) bool {
	d := instructionsDigest(v)
	verdict, first, pinned := g.pins.listed(InstructionsPin, d)
	if verdict == pinOK {
		return true
	}
	if first {
		detail := "server instructions withheld: sha256 " + d + "; approved " + pinned
		if pinned == "" {
			detail = "server instructions withheld: sha256 " + d + "; none approved"
		}
		g.log.Warn("instructions withheld", "cid", l.cid, "subject", l.pr.Subject, "outcome", verdict.contract(), "sha256", d, "approved", pinned)
		g.audit(l.r.Context(), l.pr, l.cid, infoOf(l.r), InstructionsPin, "", nil, audit.PhaseOutcome, false, verdict.contract(), detail, 0, l.start)
	}
	return false
}

// instructionsDigest returns the digest [Pins] hold instructions v, a
// JSON value, under: [ToolDigest], or for null, for which ToolDigest gives
// "", the SHA-256 of "null" (a pin of "" could not be written to a file
// [ParsePins] reads, nor a change to null be recorded).
func instructionsDigest(v []byte) string {
	if d := ToolDigest(v); d != "" {
		return d
	}
	sum := sha256.Sum256([]byte("null"))
	return hex.EncodeToString(sum[:])
}

// maxWithheldRecords bounds the withheld tools recorded, and logged, one
// by one for one request, per verdict (TOOL_CHANGED, TOOL_NOT_PINNED): a
// downstream chooses how many tools it lists, and how many of them are
// news.
const maxWithheldRecords = 64

// withheldSummary records, and logs, how many tools withheld from the
// answers to l's request were past maxWithheldRecords: one record without
// a tool per verdict. Call it once every answer to the request is read.
func (g *Gateway) withheldSummary(l *listing) {
	for _, v := range []pinVerdict{pinChanged, pinNotPinned} {
		n := l.more[v].Load()
		if n == 0 {
			continue
		}
		detail := strconv.FormatInt(n, 10) + " more tools withheld, not recorded one by one (" + strings.ToLower(v.contract()) + ")"
		g.log.Warn("tools withheld", "cid", l.cid, "subject", l.pr.Subject, "outcome", v.contract(), "count", n)
		g.audit(l.r.Context(), l.pr, l.cid, infoOf(l.r), "", "", nil, audit.PhaseOutcome, false, v.contract(), detail, 0, l.start)
	}
}

// rewriteObject re-emits the valid JSON object obj with every value replaced
// by f(key, value), and without the members for which f returns nil.
func rewriteObject(obj []byte, f func(k, v []byte) []byte) []byte {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	forEachField(obj, func(k, v []byte) *rpcError {
		nv := f(k, v)
		if nv == nil {
			return nil
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendJSON(out, string(k))
		out = append(out, ':')
		out = append(out, nv...)
		return nil
	})
	return append(out, '}')
}

// An event is one server-sent event: its raw lines, its data and its name.
type event struct {
	lines   [][]byte // raw field lines, each with its line ending
	data    []byte   // the data field values joined by "\n"
	hasData bool
	name    []byte // the value of its last event field
	named   bool   // whether it has an event field
}

// ignored reports whether every client skips ev, whatever its data: an
// event named other than "message". The go-sdk's client, the TypeScript
// and the Python SDKs dispatch only an event named "message" or not named
// (the SSE default), reading its name as the SSE specification does (one
// space after the colon dropped) or, as the go-sdk does, with the white
// space around it trimmed ("event:  message " is a message to the go-sdk,
// not to the TypeScript SDK): ev is ignored only when neither reading is
// "message" or empty. So an event some client dispatches is never taken
// for one ignored, and one every client skips is never taken for a
// message: neither an answer nor a listing to check.
func (ev *event) ignored() bool {
	n := bytes.TrimSpace(ev.name)
	return len(n) > 0 && string(n) != "message"
}

// unnamed returns ev without its event fields: an event of the default
// name, "message", to every client.
func (ev *event) unnamed() *event {
	out := *ev
	out.lines = nil
	for _, l := range ev.lines {
		if !isField(l, "event") {
			out.lines = append(out.lines, l)
		}
	}
	out.name, out.named = nil, false
	return &out
}

// errBareCR refuses an event stream that ends a line with a lone CR, which
// the SSE grammar allows and readEvents does not split on: a client would
// see other events than the gateway checked.
var errBareCR = errors.New("gateway: event stream with a bare CR line ending")

// readEvents parses an event stream, calling fn for every complete event.
// As the SSE specification asks, a leading byte order mark is dropped. At
// the end of the stream, an event without its blank line is dispatched if
// its lines are whole (as the go-sdk client does; a lone CR at the very
// end ends a line too, and is given the LF of a CRLF); if its last line
// was cut off, it is dropped and readEvents returns errEndedInLine.
func readEvents(r io.Reader, fn func(*event)) error {
	br := bufio.NewReaderSize(r, 16<<10)
	ev := &event{}
	first := true
	size := 0 // bytes of the current event
	for {
		line, err := readLine(br, maxUpstreamBody-size)
		if err == errEventTooLarge {
			return err
		}
		size += len(line)
		if first {
			line, first = bytes.TrimPrefix(line, []byte("\ufeff")), false
		}
		if len(line) > 0 {
			// One line ending: LF or CRLF. Any other CR ends a line for a
			// client (a bare CR, or the first of "\r\r\n") where it does
			// not here.
			trimmed := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if bytes.IndexByte(trimmed, '\r') >= 0 {
				return errBareCR
			}
			if err == io.EOF && line[len(line)-1] == '\r' {
				// The stream's last line ending is a lone CR: a line
				// ending all the same (the first half of a cut CRLF,
				// as a client reads it), made whole for the event's
				// relaying.
				line = append(line, '\n')
			}
			if len(trimmed) == 0 {
				if len(ev.lines) > 0 {
					fn(ev)
				}
				ev, size = &event{}, 0
				continue
			}
			ev.lines = append(ev.lines, line)
			if v, ok := bytes.CutPrefix(trimmed, []byte("event")); ok && (len(v) == 0 || v[0] == ':') {
				// The last event field names the event ("event" alone
				// names it "", the default).
				ev.name = bytes.TrimPrefix(bytes.TrimPrefix(v, []byte(":")), []byte(" "))
				ev.named = true
			}
			if v, ok := bytes.CutPrefix(trimmed, []byte("data")); ok && (len(v) == 0 || v[0] == ':') {
				v = bytes.TrimPrefix(bytes.TrimPrefix(v, []byte(":")), []byte(" "))
				if ev.hasData {
					ev.data = append(ev.data, '\n')
				}
				ev.data = append(ev.data, v...)
				ev.hasData = true
			}
		}
		if err == io.EOF {
			// The stream ended without the event's blank line. As the
			// go-sdk client does, an event whose lines are whole is
			// dispatched; one whose last line was cut off is not, and
			// the stream was cut (errEndedInLine).
			if len(ev.lines) == 0 {
				return nil
			}
			if !bytes.HasSuffix(ev.lines[len(ev.lines)-1], []byte("\n")) {
				return errEndedInLine
			}
			fn(ev)
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errEventTooLarge refuses an event longer than maxUpstreamBody, the bound
// a JSON answer has too.
var errEventTooLarge = errors.New("gateway: downstream event larger than the limit")

// readLine is bufio.Reader.ReadBytes('\n') that gives up with
// errEventTooLarge past max bytes, instead of buffering a line without end.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, errEventTooLarge
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// eventWriter writes events to a client through out (which bounds the
// writes: see [writeGuard]), one flush per event; rc is out.w's
// controller. It is safe for concurrent use.
type eventWriter struct {
	mu  sync.Mutex
	out *writeGuard
	rc  *http.ResponseController
}

// write writes ev, with its data passed through tf when non-nil; stripIDs
// drops id and retry fields (events merged from several streams cannot be
// resumed). With tf, a line that is not a data field and has a character
// some client ends a line at ([breaksLine]) is dropped: after it, that
// client would read a data line tf never saw. An event whose data is empty
// carries no message (a client dispatches none) and is not given to tf: a
// go-sdk downstream's priming event (its id) and close event (its retry),
// which a client resumes the stream by, are relayed. With tf, an event
// every client skips ([event.ignored]) is not given to tf either: it is
// relayed without its data, which was not checked, its id kept.
func (e *eventWriter) write(ev *event, tf func([]byte) []byte, stripIDs bool) {
	var buf []byte
	data := ev.data
	rewrite := false
	skipped := tf != nil && ev.ignored()
	if tf != nil && len(data) > 0 && !skipped {
		nd := tf(data)
		if nd == nil {
			return // not JSON: dropped rather than relayed unfiltered
		}
		rewrite = !bytes.Equal(nd, data)
		data = nd
	}
	wroteData := false
	for _, l := range ev.lines {
		if stripIDs && (bytes.HasPrefix(l, []byte("id")) || bytes.HasPrefix(l, []byte("retry"))) {
			continue
		}
		if tf != nil && !isDataLine(l) && breaksLine(l) || skipped && isDataLine(l) {
			continue
		}
		if rewrite && bytes.HasPrefix(l, []byte("data")) {
			if !wroteData {
				// One data line per line of the new data: a newline
				// inside a data line would end it.
				for d := range bytes.SplitSeq(data, []byte("\n")) {
					buf = append(buf, "data: "...)
					buf = append(buf, bytes.TrimSuffix(d, []byte("\r"))...)
					buf = append(buf, '\n')
				}
				wroteData = true
			}
			continue
		}
		buf = append(buf, l...)
	}
	buf = append(buf, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	e.out.write(buf)
	e.out.flush(e.rc)
}

// isDataLine reports whether l, a raw line of an event, is a data field,
// as readEvents reads one.
func isDataLine(l []byte) bool { return isField(l, "data") }

// isField reports whether l, a raw line of an event, is a field named
// name, as readEvents reads one.
func isField(l []byte, name string) bool {
	v, ok := bytes.CutPrefix(l, []byte(name))
	return ok && (len(v) == 0 || v[0] == ':' || v[0] == '\n' || v[0] == '\r')
}

// breaksLine reports whether l has a character that the SSE grammar, and
// readEvents, do not end a line at but some client does: httpx (under the
// Python SDK, through httpx-sse up to 0.4.1) splits an event stream's lines
// as Python's str.splitlines does, at VT, FF, FS, GS, RS, NEL, U+2028 and
// U+2029 too. In a data field that is JSON, only the last three can be,
// inside a string, where what follows cannot be a message; in a comment, an
// event name or an id, what follows can be a data line.
func breaksLine(l []byte) bool {
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '\v', '\f', 0x1c, 0x1d, 0x1e:
			return true
		case 0xc2: // U+0085 is C2 85
			if i+1 < len(l) && l[i+1] == 0x85 {
				return true
			}
		case 0xe2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(l) && l[i+1] == 0x80 && (l[i+2] == 0xa8 || l[i+2] == 0xa9) {
				return true
			}
		}
	}
	return false
}

// writeMessage writes one JSON-RPC message, valid JSON, as an event: one
// data line per line of msg, which a downstream's JSON body may spread over
// lines (LF, CRLF or a lone CR, JSON white space between its tokens). In one
// data field, its first line break ended the field for a client, and an
// empty line the event: the client read "{" as the message.
func (e *eventWriter) writeMessage(msg []byte) {
	l := make([]byte, 0, len(msg)+32)
	l = append(l, "event: message\n"...)
	for {
		i := bytes.IndexAny(msg, "\r\n")
		if i < 0 {
			break
		}
		l = append(append(append(l, "data: "...), msg[:i]...), '\n')
		if msg[i] == '\r' && i+1 < len(msg) && msg[i+1] == '\n' {
			i++
		}
		msg = msg[i+1:]
	}
	l = append(append(append(l, "data: "...), msg...), '\n')
	e.write(&event{lines: [][]byte{l}}, nil, false)
}

// acceptsSSE reports whether the client's Accept allows an event stream:
// the most specific media range that matches text/event-stream
// (text/event-stream, then text/*, then */*) has a weight above 0, as RFC
// 9110 section 12.5.1 reads it. Where one range is listed more than once,
// it allows a stream if any of its listings does; a weight that is no
// qvalue counts as 1.
func acceptsSSE(h http.Header) bool {
	best, ok := 0, false // specificity of the best match (0: none), whether it allows
	for _, v := range h.Values("Accept") {
		for _, f := range strings.Split(v, ",") {
			base, params, _ := strings.Cut(f, ";")
			spec := 0
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "text/event-stream":
				spec = 3
			case "text/*":
				spec = 2
			case "*/*":
				spec = 1
			default:
				continue
			}
			allows := !zeroWeight(params)
			switch {
			case spec > best:
				best, ok = spec, allows
			case spec == best:
				ok = ok || allows
			}
		}
	}
	return ok
}

// zeroWeight reports whether a media range's parameters give it weight 0:
// whether the first q parameter (its name in any case) holds RFC 9110's
// qvalue 0, "0" optionally followed by a dot and up to three zeros.
func zeroWeight(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, val, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		whole, frac, _ := strings.Cut(strings.TrimSpace(val), ".")
		return whole == "0" && len(frac) <= 3 && strings.Trim(frac, "0") == ""
	}
	return false
}

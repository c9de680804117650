package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpguard/mcpguard/internal/jsonnum"
	"github.com/mcpguard/mcpguard/policy"
)

// With [Options.Pins], the gateway reads every answer it relays, not only
// those to a tools/list: a client takes a response for the request its id
// names, whatever stream it comes on (the go-sdk and the TypeScript SDK
// both do), so a downstream could answer a tools/list on its standalone GET
// stream, in the event stream of a tools/call still running, or in the
// JSON answer to another request, and the client would read a definition
// the pins never checked.

// guardAnswer returns msg, one message (or an array of them) of an answer
// to any request but a tools/list, checked for tool listings: one whose
// result has tools, or instructions, is filtered as a tools/list answer is
// ([Gateway.filterTools]); another is returned unchanged, byte for byte; a
// msg that is not JSON gives nil (the callers drop it, or answer with an
// error).
func (g *Gateway) guardAnswer(l *listing, msg []byte) []byte {
	t := bytes.TrimSpace(msg)
	if !json.Valid(t) {
		return nil
	}
	if !carriesTools(t) {
		return msg
	}
	return g.filterTools(l, t)
}

// listingKeys are the members of a result that the pins check.
var listingKeys = [...]string{"tools", "instructions"}

// carriesTools reports whether msg, valid JSON, is a message (or an array
// with one) whose result has tools or instructions, under any spelling a
// client reads them by ([ambiguousKey]).
func carriesTools(msg []byte) bool {
	switch msg[0] {
	case '[':
		found := false
		forEachElement(msg, 0, func(m []byte) { found = found || carriesTools(m) })
		return found
	case '{':
		found := false
		forEachField(msg, func(k, v []byte) *rpcError {
			switch {
			case ambiguousKey(k, "result"):
				found = true
			case string(k) == "result" && v[0] == '{':
				forEachField(v, func(k, _ []byte) *rpcError {
					found = found || foldsToKnown(k, listingKeys[:])
					return nil
				})
			}
			return nil
		})
		return found
	}
	return false
}

// relayChecked relays c, the 2xx answer to r (a GET, or a POST of
// anything but a tools/list), with every message checked by
// [Gateway.guardAnswer]: an event stream event by event (with their ids: a
// stream may be resumed), a message that is not JSON dropped; a JSON
// answer whole, or, when it is not JSON, replaced by a 502 error. An
// answer encoded, or a stream in another charset than UTF-8
// ([readableAnswer]), is a 502. The answer to a POST without a request (a
// notification, a client's response), which no client reads, is relayed
// without its body. A GET's answer is read as an event stream
// whatever its Content-Type, as the TypeScript SDK reads it. It stands for
// passThrough's relaying, and ends call as passThrough does.
func (g *Gateway) relayChecked(w http.ResponseWriter, r *http.Request, pol *policy.Policy, pr *policy.Principal, cid string, m *message, c *upstreamCall, call *callState, start time.Time, listen bool) {
	// The answer to one POST (not a subscriptions/listen's stream, which
	// lasts as a GET's does) is one listing ([listing.judged]).
	l := &listing{r: r, pol: pol, pr: pr, cid: cid, start: start, together: r.Method == http.MethodPost && !listen}
	defer g.withheldSummary(l)
	if r.Method == http.MethodPost && !(m != nil && m.hasMethod && m.id != nil) {
		// The answer to a notification or a client's response: no client
		// reads its body (the go-sdk closes it, the TypeScript SDK cancels
		// it), and one that is not JSON ("Accepted", as Express's
		// res.sendStatus(202) sends) must not become a 502, which fails a
		// go-sdk client's connection.
		g.relayBodiless(w, cid, c, call, start)
		return
	}
	sse := r.Method == http.MethodGet || isSSE(c.resp.Header)
	if !readableAnswer(c.resp.Header, sse) {
		g.refuseUnreadable(cid, c.resp)
		call.failed(failUnreadable)
		call.finish("UPSTREAM_UNAVAILABLE")
		g.writeError(w, badAnswer(c.resp.StatusCode), m.idOrNil(), cid)
		return
	}
	if sse {
		g.relayCheckedEvents(w, r, l, m.idOrNil(), c, call, listen)
		return
	}
	g.relayCheckedWhole(w, r, l, m, c, call)
}

// relayBodiless relays the status and header of c's answer without its
// body (see [Gateway.relayChecked]).
func (g *Gateway) relayBodiless(w http.ResponseWriter, cid string, c *upstreamCall, call *callState, start time.Time) {
	copyResponseHeader(w.Header(), c.resp.Header, false)
	w.WriteHeader(c.resp.StatusCode)
	call.finish("")
	g.log.Info("upstream", "cid", cid, "status", c.resp.StatusCode, "checked", true, "body_dropped", true,
		"ms", float64(g.now().Sub(start).Microseconds())/1000)
}

// relayCheckedEvents relays c's event stream (a GET's, or a POST's
// answered so, id its request's; listen: a subscriptions/listen's), each
// event checked for a listing as it comes, and call's response read for
// its outcome record ([callAnswer]).
func (g *Gateway) relayCheckedEvents(w http.ResponseWriter, r *http.Request, l *listing, id []byte, c *upstreamCall, call *callState, listen bool) {
	var rd io.Reader = c
	if r.Method == http.MethodGet || listen {
		rd = c.resp.Body // no timeout: the stream may be silent for long
	}
	copyResponseHeader(w.Header(), c.resp.Header, true)
	w.WriteHeader(c.resp.StatusCode)
	c.out.w = w
	if r.Method == http.MethodGet || listen {
		defer cutOnEnd(r, &c.out)()
	}
	ew := &eventWriter{out: &c.out, rc: http.NewResponseController(w)}
	c.out.flush(ew.rc)
	tf := func(msg []byte) []byte {
		out := g.guardAnswer(l, msg)
		if call != nil && out != nil {
			call.read(callAnswer(out, id))
		}
		return out
	}
	err := readEvents(rd, func(ev *event) { ew.write(ev, tf, false) })
	if err != nil && (r.Method == http.MethodGet || listen) && streamEnded(r) {
		// Ended by EndStreams: only whole events were written, so the
		// answer ends cleanly.
		err = nil
	}
	code := ""
	if err != nil {
		code = "UPSTREAM_UNAVAILABLE"
		call.failed(failureOf(err, false, true))
	} else if call != nil && call.reply == replyNone {
		// Relayed whole, but the gateway saw no response to the call in
		// it: a server that closes the stream for its client to poll
		// (SEP-1699) sends it later on a GET. Not a success seen.
		call.failed(failStreamEnded)
	}
	if r.Method == http.MethodPost && r.Context().Err() != nil && !streamEnded(r) {
		call.clientWentAway()
	}
	call.finish(code)
	g.log.Info("upstream", "cid", l.cid, "status", c.resp.StatusCode, "sse", true, "checked", true,
		"ms", float64(g.now().Sub(l.start).Microseconds())/1000, "err", errString(err))
	if err != nil {
		abortCut(&c.out, r)
	}
}

// relayCheckedWhole reads c's JSON answer whole, checks it for a listing
// and relays what passes; the outcome record of call, a tools/call's, says
// what its response says ([callAnswer]), or that the answer held none.
func (g *Gateway) relayCheckedWhole(w http.ResponseWriter, r *http.Request, l *listing, m *message, c *upstreamCall, call *callState) {
	status := c.resp.StatusCode
	data, err := io.ReadAll(io.LimitReader(c, maxUpstreamBody))
	if err != nil {
		g.answerUnread(l.cid, status, len(data), err)
		call.failed(failureOf(err, false, true))
		if r.Context().Err() != nil {
			// Its client gone, the gateway cut the call one timeout
			// after it was last seen ([upstreamCall.watchClient]).
			call.clientWentAway()
		}
		call.finish("UPSTREAM_UNAVAILABLE")
		g.writeError(w, errUpstream(err == errTimeout), m.idOrNil(), l.cid)
		return
	}
	out := data
	if len(bytes.TrimSpace(data)) > 0 {
		out = g.guardAnswer(l, data)
	}
	if out == nil {
		g.refuseAnswer(w, l.cid, m, status, len(data), call)
		return
	}
	copyResponseHeader(w.Header(), c.resp.Header, true)
	if len(out) > 0 {
		w.Header()["Content-Length"] = []string{strconv.Itoa(len(out))}
	}
	w.WriteHeader(status)
	c.out.w = w
	if _, werr := c.out.write(out); werr != nil || r.Context().Err() != nil {
		call.clientWentAway()
	}
	if call != nil {
		if a := callAnswer(out, m.idOrNil()); a != nil {
			call.read(a)
		} else {
			// Relayed as it came, but the client finds no answer to its
			// call in it: recorded as a batch member's answer without
			// one is, though allowed (the answer was relayed).
			call.failed(failNoResponse)
		}
	}
	call.finish("")
	if g.log.Enabled(r.Context(), slog.LevelInfo) {
		g.logChecked(r.Context(), l.cid, status, len(out), l.start)
	}
}

// callAnswer returns the response to the request with id in msg, valid
// JSON relayed in the answer to that request: msg, or an object in msg
// when it is an array (the first), that is a JSON-RPC response
// ([classify]) whose id a client takes for id ([sameID]); nil when there
// is none: a request, a notification, a response to another request. Only
// what it returns is the call's answer, which its outcome record tells.
func callAnswer(msg, id []byte) []byte {
	msg = bytes.TrimSpace(msg)
	if id == nil || len(msg) == 0 {
		return nil
	}
	if msg[0] == '[' {
		var found []byte
		forEachElement(msg, 0, func(v []byte) {
			if found == nil && v[0] == '{' {
				found = callAnswer(v, id)
			}
		})
		return found
	}
	if kind, _ := classify(msg); kind != kindResponse {
		return nil
	}
	var got []byte
	forEachField(msg, func(k, v []byte) *rpcError {
		if string(k) == "id" {
			got = v
		}
		return nil
	})
	if got == nil || !sameID(got, id) {
		return nil
	}
	return msg
}

// sameID reports whether a client takes the JSON ids a and b for one: the
// same text, strings with the same value, or numbers with the same value
// (7 and 7.0).
func sameID(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	isNum := func(v []byte) bool { return v[0] == '-' || v[0] >= '0' && v[0] <= '9' }
	switch {
	case a[0] == '"' && b[0] == '"':
		x, okx := jsonString(a)
		y, oky := jsonString(b)
		return okx && oky && x == y
	case isNum(a) && isNum(b):
		x, okx := jsonnum.Float(string(a))
		y, oky := jsonnum.Float(string(b))
		return okx && oky && x == y
	}
	return false
}

// refuseAnswer answers a JSON answer of n bytes that is not JSON, or
// larger than the limit, as the downstream's failure.
func (g *Gateway) refuseAnswer(w http.ResponseWriter, cid string, m *message, status, n int, call *callState) {
	g.log.Warn("upstream answer refused: not JSON, or larger than the limit", "cid", cid, "status", status, "bytes", n)
	call.failed(failNotJSON)
	call.finish("UPSTREAM_UNAVAILABLE")
	g.writeError(w, badAnswer(status), m.idOrNil(), cid)
}

// logChecked writes the "upstream" line of a JSON answer checked whole
// and relayed (n bytes), building its record as logRelayed does.
func (g *Gateway) logChecked(ctx context.Context, cid string, status, n int, start time.Time) {
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "upstream", 0)
	rec.AddAttrs(slog.String("cid", cid), slog.Int("status", status), slog.Int("bytes", n), slog.Bool("checked", true),
		slog.Float64("ms", float64(g.now().Sub(start).Microseconds())/1000))
	_ = g.log.Handler().Handle(ctx, rec)
}

// isRedirect reports whether status is a redirection (3xx), which a
// client's HTTP client follows to wherever its Location points.
func isRedirect(status int) bool { return status >= 300 && status <= 399 }

// refuseRedirect logs a downstream redirect the gateway answers with 502
// instead of relaying it, with where it pointed (quoted and cut): most
// often the upstream URL lacks a trailing slash the downstream wants.
func (g *Gateway) refuseRedirect(cid string, resp *http.Response) {
	g.log.Warn("upstream redirect refused: set the upstream URL to where it points", "cid", cid,
		"status", resp.StatusCode, "location", quoted(resp.Header.Get("Location")))
}

// refuseUnreadable logs a downstream answer the gateway must read but
// answers with 502 instead, being encoded or in another charset than UTF-8
// ([readableAnswer]).
func (g *Gateway) refuseUnreadable(cid string, resp *http.Response) {
	g.log.Warn("upstream answer refused: encoded, or not UTF-8", "cid", cid, "status", resp.StatusCode,
		"content_encoding", quoted(resp.Header.Get("Content-Encoding")), "content_type", quoted(resp.Header.Get("Content-Type")))
}

// mixedNames returns the names (as clientName gives them) that tools, the
// tools array of a listing, lists more than once with more than one
// definition ([Pins.listedAmong]); nil without Pins, or when no name is
// listed twice. Only the tools of a name listed twice are hashed here.
func (g *Gateway) mixedNames(tools []byte) map[string]bool {
	if g.pins == nil || tools[0] != '[' {
		return nil
	}
	nameOf := func(tool []byte) (string, bool) {
		if tool[0] != '{' {
			return "", false
		}
		v, ok := memberOf(tool, "name")
		if !ok || v == nil {
			return "", false
		}
		s, ok := jsonString(v)
		return clientName(s), ok
	}
	count := map[string]int{}
	twice := false
	forEachElement(tools, 0, func(tool []byte) {
		if s, ok := nameOf(tool); ok {
			count[s]++
			twice = twice || count[s] > 1
		}
	})
	if !twice {
		return nil
	}
	digests := map[string]string{}
	var mixed map[string]bool
	forEachElement(tools, 0, func(tool []byte) {
		s, ok := nameOf(tool)
		if !ok || count[s] < 2 || mixed[s] {
			return
		}
		d := ToolDigest(tool)
		if prev, seen := digests[s]; !seen {
			digests[s] = d
		} else if prev != d {
			if mixed == nil {
				mixed = map[string]bool{}
			}
			mixed[s] = true
		}
	})
	return mixed
}

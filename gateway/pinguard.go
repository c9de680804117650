package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

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
func (g *Gateway) relayChecked(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, m *message, c *upstreamCall, call *callState, start time.Time) {
	l := &listing{r: r, pr: pr, cid: cid, start: start}
	defer g.withheldSummary(l)
	tf := func(msg []byte) []byte { return g.guardAnswer(l, msg) }
	var rd io.Reader = c
	if r.Method == http.MethodGet {
		rd = c.resp.Body // no timeout: the stream may be silent for long
	}
	status := c.resp.StatusCode
	id := m.idOrNil()
	request := m != nil && m.hasMethod && m.id != nil // the POST carries a request, whose answer its client reads
	if r.Method == http.MethodPost && !request {
		// The answer to a notification or a client's response: no client
		// reads its body (the go-sdk closes it, the TypeScript SDK cancels
		// it), and one that is not JSON ("Accepted", as Express's
		// res.sendStatus(202) sends) must not become a 502, which fails a
		// go-sdk client's connection.
		copyResponseHeader(w.Header(), c.resp.Header, false)
		w.WriteHeader(status)
		call.finish("")
		g.log.Info("upstream", "cid", cid, "status", status, "checked", true, "body_dropped", true,
			"ms", float64(g.now().Sub(start).Microseconds())/1000)
		return
	}
	if !readableAnswer(c.resp.Header, r.Method == http.MethodGet || isSSE(c.resp.Header)) {
		g.refuseUnreadable(cid, c.resp)
		call.finish("UPSTREAM_UNAVAILABLE")
		writeError(w, badAnswer(status), id, cid)
		return
	}
	if r.Method == http.MethodGet || isSSE(c.resp.Header) {
		copyResponseHeader(w.Header(), c.resp.Header, true)
		w.WriteHeader(status)
		ew := &eventWriter{w: w, rc: http.NewResponseController(w)}
		ew.rc.Flush()
		err := readEvents(rd, func(ev *event) { ew.write(ev, tf, false) })
		code := ""
		if err != nil {
			code = "UPSTREAM_UNAVAILABLE"
		}
		if r.Method == http.MethodPost && r.Context().Err() != nil {
			call.clientWentAway()
		}
		call.finish(code)
		g.log.Info("upstream", "cid", cid, "status", status, "sse", true, "checked", true,
			"ms", float64(g.now().Sub(start).Microseconds())/1000, "err", errString(err))
		if err != nil {
			abortCut(w, r)
		}
		return
	}
	data, err := io.ReadAll(io.LimitReader(rd, maxUpstreamBody))
	if err != nil {
		call.finish("UPSTREAM_UNAVAILABLE")
		writeError(w, errUpstream(err == errTimeout), id, cid)
		return
	}
	out := data
	if len(bytes.TrimSpace(data)) > 0 {
		out = tf(data)
	}
	if out == nil {
		g.log.Warn("upstream answer refused: not JSON, or larger than the limit", "cid", cid, "status", status, "bytes", len(data))
		call.finish("UPSTREAM_UNAVAILABLE")
		writeError(w, badAnswer(status), id, cid)
		return
	}
	copyResponseHeader(w.Header(), c.resp.Header, true)
	if len(out) > 0 {
		w.Header()["Content-Length"] = []string{strconv.Itoa(len(out))}
	}
	w.WriteHeader(status)
	if _, werr := w.Write(out); werr != nil || r.Context().Err() != nil {
		call.clientWentAway()
	}
	call.finish("")
	g.log.Info("upstream", "cid", cid, "status", status, "bytes", len(out), "checked", true,
		"ms", float64(g.now().Sub(start).Microseconds())/1000)
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

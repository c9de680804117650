package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/policy"
)

// A member is one forwarded message of a batch.
type member struct {
	p     *plan
	cid   string
	c     *upstreamCall
	err   *rpcError
	ready chan struct{}
}

// serveBatch answers a batch member by member. Refused members are answered
// here; the others are sent downstream as separate requests, concurrently
// (a downstream speaking protocol 2025-06-18 or later refuses batches), and
// their answers merged: as one JSON array in the client's order, or, when
// the client accepts an event stream and a downstream answer is one, as an
// event stream relaying every answer as it arrives.
func (g *Gateway) serveBatch(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, plans []plan, start time.Time) {
	var members []*member
	for i := range plans {
		if plans[i].local == nil {
			members = append(members, &member{p: &plans[i], cid: cid, ready: make(chan struct{})})
		}
	}
	for _, m := range members {
		go func() {
			defer close(m.ready)
			h := outboundHeader(r.Header, pr, cid)
			memberHeaders(h, m.p.m)
			m.c, m.err = g.roundTrip(r, pr, cid, http.MethodPost, h, m.p.m.raw)
		}()
	}
	sseMode := false
	var first *upstreamCall
	for _, m := range members {
		<-m.ready
		if m.c != nil {
			if first == nil {
				first = m.c
			}
			if isSSE(m.c.resp.Header) {
				sseMode = true
			}
		}
	}
	defer func() {
		for _, m := range members {
			if m.c != nil {
				m.c.close()
			}
		}
	}()
	sseMode = sseMode && acceptsSSE(r.Header)
	if first != nil {
		copyResponseHeader(w.Header(), first.resp.Header, false)
	}
	if sseMode {
		g.batchSSE(w, pr, cid, plans, members)
	} else {
		g.batchJSON(w, pr, cid, plans, members)
	}
	intercepted := len(plans) - len(members)
	g.log.Info("upstream", "cid", cid, "upstream", g.upstreamStr, "forwarded", len(members), "intercepted", intercepted,
		"sse", sseMode, "ms", float64(g.now().Sub(start).Microseconds())/1000)
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

// collect reads a member's answer and returns its JSON-RPC response
// messages (server requests and notifications on an event stream are
// dropped: the client did not accept a stream).
func (g *Gateway) collect(pr *policy.Principal, m *member) [][]byte {
	if m.err != nil {
		return g.synth(m, m.err, "")
	}
	var out [][]byte
	if isSSE(m.c.resp.Header) {
		err := readEvents(m.c, func(ev *event) {
			if ev.hasData && isResponse(ev.data) {
				out = append(out, bytes.Clone(ev.data))
			}
		})
		if err != nil && len(out) == 0 {
			return g.synth(m, errUpstream(err == errTimeout), "UPSTREAM_UNAVAILABLE")
		}
	} else {
		body, err := io.ReadAll(io.LimitReader(m.c, maxUpstreamBody))
		if err != nil {
			return g.synth(m, errUpstream(err == errTimeout), "UPSTREAM_UNAVAILABLE")
		}
		out = splitMessages(body)
	}
	if len(out) == 0 && m.p.m.id != nil {
		return g.synth(m, badAnswer(m.c.resp.StatusCode), "UPSTREAM_UNAVAILABLE")
	}
	if m.p.filter {
		for i := range out {
			if out[i] = g.filterTools(pr, out[i]); out[i] == nil {
				return g.synth(m, badAnswer(m.c.resp.StatusCode), "UPSTREAM_UNAVAILABLE")
			}
		}
	}
	m.p.call.finish("")
	return out
}

func badAnswer(status int) *rpcError {
	e := errUpstream(false)
	e.message = "Upstream answered without a JSON-RPC response"
	e.data = map[string]any{"upstream_status": status}
	return e
}

// synth finishes m's call with code and answers it with e (nothing for a
// notification or a client response).
func (g *Gateway) synth(m *member, e *rpcError, code string) [][]byte {
	if code == "" {
		code = e.contract
	}
	m.p.call.finish(code)
	if m.p.m.id == nil || m.p.m.response {
		return nil
	}
	return [][]byte{e.appendResponse(nil, m.p.m.id, m.cid)}
}

// isResponse reports whether msg is a JSON-RPC response object.
func isResponse(msg []byte) bool {
	if len(msg) == 0 || msg[0] != '{' || !json.Valid(msg) {
		return false
	}
	resp, method := false, false
	forEachField(msg, func(k, _ []byte) *rpcError {
		switch string(k) {
		case "result", "error":
			resp = true
		case "method":
			method = true
		}
		return nil
	})
	return resp && !method
}

// splitMessages returns the messages of a JSON body: one object, or the
// members of an array.
func splitMessages(body []byte) [][]byte {
	if !json.Valid(body) {
		return nil
	}
	i := skipWS(body, 0)
	switch body[i] {
	case '{':
		if isResponse(body[i:skipValue(body, i)]) {
			return [][]byte{body[i:skipValue(body, i)]}
		}
	case '[':
		var out [][]byte
		forEachElement(body, i, func(v []byte) {
			if isResponse(v) {
				out = append(out, v)
			}
		})
		return out
	}
	return nil
}

func (g *Gateway) batchJSON(w http.ResponseWriter, pr *policy.Principal, cid string, plans []plan, members []*member) {
	answers := make(map[*plan][][]byte, len(members))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := g.collect(pr, m)
			mu.Lock()
			answers[m.p] = a
			mu.Unlock()
		}()
	}
	wg.Wait()
	out := []byte{'['}
	for i := range plans {
		p := &plans[i]
		var msgs [][]byte
		if p.local != nil {
			if p.m.notification() {
				continue
			}
			msgs = [][]byte{p.local.appendResponse(nil, p.m.id, cid)}
		} else {
			msgs = answers[p]
		}
		for _, msg := range msgs {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, msg...)
		}
	}
	if len(out) == 1 {
		if len(members) > 0 {
			w.WriteHeader(http.StatusAccepted)
		} else {
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	out = append(out, ']')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

func (g *Gateway) batchSSE(w http.ResponseWriter, pr *policy.Principal, cid string, plans []plan, members []*member) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	ew := &eventWriter{w: w, rc: http.NewResponseController(w)}
	for i := range plans {
		if p := &plans[i]; p.local != nil && !p.m.notification() {
			ew.writeMessage(p.local.appendResponse(nil, p.m.id, cid))
		}
	}
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m.err != nil || !isSSE(m.c.resp.Header) {
				for _, msg := range g.collect(pr, m) {
					ew.writeMessage(msg)
				}
				return
			}
			var tf func([]byte) []byte
			if m.p.filter {
				tf = func(msg []byte) []byte { return g.filterTools(pr, msg) }
			}
			answered := false
			err := readEvents(m.c, func(ev *event) {
				if ev.hasData && isResponse(ev.data) {
					answered = true
				}
				ew.write(ev, tf, true)
			})
			switch {
			case answered:
				m.p.call.finish("")
			case err != nil:
				for _, msg := range g.synth(m, errUpstream(err == errTimeout), "UPSTREAM_UNAVAILABLE") {
					ew.writeMessage(msg)
				}
			default:
				for _, msg := range g.synth(m, badAnswer(m.c.resp.StatusCode), "UPSTREAM_UNAVAILABLE") {
					ew.writeMessage(msg)
				}
			}
		}()
	}
	wg.Wait()
}

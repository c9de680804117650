package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// defaultMaxStreams is the cap of Options.MaxStreams left zero.
const defaultMaxStreams = 32

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
// and never forwarded ([Gateway.refuseStream]).
func (g *Gateway) serveStream(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, body []byte, p *plan) {
	var m *message
	if p != nil {
		m = p.m
	}
	if !g.streams.acquire(pr.Subject) {
		g.refuseStream(w, r, pr, cid, m)
		return
	}
	defer g.streams.release(pr.Subject)
	if p != nil {
		g.logDecision(cid, pr, p, nil)
	} else {
		g.log.Info("allow", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", r.Method)
	}
	g.passThrough(w, r, pr, cid, body, m, nil)
}

// refuseStream logs, records and answers the refusal of pr's stream r
// (m its subscriptions/listen request, nil for a GET) past
// Options.MaxStreams: -32029 with 429 and a Retry-After of 1 s.
func (g *Gateway) refuseStream(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, m *message) {
	e := &rpcError{code: CodeLimitExceeded, status: http.StatusTooManyRequests, contract: "CONCURRENCY_LIMIT_EXCEEDED",
		message: "Too many requests: open stream limit exceeded (" + strconv.Itoa(g.streams.max) +
			" GET or subscriptions/listen streams per principal)", retryAfter: time.Second}
	method := r.Method
	if m != nil {
		method = m.method
	}
	g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", method,
		"outcome", e.contract, "code", e.code, "reason", e.message)
	g.audit(r.Context(), pr, cid, infoOf(r), "", "", nil, audit.PhaseOutcome, false, e.contract, e.message, 0, g.now())
	g.writeError(w, e, m.idOrNil(), cid)
}

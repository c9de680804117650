package gateway

import (
	"net/http"
	"sync"
)

// Bounds of the session table.
const (
	// maxSessions bounds the confirmed bindings. In a full table a new
	// confirmed binding takes the place of the oldest one of its own
	// subject; a subject that holds none gets none, and its requests on
	// the new session are refused until a DELETE makes room.
	maxSessions = 1 << 16
	// maxPendingSessions bounds the unconfirmed bindings; the oldest goes
	// first.
	maxPendingSessions = 1 << 10
)

// sessions binds each downstream MCP session to the subject that opened it,
// so that one principal cannot ride another's Mcp-Session-Id: the gateway
// authenticates every request, but the downstream, which trusts the gateway,
// would otherwise serve whoever presents the id.
//
// A binding is confirmed when the downstream vouches for it: its 2xx answer
// to a subject's request names the id in Mcp-Session-Id (the answer to
// initialize), or answers a request of that subject carrying the id. An id
// the gateway has not seen (a session opened before a restart) is bound
// unconfirmed to the first subject that presents it, while that request is
// forwarded: a 2xx answer confirms it, any other answer (404 for an unknown
// session) or a failed request drops it. Unconfirmed bindings have a small
// table of their own, so ids a client makes up never displace a confirmed
// binding, and a confirmed binding is only ever displaced by a newer one of
// the same subject. A binding is forgotten when a DELETE ends the session.
// Safe for concurrent use.
type sessions struct {
	mu      sync.Mutex
	owner   map[string]binding  // session id -> binding, confirmed or not
	held    map[string]*holding // subject -> its confirmed bindings
	queue                       // unconfirmed bindings, oldest first
	pending int                 // unconfirmed bindings in owner
	seq     uint64              // stamp of the latest binding
}

// A binding is a session's owner. Its seq tells it from an earlier binding
// of the same id in the queues.
type binding struct {
	subject   string
	seq       uint64
	confirmed bool
}

// holding is one subject's confirmed bindings: n of them, oldest first.
type holding struct {
	queue
	n int
}

func newSessions() *sessions {
	return &sessions{owner: make(map[string]binding), held: make(map[string]*holding)}
}

// admit reports whether subject may use session id. An unseen id is bound
// to subject unconfirmed, unless subject could not keep it once confirmed
// (the table is full and holds none of subject's).
func (s *sessions) admit(id, subject string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.owner[id]; ok {
		return b.subject == subject
	}
	if len(s.owner)-s.pending >= maxSessions && s.held[subject] == nil {
		return false
	}
	if s.pending >= maxPendingSessions {
		if old, ok := s.queue.pop(s.live); ok {
			s.removeLocked(old.id, s.owner[old.id])
		}
	}
	s.seq++
	s.owner[id] = binding{subject: subject, seq: s.seq}
	s.pending++
	s.queue.push(slot{id, s.seq}, s.pending, s.live)
	return true
}

// settle records the downstream's answer to subject's request carrying
// session id: a 2xx answer (ok) confirms subject's unconfirmed binding, or
// binds an id that has none; any other answer drops subject's unconfirmed
// binding. A binding of another subject, or a confirmed one, is left alone.
func (s *sessions) settle(id, subject string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, found := s.owner[id]
	switch {
	case found && (b.confirmed || b.subject != subject):
	case ok:
		s.confirmLocked(id, subject)
	case found:
		s.removeLocked(id, b)
	}
}

// bind records that the downstream's 2xx answer to subject's request named
// session id: subject owns it, unless it is confirmed as someone's already.
func (s *sessions) bind(id, subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.owner[id]; !ok || !b.confirmed {
		s.confirmLocked(id, subject)
	}
}

// confirmLocked binds id, unbound or bound unconfirmed, to subject,
// confirmed. In a full table it takes the place of subject's oldest
// confirmed binding; with none, id stays unbound.
func (s *sessions) confirmLocked(id, subject string) {
	if b, ok := s.owner[id]; ok {
		s.removeLocked(id, b)
	}
	if len(s.owner)-s.pending >= maxSessions {
		h := s.held[subject]
		if h == nil {
			return
		}
		old, _ := h.pop(s.live)
		s.removeLocked(old.id, s.owner[old.id])
	}
	h := s.held[subject]
	if h == nil {
		h = &holding{}
		s.held[subject] = h
	}
	s.seq++
	s.owner[id] = binding{subject: subject, seq: s.seq, confirmed: true}
	h.n++
	h.push(slot{id, s.seq}, h.n, s.live)
}

// forget drops the binding of id.
func (s *sessions) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.owner[id]; ok {
		s.removeLocked(id, b)
	}
}

// removeLocked drops b, the binding of id. Its slot stays in its queue,
// stale, until popped or compacted away.
func (s *sessions) removeLocked(id string, b binding) {
	delete(s.owner, id)
	if !b.confirmed {
		s.pending--
		return
	}
	if h := s.held[b.subject]; h != nil {
		if h.n--; h.n == 0 {
			delete(s.held, b.subject)
		}
	}
}

// live reports whether sl is the current binding of its id.
func (s *sessions) live(sl slot) bool {
	b, ok := s.owner[sl.id]
	return ok && b.seq == sl.seq
}

// A slot is one binding in a queue.
type slot struct {
	id  string
	seq uint64
}

// queue is a FIFO of bindings. The slot of a binding dropped meanwhile stays
// until popped, or compacted away once such slots outnumber the live ones.
type queue struct {
	fifo []slot
	head int
}

// push appends sl; n is the number of live slots, sl included.
func (q *queue) push(sl slot, n int, live func(slot) bool) {
	q.fifo = append(q.fifo, sl)
	if len(q.fifo)-q.head > 2*n+64 {
		kept := make([]slot, 0, n)
		for _, x := range q.fifo[q.head:] {
			if live(x) {
				kept = append(kept, x)
			}
		}
		q.fifo, q.head = kept, 0
	}
}

// pop removes and returns the oldest live slot.
func (q *queue) pop(live func(slot) bool) (slot, bool) {
	defer func() {
		if q.head > len(q.fifo)/2 {
			q.fifo, q.head = append([]slot(nil), q.fifo[q.head:]...), 0
		}
	}()
	for q.head < len(q.fifo) {
		sl := q.fifo[q.head]
		q.fifo[q.head] = slot{}
		q.head++
		if live(sl) {
			return sl, true
		}
	}
	return slot{}, false
}

// errSession refuses a request for a session another principal owns, or
// one the session table has no room for. It reads as the downstream's own
// answer for an unknown session (404), so it reveals nothing about whose
// session it is.
func errSession() *rpcError {
	return &rpcError{code: CodeForbidden, status: http.StatusNotFound, contract: "FORBIDDEN", message: "Session not found"}
}

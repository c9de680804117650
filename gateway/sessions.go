package gateway

import (
	"net/http"
	"strings"
	"sync"
)

// Bounds of the session table.
const (
	// maxSessions bounds the confirmed bindings, the last resort after
	// maxSessionsPerSubject. In a full table a new confirmed binding takes
	// the place of the oldest one of the subject holding the most, when
	// that subject holds at least two more than the new one's; otherwise
	// of the new one's own oldest. A subject that holds none when no
	// subject holds two or more (every binding is another subject's only
	// one) gets none: its session keeps a tombstone naming it, and its
	// requests on it are refused until room is made.
	maxSessions = 1 << 16
	// maxSessionsPerSubject bounds the confirmed bindings of one subject, so
	// that one principal cannot fill the table and lock every other out: a
	// subject's new confirmed binding beyond it takes the place of that
	// subject's own oldest one.
	maxSessionsPerSubject = 1 << 10
	// maxPendingSessions bounds the unconfirmed bindings. Each has a
	// request in flight, so none is dropped to make room: in a full table a
	// request on an unseen id is refused.
	maxPendingSessions = 1 << 12
	// maxPendingPerSubject bounds the unconfirmed bindings of one subject,
	// so that one principal cannot fill their table.
	maxPendingPerSubject = 1 << 8
	// maxTombstones bounds the tombstones, the last resort after each
	// subject's share of maxSessionsPerSubject; the oldest goes first.
	maxTombstones = maxSessions
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
// unconfirmed to a subject when a request of that subject carrying it is
// sent downstream ([sessions.admit]), never before: a request the gateway
// refuses itself binds nothing ([sessions.allows] only checks). The first
// such request holds the id, and so may the same subject's further
// requests; another subject's is refused while the hold lasts. The table
// counts each subject's requests downstream on each id: a 2xx answer to any
// of them confirms the binding; the hold is dropped when the last of them
// is answered otherwise (404 for an unknown session) or fails, never while
// one is still downstream. Unconfirmed bindings have a table of their own
// (maxPendingSessions, each subject's share maxPendingPerSubject), so ids a
// client makes up never displace a confirmed binding; as every hold has a
// request downstream, none is dropped to make room, and a full table, or
// share, refuses a request on an unseen id.
//
// A confirmed binding is displaced only for a newer one: of the same
// subject past maxSessionsPerSubject; in a full table (maxSessions), of a
// subject holding at least two fewer bindings than the subject holding the
// most, whose oldest goes (fair shares: principals that filled the table
// cannot lock a newcomer out), else of the same subject. The displaced
// session may still be live downstream, so its id keeps a
// tombstone naming its former subject: no other subject may use it, while
// the former subject may (its 2xx answer confirms the binding again and
// removes the tombstone). A session the downstream vouches for in a full
// table holding none of its subject's and no fair share to take (every
// binding its subject's only one; an initialize forwarded because it
// carries no id) is not bound but gets such a tombstone too, so that no one
// else may claim it once room is made. Tombstones have a bounded table of
// their own, each subject's share as large as maxSessionsPerSubject, so
// that one principal's sessions never push out another's tombstones; past a
// share, or in a full table, the oldest goes first. A 2xx answer to a
// DELETE that ends the session removes its binding and tombstone. Bindings
// do not expire: a session abandoned without a DELETE is held until
// displaced, which in a full table happens to the largest holder's first.
// An idle expiry would be safe only once the downstream has dropped the
// session, which the gateway cannot see: the go-sdk keeps sessions for ever
// unless its SessionTimeout is set, restarts that timer when a POST handler
// returns (which may be after the gateway gave up on the answer) and does
// not count a GET stream as use, and other servers differ. A binding gone
// while its session lives lets any principal who learnt the id ride it.
//
// Ids are compared without regard to ASCII case ([sessionKey]): a
// downstream may read them so.
//
// Safe for concurrent use.
type sessions struct {
	mu        sync.Mutex
	owner     map[string]binding  // session id -> binding, confirmed or not
	held      map[string]*holding // subject -> its confirmed bindings
	pending   int                 // unconfirmed bindings in owner
	pendingBy map[string]int      // subject -> its unconfirmed bindings
	inflight  map[use]int         // requests admitted and not yet answered
	tombs     map[string]binding  // displaced session id -> former subject
	buried    map[string]*holding // subject -> its tombstones
	graves    queue               // tombstones, oldest first
	seq       uint64              // stamp of the latest binding or tombstone
	// ranks[k] lists the holdings in held with k confirmed bindings, in
	// any order (each knows its place), so that the largest is found in
	// constant time; top is at least the largest k with a holding.
	ranks [maxSessionsPerSubject + 1][]*holding
	top   int
}

// A binding is a session's owner, or in a tombstone its former owner. Its
// seq (zero for an unconfirmed binding, which is in no queue) tells it from
// an earlier binding of the same id in the queues.
type binding struct {
	subject   string
	seq       uint64
	confirmed bool
	// streamed: a GET of the session's was sent downstream (see
	// [sessions.streamed]).
	streamed bool
}

// A use is one subject's use of one session id, the key of the count of its
// requests downstream.
type use struct{ id, subject string }

// holding is one subject's confirmed bindings or tombstones: n of them,
// oldest first. A holding of confirmed bindings is listed in ranks[n] at
// place.
type holding struct {
	queue
	n     int
	place int
}

func newSessions() *sessions {
	return &sessions{
		owner: make(map[string]binding), held: make(map[string]*holding),
		pendingBy: make(map[string]int), inflight: make(map[use]int),
		tombs: make(map[string]binding), buried: make(map[string]*holding),
	}
}

// allows reports whether subject may use session id, and binds nothing: the
// id is bound to subject or to no one, its tombstone (if any) names subject,
// and for an id bound to no one, a confirmed binding could be kept (the
// table has room, or holds one of subject's) and an unconfirmed one made
// (neither the table of unconfirmed bindings nor subject's share of it is
// full).
func (s *sessions) allows(id, subject string) bool {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allowsLocked(id, subject)
}

func (s *sessions) allowsLocked(id, subject string) bool {
	if b, ok := s.owner[id]; ok {
		return b.subject == subject
	}
	if t, ok := s.tombs[id]; ok && t.subject != subject {
		return false
	}
	if len(s.owner)-s.pending >= maxSessions && s.held[subject] == nil && s.largestLocked() < 2 {
		return false
	}
	return s.pending < maxPendingSessions && s.pendingBy[subject] < maxPendingPerSubject
}

// admit reports whether subject may use session id, as allows does, for a
// request about to be sent downstream, and counts the request until
// [sessions.settle] or [sessions.end] records its answer: an id bound to no
// one is then bound to subject unconfirmed, until an answer settles it.
func (s *sessions) admit(id, subject string) bool {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.allowsLocked(id, subject) {
		return false
	}
	s.inflight[use{id, subject}]++
	if _, ok := s.owner[id]; !ok {
		s.owner[id] = binding{subject: subject}
		s.pending++
		s.pendingBy[subject]++
	}
	return true
}

// settle records the downstream's answer to subject's request carrying
// session id, admitted before: a 2xx answer (ok) confirms subject's
// unconfirmed binding, or binds an id that has none; any other answer drops
// subject's unconfirmed binding once none of subject's requests on it is
// downstream any more. A binding of another subject, a confirmed one, or a
// tombstone of another subject is left alone.
func (s *sessions) settle(id, subject string, ok bool) {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	left := s.answeredLocked(id, subject)
	b, found := s.owner[id]
	switch {
	case found && (b.confirmed || b.subject != subject):
	case ok:
		if t, dead := s.tombs[id]; !dead || t.subject == subject {
			s.confirmLocked(id, subject)
		}
	case found && left == 0:
		s.removeLocked(id, b)
	}
}

// end records the downstream's 2xx answer to subject's DELETE of session
// id, admitted before: the session is over, and its binding and tombstone
// go, whoever held them.
func (s *sessions) end(id, subject string) {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answeredLocked(id, subject)
	s.forgetLocked(id)
}

// answeredLocked uncounts one of subject's requests on id and returns how
// many are still downstream.
func (s *sessions) answeredLocked(id, subject string) int {
	u := use{id, subject}
	n := s.inflight[u] - 1
	if n > 0 {
		s.inflight[u] = n
		return n
	}
	delete(s.inflight, u)
	return 0
}

// markStreamed records that a GET of subject's on session id, bound to
// subject confirmed, is being sent downstream: a later GET of that session
// reconnects a stream ([Gateway.refuseStream]).
func (s *sessions) markStreamed(id, subject string) {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.owner[id]; ok && b.confirmed && b.subject == subject && !b.streamed {
		b.streamed = true
		s.owner[id] = b
	}
}

// streamed reports whether a GET of subject's on session id was sent
// downstream while the id was bound to subject confirmed, and the binding
// has not changed since.
func (s *sessions) streamed(id, subject string) bool {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.owner[id]
	return ok && b.subject == subject && b.streamed
}

// bind records that the downstream's 2xx answer to subject's request named
// session id: subject owns it, unless it is confirmed as someone's already
// or its tombstone names another subject.
func (s *sessions) bind(id, subject string) {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.owner[id]; ok && b.confirmed {
		return
	}
	if t, ok := s.tombs[id]; ok && t.subject != subject {
		return
	}
	s.confirmLocked(id, subject)
}

// confirmLocked binds id, unbound or bound unconfirmed, to subject,
// confirmed, and removes its tombstone. Past maxSessionsPerSubject it takes
// the place of subject's oldest confirmed binding; in a full table, of the
// oldest of the subject holding the most when that one holds at least two
// more than subject, else of subject's own oldest (a displaced binding
// leaves a tombstone). In a full table where subject holds none and no one
// holds two, id is left unbound with a tombstone naming subject, so that no
// other subject may use it.
func (s *sessions) confirmLocked(id, subject string) {
	if b, ok := s.owner[id]; ok {
		s.removeLocked(id, b)
	}
	full := len(s.owner)-s.pending >= maxSessions
	h := s.held[subject]
	own := 0
	if h != nil {
		own = h.n
	}
	var from *holding // whose oldest binding makes room
	switch {
	case own >= maxSessionsPerSubject:
		from = h
	case !full:
	case s.largestLocked() >= own+2:
		from = s.ranks[s.top][0]
	case h != nil:
		from = h
	default:
		s.buryLocked(id, subject)
		return
	}
	if from != nil {
		if old, ok := from.pop(s.live); ok {
			s.displaceLocked(old.id)
		}
	}
	s.unburyLocked(id)
	h = s.held[subject] // displaceLocked drops a holding it empties
	if h == nil {
		h = &holding{}
		s.held[subject] = h
	}
	s.seq++
	s.owner[id] = binding{subject: subject, seq: s.seq, confirmed: true}
	s.rerankLocked(h, h.n+1)
	h.push(slot{id, s.seq}, h.n, s.live)
}

// largestLocked returns the number of confirmed bindings of the subject
// holding the most (0 for none); that subject's holding is s.ranks[s.top][0].
func (s *sessions) largestLocked() int {
	for s.top > 0 && len(s.ranks[s.top]) == 0 {
		s.top--
	}
	return s.top
}

// rerankLocked sets h.n, the count of a holding of confirmed bindings, to
// n, and moves it to its rank.
func (s *sessions) rerankLocked(h *holding, n int) {
	if h.n > 0 {
		r := s.ranks[h.n]
		last := r[len(r)-1]
		r[h.place], last.place = last, h.place
		r[len(r)-1] = nil
		s.ranks[h.n] = r[:len(r)-1]
	}
	h.n = n
	if n > 0 {
		h.place = len(s.ranks[n])
		s.ranks[n] = append(s.ranks[n], h)
		s.top = max(s.top, n)
	}
}

// displaceLocked drops the confirmed binding of id and leaves a tombstone
// naming its subject.
func (s *sessions) displaceLocked(id string) {
	b := s.owner[id]
	s.removeLocked(id, b)
	s.buryLocked(id, b.subject)
}

// buryLocked leaves a tombstone of id, which is bound to no one, naming
// subject, in place of any it had. Past the subject's share, or in a full
// table, the oldest tombstone of the subject, or of all, goes first.
func (s *sessions) buryLocked(id, subject string) {
	s.unburyLocked(id)
	if t := s.buried[subject]; t != nil && t.n >= maxSessionsPerSubject {
		if old, ok := t.pop(s.dead); ok {
			s.unburyLocked(old.id)
		}
	}
	if len(s.tombs) >= maxTombstones {
		if old, ok := s.graves.pop(s.dead); ok {
			s.unburyLocked(old.id)
		}
	}
	t := s.buried[subject]
	if t == nil {
		t = &holding{}
		s.buried[subject] = t
	}
	s.seq++
	s.tombs[id] = binding{subject: subject, seq: s.seq}
	t.n++
	t.push(slot{id, s.seq}, t.n, s.dead)
	s.graves.push(slot{id, s.seq}, len(s.tombs), s.dead)
}

// forget drops the binding and the tombstone of id.
func (s *sessions) forget(id string) {
	id = sessionKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(id)
}

func (s *sessions) forgetLocked(id string) {
	if b, ok := s.owner[id]; ok {
		s.removeLocked(id, b)
	}
	s.unburyLocked(id)
}

// removeLocked drops b, the binding of id. Its slot stays in its queue,
// stale, until popped or compacted away.
func (s *sessions) removeLocked(id string, b binding) {
	delete(s.owner, id)
	if !b.confirmed {
		s.pending--
		if s.pendingBy[b.subject]--; s.pendingBy[b.subject] == 0 {
			delete(s.pendingBy, b.subject)
		}
		return
	}
	if h := s.held[b.subject]; h != nil {
		if s.rerankLocked(h, h.n-1); h.n == 0 {
			delete(s.held, b.subject)
		}
	}
}

// unburyLocked drops the tombstone of id, if any. Its slots stay in their
// queues, stale, until popped or compacted away.
func (s *sessions) unburyLocked(id string) {
	t, ok := s.tombs[id]
	if !ok {
		return
	}
	delete(s.tombs, id)
	if h := s.buried[t.subject]; h != nil {
		if h.n--; h.n == 0 {
			delete(s.buried, t.subject)
		}
	}
}

// live reports whether sl is the current binding of its id.
func (s *sessions) live(sl slot) bool {
	b, ok := s.owner[sl.id]
	return ok && b.seq == sl.seq
}

// dead reports whether sl is the current tombstone of its id.
func (s *sessions) dead(sl slot) bool {
	t, ok := s.tombs[sl.id]
	return ok && t.seq == sl.seq
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

// errSession refuses a request for a session another principal owns or
// holds (a tombstone), or one the session table has no room for (confirmed
// or unconfirmed). It reads as the downstream's own answer for an unknown
// session (404), so it reveals nothing about whose session it is.
func errSession() *rpcError {
	return &rpcError{code: CodeForbidden, status: http.StatusNotFound, contract: "FORBIDDEN", message: "Session not found"}
}

// validSessionID reports whether id is a session id as the MCP
// specification defines them: one or more visible ASCII characters (0x21
// to 0x7E). Any other is refused before it is checked against the table:
// the gateway compares ids byte for byte but for ASCII case
// ([sessionKey]), and a downstream that read the id otherwise (trimmed,
// or decoded) would serve another session than the one checked.
func validSessionID(id string) bool {
	if id == "" || len(id) > maxSessionIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// sessionKey returns the key the table keeps session id under: id with
// ASCII letters in lower case, so that ids differing only in case are one
// session to the table. A downstream may look its sessions up without
// regard to case (a table under a case-insensitive collation, MySQL's and
// SQL Server's defaults; files on a case-insensitive file system): a
// principal presenting another's id in other case would otherwise be
// judged on an id bound to no one and served on the other's session.
func sessionKey(id string) string { return strings.ToLower(id) }

// maxSessionIDLen bounds a session id (the go-sdk's are about 30
// characters): the table keeps ids, so their size bounds its memory.
const maxSessionIDLen = 256

// errSessionID refuses a request whose Mcp-Session-Id is not a valid
// session id ([validSessionID]).
func errSessionID() *rpcError {
	return errInvalidRequest(hdrSession + " must be one or more visible ASCII characters")
}

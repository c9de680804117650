package gateway

import (
	"net/http"
	"sync"
)

// maxSessions bounds the session table; the oldest binding goes first.
const maxSessions = 1 << 16

// sessions binds each downstream MCP session to the subject that opened it,
// so that one principal cannot ride another's Mcp-Session-Id: the gateway
// authenticates every request, but the downstream, which trusts the gateway,
// would otherwise serve whoever presents the id. A session id is bound when
// a downstream response carries it (the answer to initialize) or, for an id
// the gateway has not seen (opened before a restart), on first use. It is
// forgotten when a DELETE ends the session. Safe for concurrent use.
type sessions struct {
	mu    sync.Mutex
	owner map[string]string // session id -> subject
	fifo  []string          // insertion order, for eviction
	head  int
}

func newSessions() *sessions {
	return &sessions{owner: make(map[string]string)}
}

// admit reports whether subject may use session id, binding an unseen id
// to subject.
func (s *sessions) admit(id, subject string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if owner, ok := s.owner[id]; ok {
		return owner == subject
	}
	s.bindLocked(id, subject)
	return true
}

// bind records that subject owns session id, unless someone already does.
func (s *sessions) bind(id, subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.owner[id]; !ok {
		s.bindLocked(id, subject)
	}
}

func (s *sessions) bindLocked(id, subject string) {
	if len(s.owner) >= maxSessions {
		// Evict the oldest binding still present.
		for s.head < len(s.fifo) {
			old := s.fifo[s.head]
			s.fifo[s.head] = ""
			s.head++
			if _, ok := s.owner[old]; ok {
				delete(s.owner, old)
				break
			}
		}
		if s.head > len(s.fifo)/2 {
			s.fifo = append([]string(nil), s.fifo[s.head:]...)
			s.head = 0
		}
	}
	s.owner[id] = subject
	s.fifo = append(s.fifo, id)
	// Ids forgotten by a DELETE stay in fifo until evicted, which a table
	// that never fills never does: drop them once they outnumber the live.
	if n := len(s.fifo) - s.head; n > 2*len(s.owner)+1024 {
		live := make([]string, 0, len(s.owner))
		seen := make(map[string]bool, len(s.owner))
		for _, old := range s.fifo[s.head:] {
			if _, ok := s.owner[old]; ok && !seen[old] {
				seen[old] = true
				live = append(live, old)
			}
		}
		s.fifo, s.head = live, 0
	}
}

// forget drops the binding of id.
func (s *sessions) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owner, id)
}

// errSession refuses a request for a session another principal owns. It
// reads as the downstream's own answer for an unknown session (404), so it
// reveals nothing about whose session it is.
func errSession() *rpcError {
	return &rpcError{code: CodeForbidden, status: http.StatusNotFound, contract: "FORBIDDEN", message: "Session not found"}
}

package gateway

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fillOnePerSubject fills s with maxSessions confirmed bindings: big holds
// n of them (big-0 the oldest), every other its own subject's only one.
func fillOnePerSubject(s *sessions, big string, n int) {
	for i := range n {
		s.bind(big+"-"+strconv.Itoa(i), big)
	}
	for i := range maxSessions - n {
		s.bind("one-"+strconv.Itoa(i), "one-"+strconv.Itoa(i))
	}
}

// TestReview49FullTableShareAtTwo checks the edge of the fair share in a
// full table: a subject holding none may take the place of the largest
// holder's oldest binding when that one holds two (two more than the
// newcomer), and not when every subject holds one. allows and the binding
// the downstream's answer makes agree on it: a request on an unseen id is
// admitted exactly when its session, once confirmed, is bound to its
// subject; refused, the session the downstream vouches for anyway (an
// initialize) gets a tombstone naming its subject and no binding.
func TestReview49FullTableShareAtTwo(t *testing.T) {
	for _, largest := range []int{1, 2} {
		t.Run("largest_"+strconv.Itoa(largest), func(t *testing.T) {
			s := newSessions()
			fillOnePerSubject(s, "big", largest)
			room := largest >= 2
			if got := s.allows("unseen", "stranger"); got != room {
				t.Fatalf("a stranger on an unseen id in a full table whose largest holder has %d: allowed %v, want %v", largest, got, room)
			}
			if got := s.admit("unseen", "stranger"); got != room {
				t.Fatalf("admit: %v, want %v", got, room)
			}
			if room {
				s.settle("unseen", "stranger", true)
			} else {
				s.bind("unseen", "stranger")
			}
			b, bound := s.owner["unseen"]
			tb, buried := s.tombs["unseen"]
			switch {
			case room && (!bound || !b.confirmed || b.subject != "stranger"):
				t.Fatalf("the stranger's session, answered 2xx: binding %+v (bound %v), want the stranger's, confirmed", b, bound)
			case room:
				if _, ok := s.owner["big-0"]; ok {
					t.Error("big-0, the largest holder's oldest, is still bound after the stranger took a place")
				}
				if tb := s.tombs["big-0"]; tb.subject != "big" {
					t.Errorf("big-0's tombstone %+v, want one naming big", tb)
				}
				if len(s.owner) != maxSessions {
					t.Errorf("%d bindings, want %d", len(s.owner), maxSessions)
				}
			case bound || !buried || tb.subject != "stranger":
				t.Fatalf("the stranger's session vouched for with no place to take: binding %+v (bound %v), tombstone %+v (%v); want no binding and a tombstone naming the stranger", b, bound, tb, buried)
			default:
				if s.allows("unseen", "stranger") || s.allows("unseen", "other") {
					t.Error("a session buried for want of room is allowed before room is made")
				}
				// Vouched for again (another answer naming it): still
				// one tombstone, counted once.
				s.bind("unseen", "stranger")
				if n := s.buried["stranger"].n; n != 1 {
					t.Errorf("the stranger's tombstones counted %d after its session was buried twice, want 1", n)
				}
			}
			checkSessionInvariants(t, s, map[use]int{}, -1)
		})
	}
}

// TestReview49SettleLeavesOthersAlone checks that a 2xx answer settling a
// request leaves alone a binding that is not the requester's unconfirmed
// one: the requester's confirmed binding keeps its age (its subject's
// oldest still makes room first) and its mark of a GET sent; another
// subject's unconfirmed binding, made after the requester's session ended
// under a request still downstream, stays the other's.
func TestReview49SettleLeavesOthersAlone(t *testing.T) {
	t.Run("own_confirmed", func(t *testing.T) {
		s := newSessions()
		s.bind("a-0", "a")
		s.bind("a-1", "a")
		s.markStreamed("a-0", "a")
		before := s.owner["a-0"]
		if !s.admit("a-0", "a") {
			t.Fatal("a on its own session refused")
		}
		s.settle("a-0", "a", true)
		if got := s.owner["a-0"]; got != before {
			t.Fatalf("a-0's binding after a 2xx answer on it: %+v, want it unchanged, %+v", got, before)
		}
		if !s.streamed("a-0", "a") {
			t.Error("a-0 lost its mark of a GET sent")
		}
		for i := range maxSessionsPerSubject - 1 {
			s.bind("a-new-"+strconv.Itoa(i), "a")
		}
		if _, ok := s.owner["a-0"]; ok {
			t.Error("a-0, a's oldest session, is still bound past a's share: a 2xx answer made it young again")
		}
		if _, ok := s.owner["a-1"]; !ok {
			t.Error("a-1 was displaced before a-0, a's oldest")
		}
		checkSessionInvariants(t, s, map[use]int{}, -1)
	})
	t.Run("another_unconfirmed", func(t *testing.T) {
		s := newSessions()
		for range 2 { // two of a's requests on x downstream
			if !s.admit("x", "a") {
				t.Fatal("a refused an unseen id")
			}
		}
		s.end("x", "a") // a's DELETE answered 2xx; a's other request is still downstream
		if !s.admit("x", "b") {
			t.Fatal("b refused an id whose session ended")
		}
		s.settle("x", "a", true)
		if b := s.owner["x"]; b.subject != "b" || b.confirmed {
			t.Errorf("x after a's late 2xx answer: %+v, want b's, unconfirmed", b)
		}
		checkSessionInvariants(t, s, map[use]int{{"x", "b"}: 1}, -1)
	})
}

// TestReview49StreamedMark checks which GETs mark a session as streamed
// (a later GET of it reconnects: [Gateway.refuseStream]): only its
// subject's, on its binding confirmed; and that the mark is its subject's
// alone and goes with the binding.
func TestReview49StreamedMark(t *testing.T) {
	s := newSessions()
	s.bind("c", "a")  // a's, confirmed
	s.admit("p", "a") // a's, unconfirmed
	s.bind("o", "b")  // b's, confirmed
	s.bind("c2", "a") // a's, confirmed, never marked
	s.markStreamed("c", "a")
	s.markStreamed("p", "a")
	s.markStreamed("o", "a") // another's: refused before it is sent, but never marked
	s.markStreamed("u", "a") // bound to no one
	for _, tc := range []struct {
		id, subject string
		want        bool
	}{
		{"c", "a", true}, {"c", "b", false}, {"c2", "a", false}, {"p", "a", false},
		{"o", "a", false}, {"o", "b", false}, {"u", "a", false},
	} {
		if got := s.streamed(tc.id, tc.subject); got != tc.want {
			t.Errorf("streamed(%s, %s) = %v, want %v", tc.id, tc.subject, got, tc.want)
		}
	}
	if _, ok := s.owner["u"]; ok {
		t.Error("marking an id bound to no one bound it")
	}
	if b := s.owner["p"]; b.confirmed || b.streamed {
		t.Errorf("a's unconfirmed binding after its GET: %+v, want unconfirmed and unmarked", b)
	}
	if b := s.owner["o"]; b.subject != "b" || b.streamed {
		t.Errorf("b's binding after a's GET on it: %+v, want b's, unmarked", b)
	}
	// A binding made anew (its session displaced, then vouched for again)
	// has no mark: its stream is new.
	for i := range maxSessionsPerSubject {
		s.bind("a-"+strconv.Itoa(i), "a")
	}
	if _, ok := s.owner["c"]; ok {
		t.Fatal("setup: c not displaced past a's share")
	}
	s.bind("c", "a")
	if s.streamed("c", "a") {
		t.Error("c, bound anew after it was displaced, still reads as streamed")
	}
	checkSessionInvariants(t, s, map[use]int{{"p", "a"}: 1}, -1)
}

// TestReview49BindVouched checks bind, the downstream naming a session in
// its 2xx answer to subject's request (an initialize's): the session is
// subject's even when another subject holds it unconfirmed (a request on
// an id it made up, still downstream), whose later 2xx answer does not
// take it back; the subject's own unconfirmed hold is confirmed; a
// tombstone of another subject keeps the session from subject, and one of
// subject's own gives it back.
func TestReview49BindVouched(t *testing.T) {
	t.Run("over_another_hold", func(t *testing.T) {
		s := newSessions()
		if !s.admit("x", "b") {
			t.Fatal("b refused an unseen id")
		}
		s.bind("x", "a")
		if b := s.owner["x"]; b.subject != "a" || !b.confirmed {
			t.Fatalf("x named in the answer to a's initialize while b held it unconfirmed: %+v, want a's, confirmed", b)
		}
		s.settle("x", "b", true)
		if b := s.owner["x"]; b.subject != "a" || s.allows("x", "b") {
			t.Errorf("after b's late 2xx answer: %+v, b allowed %v; want a's and b refused", b, s.allows("x", "b"))
		}
		checkSessionInvariants(t, s, map[use]int{}, -1)
	})
	t.Run("own_hold", func(t *testing.T) {
		s := newSessions()
		s.admit("x", "a")
		s.bind("x", "a")
		if b := s.owner["x"]; b.subject != "a" || !b.confirmed {
			t.Fatalf("x named for a while a held it unconfirmed: %+v, want a's, confirmed", b)
		}
		s.settle("x", "a", false) // a's request on it answered 404 after all
		if b, ok := s.owner["x"]; !ok || b.subject != "a" || s.allows("x", "b") {
			t.Errorf("after a's request on it was answered 404: %+v (bound %v); want a's, b refused", b, ok)
		}
		checkSessionInvariants(t, s, map[use]int{}, -1)
	})
	t.Run("tombstones", func(t *testing.T) {
		s := newSessions()
		s.bind("x", "a")
		for i := range maxSessionsPerSubject {
			s.bind("a-"+strconv.Itoa(i), "a")
		}
		if tb, ok := s.tombs["x"]; !ok || tb.subject != "a" {
			t.Fatalf("setup: x's tombstone %+v (%v), want one naming a", tb, ok)
		}
		s.bind("x", "b")
		if b, ok := s.owner["x"]; ok || s.tombs["x"].subject != "a" {
			t.Fatalf("x, a's displaced session, named in b's answer: binding %+v (%v), tombstone %+v; want no binding, a's tombstone", b, ok, s.tombs["x"])
		}
		s.bind("x", "a")
		if b := s.owner["x"]; b.subject != "a" || !b.confirmed {
			t.Errorf("x named in a's answer: %+v, want a's again, confirmed", b)
		}
		if _, ok := s.tombs["x"]; ok {
			t.Error("x is bound again and still has a tombstone")
		}
		checkSessionInvariants(t, s, map[use]int{}, -1)
	})
}

// TestReview49EndedSessionsLeaveNothing checks that a subject whose last
// confirmed binding, or last tombstone, goes (its session ended with a
// DELETE) leaves nothing in the table: one entry per subject that ever held
// a session would grow the table without bound.
func TestReview49EndedSessionsLeaveNothing(t *testing.T) {
	s := newSessions()
	for i := range 100 {
		id, sub := "x-"+strconv.Itoa(i), "sub-"+strconv.Itoa(i)
		s.bind(id, sub)
		if !s.admit(id, sub) {
			t.Fatalf("%s refused on its own session", sub)
		}
		s.end(id, sub)
	}
	// One subject's displaced session, ended too: its tombstone goes, and
	// with it the subject's count of tombstones.
	s.bind("t-x", "t")
	for i := range maxSessionsPerSubject {
		s.bind("t-"+strconv.Itoa(i), "t")
	}
	if _, ok := s.tombs["t-x"]; !ok {
		t.Fatal("setup: t-x not displaced")
	}
	s.admit("t-x", "t")
	s.end("t-x", "t")
	for i := range maxSessionsPerSubject {
		s.forget("t-" + strconv.Itoa(i))
	}
	ranked := 0
	for _, r := range s.ranks {
		ranked += len(r)
	}
	if ranked != 0 || len(s.held) != 0 || len(s.buried) != 0 || len(s.tombs) != 0 {
		t.Errorf("after every session ended: %d holdings ranked, %d held, %d tombstone holdings, %d tombstones; want none",
			ranked, len(s.held), len(s.buried), len(s.tombs))
	}
	checkSessionInvariants(t, s, map[use]int{}, -1)
}

// TestReview49OldestTombstoneGoesFirst checks that past a subject's share
// of tombstones its oldest goes first, counted from when each was made: a
// session displaced, bound again and displaced again has a new tombstone,
// and the old one's place in the queue does not make it go before older
// ones.
func TestReview49OldestTombstoneGoesFirst(t *testing.T) {
	s := newSessions()
	bindN := func(prefix string, n int) {
		for i := range n {
			s.bind(prefix+"-"+strconv.Itoa(i), "a")
		}
	}
	s.bind("x", "a")
	bindN("a", maxSessionsPerSubject) // x displaced: its first tombstone
	s.bind("x", "a")                  // x bound again, a-0 displaced
	for i := 1; i < maxSessionsPerSubject; i++ {
		s.forget("a-" + strconv.Itoa(i))
	}
	bindN("c", maxSessionsPerSubject) // x displaced again, after a-0
	if tb, ok := s.tombs["x"]; !ok || tb.seq <= s.tombs["a-0"].seq {
		t.Fatalf("setup: x's tombstone %+v (%v), a-0's %+v; want x's newer", tb, ok, s.tombs["a-0"])
	}
	// a-0 and x buried, c-0 … c-1022 displaced: a's share overflows once.
	bindN("d", maxSessionsPerSubject-1)
	if _, ok := s.tombs["a-0"]; ok {
		t.Error("a-0, a's oldest tombstone, is still there past a's share")
	}
	if tb, ok := s.tombs["x"]; !ok || tb.subject != "a" {
		t.Errorf("x's tombstone, newer than a-0's, went first past a's share (%+v, %v)", tb, ok)
	}
	checkSessionInvariants(t, s, map[use]int{}, -1)
}

// TestReview49Queue checks the session table's FIFO alone: pops come
// oldest first across its compactions, skipping slots no longer live; a
// queue with no live slot pops nothing; and a pop does not copy the queue
// until most of it is spent (a copy on every pop makes a full table's
// displacements quadratic).
func TestReview49Queue(t *testing.T) {
	live := map[string]bool{}
	isLive := func(sl slot) bool { return live[sl.id] }
	var q queue
	const n = 200
	for i := range n {
		id := strconv.Itoa(i)
		live[id] = i%3 != 1 // every third dropped meanwhile
		q.push(slot{id, uint64(i + 1)}, n, isLive)
	}
	var got []int
	for range n + 1 { // n pops at most, then one that finds none
		sl, ok := q.pop(isLive)
		if !ok {
			break
		}
		i, _ := strconv.Atoi(sl.id)
		got = append(got, i)
		live[sl.id] = false
	}
	var want []int
	for i := range n {
		if i%3 != 1 {
			want = append(want, i)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("popped %v, want the live slots oldest first, %v", got, want)
	}
	if sl, ok := q.pop(isLive); ok {
		t.Errorf("a queue with no live slot popped %+v", sl)
	}
	var empty queue
	if sl, ok := empty.pop(isLive); ok {
		t.Errorf("an empty queue popped %+v", sl)
	}

	var big queue
	always := func(slot) bool { return true }
	for i := range 1000 {
		big.push(slot{strconv.Itoa(i), uint64(i + 1)}, i+1, always)
	}
	if a := testing.AllocsPerRun(100, func() { big.pop(always) }); a != 0 {
		t.Errorf("a pop from a queue of 1000, at most 101 of them spent, allocates %.1f times, want 0 (no copy)", a)
	}
}

// TestReview49ValidSessionID checks the session ids the gateway accepts:
// one to 256 visible ASCII characters, from '!' to '~', each of them,
// the first and the last included.
func TestReview49ValidSessionID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"!", true}, {"~", true}, {"!abc~", true}, {strings.Repeat("a", maxSessionIDLen), true},
		{"", false}, {strings.Repeat("a", maxSessionIDLen+1), false},
		{" abc", false}, {"abc ", false}, {"a b", false}, {"\tabc", false}, {"\x7fabc", false}, {"abc\x7f", false},
		{"\x80abc", false}, {"abc\x80", false}, {"ébc", false}, {"\x00abc", false},
	} {
		if got := validSessionID(tc.id); got != tc.want {
			t.Errorf("validSessionID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

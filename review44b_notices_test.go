package mcpguard_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r44bStall is a sending middleware below the guard that holds each
// tools/list_changed to a session in stuck until release is closed,
// whatever its context says (a transport whose write blocks), and records
// how many came to each session, and how long each had left to be sent.
type r44bStall struct {
	mu      sync.Mutex
	stuck   map[*mcp.ServerSession]bool
	sent    map[*mcp.ServerSession]int // notices that came, held or not
	left    []time.Duration
	release chan struct{}
	once    sync.Once
}

func (s *r44bStall) setup(srv *mcp.Server) {
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "notifications/tools/list_changed" {
				return next(ctx, method, req)
			}
			s.mu.Lock()
			ss := req.GetSession().(*mcp.ServerSession)
			stuck := s.stuck[ss]
			s.sent[ss]++
			if dl, ok := ctx.Deadline(); ok {
				s.left = append(s.left, time.Until(dl))
			} else {
				s.left = append(s.left, -1)
			}
			s.mu.Unlock()
			if stuck {
				<-s.release
			}
			return next(ctx, method, req)
		}
	})
}

func newR44bStall() *r44bStall {
	return &r44bStall{stuck: map[*mcp.ServerSession]bool{}, sent: map[*mcp.ServerSession]int{}, release: make(chan struct{})}
}

func (s *r44bStall) count(ss *mcp.ServerSession) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent[ss]
}

// free lets the held notices, and those to come, be sent.
func (s *r44bStall) free() { s.once.Do(func() { close(s.release) }) }

func (s *r44bStall) hold(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stuck[ss] = true
}

// TestReview44bStuckNoticesEachWaitedForOnce: two sessions in a row whose
// notices cannot be sent are each waited for a second (noticeWait), not
// for ever: the session after them is told two seconds after SetPolicy.
// Each notice has 10 seconds to be sent.
func TestReview44bStuckNoticesEachWaitedForOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stall := newR44bStall()
		spec := lcSpecTools
		spec.setup = stall.setup
		r := newR44bRig(t, lcPolicy(t, "user"), spec, slog.DiscardHandler)
		first := r.connect(bob, lcListTools)
		second := r.connect(bob, lcListTools)
		user := r.connect(bob, lcListTools)
		stall.hold(first.ss)
		stall.hold(second.ss)
		defer stall.free()
		r.setPolicy(lcPolicy(t, "admin"))
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if n := user.toolsHeard.Load(); n != 0 {
			t.Errorf("bob's third session heard %d tools/list_changed 1.5s in, want 0 (the second is waited for)", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := user.toolsHeard.Load(); n != 1 {
			t.Errorf("bob's third session heard %d tools/list_changed 2.5s in, want 1", n)
		}
		stall.mu.Lock()
		defer stall.mu.Unlock()
		want := []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}
		if len(stall.left) != len(want) {
			t.Fatalf("%d notices sent, want %d", len(stall.left), len(want))
		}
		for i, d := range stall.left {
			if d != want[i] {
				t.Errorf("notice %d had %v left to be sent, want %v", i, d, want[i])
			}
		}
	})
}

// TestReview44bStuckSessionSentNoOther: a session whose notice cannot be
// sent is sent no other while it is held, however many policies change
// its tools meanwhile (the session after it is told of each); once it was
// sent, the next change is sent to it again.
func TestReview44bStuckSessionSentNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stall := newR44bStall()
		spec := lcSpecTools
		spec.setup = stall.setup
		pu, pa := lcPolicy(t, "user"), lcPolicy(t, "admin")
		r := newR44bRig(t, pu, spec, slog.DiscardHandler)
		stuck := r.connect(bob, lcListTools)
		user := r.connect(bob, lcListTools)
		stall.hold(stuck.ss)
		defer stall.free()
		for i, p := range []*policy.Policy{pa, pu, pa} {
			r.setPolicy(p)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			if n := user.toolsHeard.Load(); n != int64(i+1) {
				t.Fatalf("after policy %d bob's other session heard %d tools/list_changed, want %d", i+1, n, i+1)
			}
		}
		if n := stall.count(stuck.ss); n != 1 {
			t.Errorf("the stuck session was sent %d tools/list_changed while held, want 1", n)
		}
		stall.free()
		synctest.Wait()
		r.setPolicy(pu)
		synctest.Wait()
		if n := stall.count(stuck.ss); n != 2 {
			t.Errorf("once its notice was sent, the session was sent %d in all after the next change, want 2", n)
		}
		if n := user.toolsHeard.Load(); n != 4 {
			t.Errorf("bob's other session heard %d tools/list_changed, want 4", n)
		}
	})
}

// TestReview44bBrokenNoticeLogged: a notice whose sending panics (a
// sending middleware's bug below the guard) is logged as such, once, and
// one whose sending fails (below the guard) as not sent, once; one sent is
// logged as neither; the session after it is told all the same.
func TestReview44bBrokenNoticeLogged(t *testing.T) {
	const (
		panicked = "mcpguard: a list_changed notification for a new policy panicked"
		notSent  = "mcpguard: a list_changed notification for a new policy not sent"
	)
	failOn := func(victim *atomic.Pointer[mcp.ServerSession]) func(*mcp.Server) {
		return func(srv *mcp.Server) {
			srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
					if m == "notifications/tools/list_changed" && req.GetSession() == victim.Load() {
						return nil, errors.New("the transport is closed")
					}
					return next(ctx, m, req)
				}
			})
		}
	}
	panicOn := func(victim *atomic.Pointer[mcp.ServerSession]) func(*mcp.Server) {
		return lcPanicOn("notifications/tools/list_changed", victim)
	}
	for _, tc := range []struct {
		name  string
		setup func(*atomic.Pointer[mcp.ServerSession]) func(*mcp.Server)
		msg   string
	}{
		{"panics", panicOn, panicked},
		{"fails", failOn, notSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var victim atomic.Pointer[mcp.ServerSession]
				spec := lcSpecTools
				spec.setup = tc.setup(&victim)
				log := &r44bLog{}
				r := newR44bRig(t, lcPolicy(t, "user"), spec, log)
				first := r.connect(bob, lcListTools)
				second := r.connect(bob, lcListTools)
				r.setPolicy(lcPolicy(t, "admin"))
				synctest.Wait()
				if n := second.toolsHeard.Load(); n != 1 {
					t.Errorf("the second session heard %d tools/list_changed, want 1", n)
				}
				if n := log.count(panicked) + log.count(notSent); n != 0 {
					t.Errorf("notices sent logged %d as broken (%q)", n, log.msgs)
				}
				victim.Store(first.ss)
				r.setPolicy(lcPolicy(t, "user"))
				synctest.Wait()
				if n := second.toolsHeard.Load(); n != 2 {
					t.Errorf("the second session heard %d tools/list_changed, want 2", n)
				}
				if n := log.count(tc.msg); n != 1 {
					t.Errorf("one notice broken, %d logged as %q (%q)", n, tc.msg, log.msgs)
				}
			})
		})
	}
}

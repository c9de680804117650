package mcpguard_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r44bGate is a receiving middleware below the guard that holds each
// resources/list made while it is armed until release is closed, then
// passes it on, or fails it if fail is set.
type r44bGate struct {
	armed   atomic.Bool
	fail    atomic.Bool
	entries atomic.Int64 // resources/list held
	release chan struct{}
}

func (g *r44bGate) setup(srv *mcp.Server) {
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/list" || !g.armed.Load() {
				return next(ctx, method, req)
			}
			g.entries.Add(1)
			<-g.release
			if g.fail.Load() {
				return nil, errors.New("the resources are down")
			}
			return next(ctx, method, req)
		}
	})
}

// r44bLog is a slog.Handler that records the messages logged to it, and
// panics on the message panicOn.
type r44bLog struct {
	mu      sync.Mutex
	msgs    []string
	panicOn string
}

func (h *r44bLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *r44bLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *r44bLog) WithGroup(string) slog.Handler            { return h }

func (h *r44bLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.panicOn {
		panic("a logging handler's bug")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}

func (h *r44bLog) logged(msg string) bool { return h.count(msg) > 0 }

// count is how many times msg was logged.
func (h *r44bLog) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// newR44bRig is newLCRig with the guard logging to log, clients on
// protocol 2025-11-25.
func newR44bRig(t *testing.T, pol *policy.Policy, spec lcSpec, log slog.Handler) *lcRig {
	t.Helper()
	r := &lcRig{t: t, v: "2025-11-25", auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}}
	r.w = newLCWatch()
	r.srv = spec.server(r.w)
	g, err := mcpguard.New(pol, r.auth, &mcpguard.Options{Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(r.srv); err != nil {
		t.Fatal(err)
	}
	r.g = g
	return r
}

// TestReview44bSetPolicyOneCheckAtATime: a policy set while the sessions
// are being checked against the one before (its resources listing held
// below the guard) is checked only after that check ends, not by a second
// check alongside it; then each session is told once of what it can see.
func TestReview44bSetPolicyOneCheckAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &r44bGate{release: make(chan struct{})}
		spec := rnSpec()
		spec.setup = gate.setup
		r := newR44bRig(t, rnPolicy(t, "user"), spec, slog.DiscardHandler)
		user := r.connect(bob, lcListRes)
		sentinel := r.connect(bob, lcListTools)
		gate.armed.Store(true)
		r.setPolicy(rnPolicy(t, "admin"))
		synctest.Wait()
		if n := gate.entries.Load(); n != 1 {
			t.Fatalf("the check of the new policy listed the resources %d times, want 1 (held)", n)
		}
		// Another policy (alike, not the same) while that listing is held.
		r.setPolicy(rnPolicy(t, "admin"))
		synctest.Wait()
		if n := gate.entries.Load(); n != 1 {
			t.Errorf("a second check ran alongside the first: %d resources listings held, want 1", n)
		}
		gate.armed.Store(false)
		close(gate.release)
		synctest.Wait()
		if n := r.w.resCount(user.ss); n != 1 {
			t.Errorf("bob's resources session was sent %d resources/list_changed, want 1", n)
		}
		if n := r.w.toolsCount(sentinel.ss); n != 1 {
			t.Errorf("bob's tools session was sent %d tools/list_changed, want 1", n)
		}
		if got := user.uris(t); !slices.Equal(got, []string{"file:///plain.txt"}) {
			t.Errorf("bob lists %v after the policies, want the plain resource only", got)
		}
	})
}

// TestReview44bSetPolicyCheckPanics: a check of the sessions whose
// logger panics (on the failure of a resources listing) goes on, and a
// policy set while it ran is checked at once after it; so is a later one:
// the guard keeps telling its sessions. (Before 61d the logger's panic cut
// the check, which its recover logged; the guard contains its logger's
// panics now: TestReview61dLoggerPanic.)
func TestReview44bSetPolicyCheckPanics(t *testing.T) {
	const failed = "mcpguard: resources/list_changed for a new policy not sent: listing the resources failed"
	const panicked = "mcpguard: telling sessions of a new policy panicked"
	synctest.Test(t, func(t *testing.T) {
		gate := &r44bGate{release: make(chan struct{})}
		spec := rnSpec()
		spec.setup = gate.setup
		log := &r44bLog{panicOn: failed}
		pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
		r := newR44bRig(t, pu, spec, log)
		user := r.connect(bob, lcListRes)
		sentinel := r.connect(bob, lcListTools)
		gate.armed.Store(true)
		gate.fail.Store(true)
		r.setPolicy(pa)
		synctest.Wait() // its check held in the resources listing
		r.setPolicy(pu)
		gate.armed.Store(false)
		close(gate.release)
		synctest.Wait()
		if log.logged(panicked) {
			t.Errorf("the logger's panic cut the check: %q", log.msgs)
		}
		if n := r.w.toolsCount(sentinel.ss); n != 2 {
			t.Errorf("after the panic, bob's tools session was sent %d tools/list_changed, want 2 (pa, pu)", n)
		}
		if n := r.w.resCount(user.ss); n != 0 {
			t.Errorf("bob's resources session was sent %d resources/list_changed, want 0 (its listing failed, then pu)", n)
		}
		r.setPolicy(pa)
		synctest.Wait()
		if n := r.w.toolsCount(sentinel.ss); n != 3 {
			t.Errorf("bob's tools session was sent %d tools/list_changed, want 3", n)
		}
		if n := r.w.resCount(user.ss); n != 1 {
			t.Errorf("bob's resources session was sent %d resources/list_changed, want 1", n)
		}
	})
}

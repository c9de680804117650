package mcpguard_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r45aGate is a receiving middleware added before Install (below the
// guard) that, while armed, holds each resources/list the guard makes of
// its own (its context carries no caller): the listing sends a channel on
// the gate and waits for it closed.
type r45aGate struct {
	mu   sync.Mutex
	gate chan chan struct{}
}

func (g *r45aGate) arm() chan chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan chan struct{})
	return g.gate
}

func (g *r45aGate) disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = nil
}

func (g *r45aGate) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "resources/list" && mcpguard.FromContext(ctx) == nil {
			g.mu.Lock()
			gate := g.gate
			g.mu.Unlock()
			if gate != nil {
				release := make(chan struct{})
				gate <- release
				<-release
			}
		}
		return next(ctx, method, req)
	}
}

// r45aNext waits for the next listing gate holds.
func r45aNext(t *testing.T, gate chan chan struct{}, what string) chan struct{} {
	t.Helper()
	select {
	case release := <-gate:
		return release
	case <-time.After(5 * time.Second):
		t.Fatalf("%s listed no resources", what)
		return nil
	}
}

// TestReview45aServerNoticeOvertakenByPolicy: a resources/list_changed
// the server sends (its resources the same) while a SetPolicy hides a UI
// resource: the guard's check for the new policy reads the session's view
// before the notification's listing, filtered by the old policy, records
// it, so leaves the session to that view; the guard checks it again once
// recorded, and the session is told that its listing changed. (Without,
// bob's client keeps a listing with the UI resource pa hides.) A sending
// middleware added after Install, above the guard, tells when the guard
// is done with the server's notification.
func TestReview45aServerNoticeOvertakenByPolicy(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
			g := &r45aGate{}
			spec := rnSpec()
			spec.setup = func(srv *mcp.Server) { srv.AddReceivingMiddleware(g.middleware) }
			r := newLCRig(t, v, pu, spec)
			s := r.connect(bob, lcListRes)
			passed := make(chan struct{}, 1)
			r.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if method == "notifications/resources/list_changed" && req.GetSession() == s.ss {
						passed <- struct{}{}
					}
					return res, err
				}
			})

			gate := g.arm()
			held := map[chan struct{}]bool{}
			open := func(c chan struct{}) {
				if held[c] {
					delete(held, c)
					close(c)
				}
			}
			defer func() { // a failed wait leaves no listing held
				g.disarm()
				for c := range held {
					open(c)
				}
			}()
			// The same resource again: the server tells its sessions.
			read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
			}
			r.srv.AddResource(&rnPlainResource, read)
			notice := r45aNext(t, gate, "the server's notification")
			held[notice] = true
			r.setPolicy(pa)
			check := r45aNext(t, gate, "the check of pa")
			held[check] = true
			g.disarm()
			open(notice)
			select {
			case <-passed:
			case <-time.After(5 * time.Second):
				t.Fatal("the guard did not finish with the server's notification")
			}
			open(check)
			r.waitRes(s, 1)
			if got := s.uris(t); !slices.Equal(got, []string{"file:///plain.txt"}) {
				t.Errorf("bob lists %v after being told of pa, want the plain resource only", got)
			}
		})
	}
}

package mcpguard_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/testlog"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview55InstallListingPanics: Install lists the server's tools
// through a throwaway in-memory session, and the server's own code runs on
// it: a receiving middleware added before Install, a SetCacheable. Code
// that holds for every session a real transport makes may not hold there
// (a middleware that reads the caller's TokenInfo, nil in memory), and the
// go-sdk recovers no panic: one ended the process, on a goroutine of the
// go-sdk's, with a stack that named neither Install nor the guard. Install
// now fails, saying what panicked on which request, and logs the stack;
// the guard is not installed, and once the server's code is fixed a second
// Install succeeds and the guard serves a real session.
func TestReview55InstallListingPanics(t *testing.T) {
	for _, c := range []struct {
		name, want string
		sopts      func(on *atomic.Bool) *mcp.ServerOptions
		mw         func(on *atomic.Bool) mcp.Middleware
	}{
		{
			name: "set_cacheable",
			want: "review55: SetCacheable",
			sopts: func(on *atomic.Bool) *mcp.ServerOptions {
				return &mcp.ServerOptions{SetCacheable: func(context.Context, mcp.Request, *mcp.Cacheable) {
					if on.Load() {
						panic("review55: SetCacheable")
					}
				}}
			},
		},
		{
			name: "middleware_reads_token_info",
			want: "nil pointer",
			mw: func(on *atomic.Bool) mcp.Middleware {
				return func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						if on.Load() && method == "tools/list" {
							// The caller's user id: every request a
							// transport with auth brings has one.
							_ = req.GetExtra().TokenInfo.UserID
						}
						return next(ctx, method, req)
					}
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var on atomic.Bool
			on.Store(true)
			var sopts *mcp.ServerOptions
			if c.sopts != nil {
				sopts = c.sopts(&on)
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, sopts)
			down := &spy{}
			addTools(srv, down)
			if c.mw != nil {
				srv.AddReceivingMiddleware(c.mw(&on))
			}
			pol, err := policy.New(basePolicy(false))
			if err != nil {
				t.Fatal(err)
			}
			log := &testlog.Buffer{}
			auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
			g, err := mcpguard.New(pol, auth, &mcpguard.Options{Confirmer: testSigner(t, nil),
				Logger: slog.New(slog.NewJSONHandler(log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			err = g.Install(srv)
			if err == nil || !strings.Contains(err.Error(), "panicked") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Install: %v; want an error saying the server's code panicked (%q)", err, c.want)
			}
			if l := log.String(); !strings.Contains(l, "panicked while Install listed its tools") || !strings.Contains(l, "goroutine") {
				t.Errorf("log %s: want the panic logged with its stack", l)
			}
			for range srv.Sessions() {
				t.Error("a session left on the server")
			}

			// Fixed, the server takes the guard, which serves a real
			// session through the layer the failed Install left.
			on.Store(false)
			if err := g.Install(srv); err != nil {
				t.Fatalf("second Install: %v", err)
			}
			h := &harness{t: t, srv: srv, g: g, auth: auth, sink: &memSink{}, down: down}
			cs := review24cConnect(t, h, bob, "")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			if err != nil || res.IsError {
				t.Fatalf("call after the second Install: %v %+v", err, res)
			}
			// The layer catches nothing on a real session: there a
			// panic is the guard's to refuse, as before.
			on.Store(true)
			if _, err := cs.ListTools(context.Background(), nil); err == nil {
				t.Error("tools/list whose server code panics on a real session: nil error")
			}
		})
	}
}

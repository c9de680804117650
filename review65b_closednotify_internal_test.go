package mcpguard

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65bClosedInMemoryAtOnce (65b's lead 2, not reproduced): a
// handler's notification to an in-memory session closed while its call
// runs (by its client, with or without cancelling the call first, or by the
// server) ends at once, sent or failed, with the call's context or a
// detached one: go-sdk v1.8.0's in-memory transport is a net.Pipe, whose
// write fails at once when either end is closed, and a session's
// connection closes its pipe only once no call is in flight (until then
// its client goes on reading). Nothing waits notifyWait.
func TestReview65bClosedInMemoryAtOnce(t *testing.T) {
	for _, how := range []string{"client", "cancel+client", "server", "cancel+server"} {
		for _, detached := range []bool{false, true} {
			name := how
			if detached {
				name += "/detached"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { review65bClosedInMemory(t, how, detached) })
			})
		}
	}
}

func review65bClosedInMemory(t *testing.T, how string, detached bool) {
	g := annGuard(t, "tick")
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var worst time.Duration
	sent := 0
	srv.AddTool(&mcp.Tool{Name: "tick", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			nctx := ctx
			if detached {
				nctx = context.Background()
			}
			for i := range 40 { // 10 ms before the close, 30 ms after
				start := time.Now()
				_ = req.Session.NotifyProgress(nctx, &mcp.ProgressNotificationParams{ProgressToken: "p", Progress: float64(i)})
				worst = max(worst, time.Since(start))
				sent++
				time.Sleep(time.Millisecond)
			}
			return &mcp.CallToolResult{}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(10*time.Millisecond, func() {
		if how == "cancel+client" || how == "cancel+server" {
			cancel()
		}
		if how == "server" || how == "cancel+server" {
			ss.Close()
		} else {
			cs.Close()
		}
	})
	p := &mcp.CallToolParams{Name: "tick", Arguments: map[string]any{}}
	p.SetProgressToken("p")
	_, _ = cs.CallTool(ctx, p)
	time.Sleep(time.Minute)
	synctest.Wait()
	if sent != 40 || worst >= notifyWait {
		t.Errorf("the handler sent %d of 40 notifications, the slowest in %v; want each at once", sent, worst)
	}
	cs.Close()
	ss.Close()
}

package mcpguard

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fanGuard returns a guard and a handler below it that lists one UI tool
// and n resources.
func fanGuard(t *testing.T, n int) (*Guard, mcp.MethodHandler) {
	t.Helper()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "t", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	who := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return nil, ErrUnauthenticated })
	g, err := New(pol, who, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}, Meta: mcp.Meta{"ui/resourceUri": "ui://t/app"}}
	res := make([]*mcp.Resource, n)
	for i := range res {
		res[i] = &mcp.Resource{URI: "file:///r" + string(rune('a'+i%26))}
	}
	below := func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{tool}}, nil
		case "resources/list":
			return &mcp.ListResourcesResult{Resources: res}, nil
		}
		return nil, nil
	}
	return g, below
}

// TestReview15eFanoutFreed: the listings read for a fan-out are let go
// when it ends, not kept until the next notification comes.
func TestReview15eFanoutFreed(t *testing.T) {
	g, below := fanGuard(t, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	f, err := g.fanLinks(ctx, below, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.fanDigest(ctx, f, g.sight(&policy.Principal{}, f.links), below, nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := g.fanLinks(ctx, below, nil); again != f {
		t.Fatal("a second session of the fan-out listed again (the test's premise)")
	}
	cancel()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		g.res.fanMu.Lock()
		held := g.res.fan
		g.res.fanMu.Unlock()
		if held == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended fan-out's listings are still held: %d tools, %d resources", len(held.links), len(held.all))
		}
	}
}

// TestReview15eFanoutConcurrent: fan-outs of both kinds at once, under
// contexts that end at any time (run with -race): each is answered, from
// listings of its own or its fan-out's, and none is kept once all ended.
func TestReview15eFanoutConcurrent(t *testing.T) {
	g, below := fanGuard(t, 30)
	pr := []*policy.Principal{{}, {Subject: "a", Roles: []string{"x"}}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				ctx, cancel := context.WithCancel(context.Background())
				for s := range 4 {
					f, err := g.fanLinks(ctx, below, nil)
					if err != nil || len(f.links) != 1 {
						t.Errorf("fanLinks: %v, %d links", err, len(f.links))
						break
					}
					if i%2 == 0 {
						if _, err := g.fanDigest(ctx, f, g.sight(pr[s%2], f.links), below, nil); err != nil {
							t.Error(err)
						}
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		g.res.fanMu.Lock()
		held := g.res.fan
		g.res.fanMu.Unlock()
		if held == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a fan-out is held after every one ended")
		}
	}
}

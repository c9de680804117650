package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review41cBelow counts the tools/list requests that reach below the
// guard; while overtake is positive, each listing is followed by a change
// of the tools (registry.invalidate, as a tools/list_changed notification
// makes), and while fail is set each fails.
type review41cBelow struct {
	listings atomic.Int64
	overtake atomic.Int64
	fail     atomic.Bool
}

// review41cServe installs g on a server with the tool "a", below which b
// sees the requests, and returns a client session on it.
func review41cServe(t *testing.T, g *Guard, b *review41cBelow) *mcp.ClientSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"},
		&mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv.AddTool(&mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			b.listings.Add(1)
			if b.fail.Load() {
				return nil, errors.New("listing failed")
			}
			res, err := next(ctx, method, req)
			if b.overtake.Load() > 0 {
				b.overtake.Add(-1)
				g.reg.invalidate()
			}
			return res, err
		}
	})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// review41cCall is how a call went: whether the tool ran, whether it was
// refused as an unknown tool, and how many listings it made below the
// guard.
type review41cCall struct {
	Ran, Unknown bool
	Listings     int64
}

// A tools/call finds its tool in the registry without listing while the
// registry is fresh. A stale one (the tools changed) is listed again
// first, and one whose relist period has passed too; a listing overtaken
// by a change of the tools is not installed and is made again, three
// listings at most, after which the tool is unknown. A listing that fails
// leaves a stale registry's call unknown, and a due one's its entries.
func TestReview41cCallRelists(t *testing.T) {
	stale := func(g *Guard) { g.reg.invalidate() }
	due := func(g *Guard) {
		g.reg.mu.Lock()
		g.reg.listed = time.Now().Add(-relist)
		g.reg.mu.Unlock()
	}
	cases := []struct {
		name     string
		before   func(*Guard)
		overtake int64
		fail     bool
		want     review41cCall
	}{
		{name: "fresh", want: review41cCall{Ran: true}},
		{name: "fresh_listing_would_fail", fail: true, want: review41cCall{Ran: true}},
		{name: "stale", before: stale, want: review41cCall{Ran: true, Listings: 1}},
		{name: "stale_overtaken_once", before: stale, overtake: 1, want: review41cCall{Ran: true, Listings: 2}},
		{name: "stale_overtaken_twice", before: stale, overtake: 2, want: review41cCall{Ran: true, Listings: 3}},
		{name: "stale_overtaken_thrice", before: stale, overtake: 3, want: review41cCall{Unknown: true, Listings: 3}},
		{name: "stale_listing_fails", before: stale, fail: true, want: review41cCall{Unknown: true, Listings: 1}},
		{name: "due", before: due, want: review41cCall{Ran: true, Listings: 1}},
		{name: "due_overtaken_thrice", before: due, overtake: 3, want: review41cCall{Unknown: true, Listings: 3}},
		{name: "due_listing_fails", before: due, fail: true, want: review41cCall{Ran: true, Listings: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := review41cGuard(t, "a")
			b := &review41cBelow{}
			cs := review41cServe(t, g, b)
			if tc.before != nil {
				tc.before(g)
			}
			b.listings.Store(0)
			b.overtake.Store(tc.overtake)
			b.fail.Store(tc.fail)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a", Arguments: map[string]any{}})
			got := review41cCall{Listings: b.listings.Load()}
			switch {
			case err != nil:
				got.Unknown = strings.Contains(err.Error(), `unknown tool "a"`)
				if !got.Unknown {
					t.Errorf("call: %v", err)
				}
			case res.IsError:
				t.Errorf("call: tool error %+v", res.Content)
			default:
				got.Ran = len(res.Content) == 1 && res.Content[0].(*mcp.TextContent).Text == "ran"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("call of %q (-want +got):\n%s", "a", diff)
			}
		})
	}
}

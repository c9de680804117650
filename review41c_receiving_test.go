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
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review41cBelow counts the tools/list requests that reach below the
// guard; while overtake is positive, each listing is followed by a change
// of the tools (registry.invalidate, as a tools/list_changed notification
// makes), and while fail is set each fails. A tools/call below the guard
// is answered with callErr, when set.
type review41cBelow struct {
	listings atomic.Int64
	overtake atomic.Int64
	fail     atomic.Bool
	callErr  atomic.Pointer[jsonrpc.Error]
	odd      atomic.Bool // a tools/call below answers a tools/list result
	pingErr  atomic.Bool // a ping below fails
}

// review41cServe installs g on a server with the tool "a", below which b
// sees the requests, and returns a client session on it.
func review41cServe(t *testing.T, g *Guard, b *review41cBelow) *mcp.ClientSession {
	t.Helper()
	return review41cServeThen(t, g, b, nil, "")
}

// review41cServeThen is review41cServe that calls then, if not nil, on the
// server once g is installed on it, and connects a client of the protocol
// version (the default if "").
func review41cServeThen(t *testing.T, g *Guard, b *review41cBelow, then func(*mcp.Server), version string) *mcp.ClientSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"},
		&mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv.AddTool(&mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if we := b.callErr.Load(); we != nil && method == "tools/call" {
				return nil, we
			}
			if b.pingErr.Load() && method == "ping" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "ping refused below"}
			}
			if b.odd.Load() && method == "tools/call" {
				return &mcp.ListToolsResult{}, nil
			}
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
	if then != nil {
		then(srv)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
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

// A tools/call that the server answers with the go-sdk's error for an
// unknown tool, the one called, found a tool removed since the registry
// last listed the tools: the guard answers TOOL_NOT_FOUND, with its own
// code (Options.NotFoundCode), and marks the registry stale, so the next
// call lists the tools again. Any other error from below (another tool's
// name, or one with data) is passed on as it is, and the registry stays
// fresh.
func TestReview41cCallGone(t *testing.T) {
	const code = -32002
	cases := []struct {
		name      string
		below     *jsonrpc.Error
		wantCode  int64
		wantStale bool
	}{
		{"removed", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "a"`}, code, true},
		{"other_tool", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "b"`}, jsonrpc.CodeInvalidParams, false},
		{"with_data", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "a"`, Data: json.RawMessage(`{}`)}, jsonrpc.CodeInvalidParams, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := review41cGuardWith(t, Options{NotFoundCode: code}, "a")
			b := &review41cBelow{}
			cs := review41cServe(t, g, b)
			b.callErr.Store(tc.below)
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a", Arguments: map[string]any{}})
			var we *jsonrpc.Error
			if !errors.As(err, &we) {
				t.Fatalf("call: %v, want a JSON-RPC error", err)
			}
			_, fresh := g.reg.get("a")
			if we.Code != tc.wantCode || fresh == tc.wantStale {
				t.Errorf("call answered %v below: code %d, registry stale %v; want code %d, stale %v", tc.below, we.Code, !fresh, tc.wantCode, tc.wantStale)
			}
		})
	}
}

// The guard learns from a session's initialize whether the server takes
// subscriptions now: a server that had no resources at Install, and then
// gained some without a SubscribeHandler, says it does not, and the guard
// passes a resources/subscribe on to be refused without listing the tools
// to find the UI resources the caller may not see.
func TestReview41cInitializeTellsSubscriptions(t *testing.T) {
	g, _ := review41cGuard(t, "a")
	b := &review41cBelow{}
	cs := review41cServeThen(t, g, b, func(s *mcp.Server) {
		s.AddResource(&mcp.Resource{URI: "file:///r", Name: "r"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
	}, "2025-11-25")
	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || caps.Resources.Subscribe {
		t.Fatalf("the server's capabilities at initialize: %+v, want resources without subscribe", caps.Resources)
	}
	b.listings.Store(0)
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "file:///r"}); err == nil {
		t.Errorf("Subscribe on a server without a SubscribeHandler: no error")
	}
	if got := b.listings.Load(); got != 0 {
		t.Errorf("tools/list below the guard for a resources/subscribe the server does not take: %d, want 0", got)
	}
}

// A tools/call answered below the guard with a result of another kind
// fails as a handler's error does: "the tool failed", with the reason in
// the log, not as a handler that returned no result.
func TestReview41cCallOddResult(t *testing.T) {
	g, logs := review41cGuard(t, "a")
	b := &review41cBelow{}
	cs := review41cServe(t, g, b)
	b.odd.Store(true)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	raw, _ := json.Marshal(res)
	if !res.IsError || !strings.Contains(string(raw), "the tool failed") {
		t.Errorf("call answered with a tools/list result below: %s, want the tool error %q", raw, "the tool failed")
	}
	if !strings.Contains(logs.String(), "tools/call returned an unexpected result") {
		t.Errorf("log lacks the reason %q:\n%s", "tools/call returned an unexpected result", logs)
	}
}

// The guard passes a housekeeping request (ping here) on as it comes, and
// its error back as it is.
func TestReview41cHousekeepingError(t *testing.T) {
	g, _ := review41cGuard(t, "a")
	b := &review41cBelow{}
	cs := review41cServe(t, g, b)
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	b.pingErr.Store(true)
	if err := cs.Ping(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "ping refused below") {
		t.Errorf("Ping failing below the guard: %v, want the error %q", err, "ping refused below")
	}
}

package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cancelWatch is a receiving middleware, outermost, that reports when the
// context of a tools/call is cancelled: the server has seen the client
// give up.
func cancelWatch(seen chan<- string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok {
				stop := context.AfterFunc(ctx, func() { seen <- r.Params.Name })
				defer stop()
			}
			return next(ctx, method, req)
		}
	}
}

// TestWriteSurvivesClientCancel: a client that gives up cancels a read's
// gateway request, but a write already sent runs to completion. It runs
// the shop as a stdio server does (the launching session), over the
// in-memory transport: a cancellation reaches the server there as on
// stdio. (Over stateless HTTP it reaches the server on 2026-07-28 only,
// where the call is its request: TestReview14HTTPCancelStopsReadNotWrite.
// An older client's notifications/cancelled arrives without a session.)
func TestWriteSurvivesClientCancel(t *testing.T) {
	seen := make(chan string, 4)
	st := newStack(t, func(c *config) { c.stdio, c.launch = true, sessionCustomer }, func(s *shop) {
		s.server.AddReceivingMiddleware(cancelWatch(seen))
	})
	ada := connectInMemory(t, st.shop, nil)

	for _, tc := range []struct {
		tool, method, path string
		args               map[string]any
		wantCancelled      bool
	}{
		{"get_cart", "GET", "/api/cart", map[string]any{}, true},
		{"update_cart", "POST", "/api/cart", map[string]any{"sku": "RB-500", "quantity": 3}, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			h := st.gw.hold(tc.method, tc.path)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := ada.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				errc <- err
			}()
			recv(t, h.arrived, "the gateway request")
			cancel()
			if err := recv(t, errc, "the client call"); !errors.Is(err, context.Canceled) {
				t.Fatalf("client call: %v, want context.Canceled", err)
			}
			if got := recv(t, seen, "the server seeing the cancellation"); got != tc.tool {
				t.Fatalf("cancelled call %q, want %q", got, tc.tool)
			}
			// A read's gateway request ends by itself, cancelled; a write's
			// waits for the gateway, which then completes it.
			if !tc.wantCancelled {
				close(h.release)
			}
			if cancelled := recv(t, h.done, "the gateway request to end"); cancelled != tc.wantCancelled {
				t.Errorf("%s: gateway request cancelled = %v, want %v", tc.tool, cancelled, tc.wantCancelled)
			}
			st.gw.unhold(tc.method, tc.path)
		})
	}
	if q := st.gw.quantity("u-1001", "RB-500"); q != 3 {
		t.Errorf("the write the client abandoned did not complete: quantity %d, want 3", q)
	}
}

// TestPerUserRate: 60 calls a minute per user (3 here), counted per user,
// not per process.
func TestPerUserRate(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := newStack(t, func(c *config) { c.rate, c.now = 3, func() time.Time { return now } }, nil)
	ada, bo := connect(t, st, sessionCustomer, nil), connect(t, st, sessionCustomer2, nil)
	for range 3 {
		ok(t, ada, "list_categories", map[string]any{})
	}
	before := st.gw.count("GET", "/api/categories")
	e := toolErr(t, ada, "list_categories", map[string]any{})
	if e["code"] != "RATE_LIMIT_EXCEEDED" || e["retryable"] != true || e["retry_after_seconds"] != float64(20) {
		t.Errorf("fourth call in a minute: %v, want RATE_LIMIT_EXCEEDED after 20 s", e)
	}
	if st.gw.count("GET", "/api/categories") != before {
		t.Error("a refused call reached the gateway")
	}
	ok(t, bo, "list_categories", map[string]any{}) // another user has its own budget
}

// TestGlobalInFlight: at most 32 calls (2 here) in flight across the
// process, whoever makes them. A call that comes while the cap is taken is
// refused at its session check, which takes a slot of the same cap, so it
// never reaches the gateway: CONCURRENCY_LIMIT_EXCEEDED, retryable, as the
// guard's own limit step would answer.
func TestGlobalInFlight(t *testing.T) {
	st := newStack(t, func(c *config) { c.inFlight = 2 }, nil)
	h := st.gw.hold("GET", "/api/cart")
	errc := make(chan error, 2)
	for _, s := range []string{sessionCustomer, sessionCustomer2} {
		cs := connect(t, st, s, nil)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_cart", Arguments: map[string]any{}})
			if err == nil && res.IsError {
				err = errors.New("error result")
			}
			errc <- err
		}()
	}
	recv(t, h.arrived, "the first held call")
	recv(t, h.arrived, "the second held call")
	grace := connect(t, st, sessionAdmin, nil)
	before := len(st.gw.recorded())
	e := toolErr(t, grace, "list_categories", map[string]any{})
	if e["code"] != "CONCURRENCY_LIMIT_EXCEEDED" || e["retryable"] != true || !strings.Contains(e["message"].(string), "in flight") {
		t.Errorf("third call in flight: %v, want CONCURRENCY_LIMIT_EXCEEDED (too many calls in flight), retryable", e)
	}
	if n := len(st.gw.recorded()) - before; n != 0 {
		t.Errorf("third call in flight: %d gateway requests, want none (not even its session check)", n)
	}
	close(h.release)
	for range 2 {
		if err := recv(t, errc, "a held call"); err != nil {
			t.Errorf("held call: %v", err)
		}
	}
	ok(t, connect(t, st, sessionAdmin, nil), "list_categories", map[string]any{}) // the slots came back
}

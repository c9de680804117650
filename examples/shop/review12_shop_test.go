package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onRedis returns a config change that puts a shop on the Redis at addr
// (with the confirmation key --redis requires), then applies more.
func onRedis(addr string, more func(*config)) func(*config) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 7)
	}
	return func(c *config) {
		c.redisAddr, c.confirmKey = addr, key
		if more != nil {
			more(c)
		}
	}
}

// TestReview12RateSharedAcrossReplicas: the per-user rate protects the one
// gateway every replica calls, so with --redis two shops on one Redis
// count each user's calls together: 60 a minute (3 here) in all, not per
// replica. Another user keeps a budget of its own.
func TestReview12RateSharedAcrossReplicas(t *testing.T) {
	rd := testsvc.StartRedis(t)
	mod := onRedis(rd.Addr, func(c *config) { c.rate = 3 })
	a, b := newStack(t, mod, nil), newStack(t, mod, nil)
	adaA, adaB := connect(t, a, sessionCustomer, nil), connect(t, b, sessionCustomer, nil)
	ok(t, adaA, "list_categories", map[string]any{})
	ok(t, adaB, "list_categories", map[string]any{})
	ok(t, adaA, "list_categories", map[string]any{})
	before := a.gw.count("GET", "/api/categories") + b.gw.count("GET", "/api/categories")
	for name, cs := range map[string]*mcp.ClientSession{"a": adaA, "b": adaB} {
		e := toolErr(t, cs, "list_categories", map[string]any{})
		wait, _ := e["retry_after_seconds"].(float64)
		if e["code"] != "RATE_LIMIT_EXCEEDED" || e["retryable"] != true || wait <= 0 || wait > 20 {
			t.Errorf("ada's fourth call in a minute, on replica %s: %v, want RATE_LIMIT_EXCEEDED, retry within 20 s", name, e)
		}
	}
	if n := a.gw.count("GET", "/api/categories") + b.gw.count("GET", "/api/categories"); n != before {
		t.Errorf("%d refused calls reached the gateway", n-before)
	}
	ok(t, connect(t, b, sessionCustomer2, nil), "list_categories", map[string]any{})
}

// TestReview12InFlightSharedAcrossReplicas: with --redis the in-flight cap
// is on Redis too, so it bounds the calls in flight at the shared gateway
// across every replica on that Redis (32 in all, 2 here), not 32 per
// replica. A call that finds it taken is refused at its session check and
// reaches no gateway.
func TestReview12InFlightSharedAcrossReplicas(t *testing.T) {
	rd := testsvc.StartRedis(t)
	mod := onRedis(rd.Addr, func(c *config) { c.inFlight = 2 })
	a, b := newStack(t, mod, nil), newStack(t, mod, nil)
	errc := make(chan error, 2)
	holds := map[*stack]*hold{}
	for _, r := range []struct {
		st      *stack
		session string
	}{{a, sessionCustomer}, {b, sessionCustomer2}} {
		holds[r.st] = r.st.gw.hold("GET", "/api/cart")
		cs := connect(t, r.st, r.session, nil)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_cart", Arguments: map[string]any{}})
			if err == nil && res.IsError {
				err = errors.New("error result")
			}
			errc <- err
		}()
		recv(t, holds[r.st].arrived, "a held call")
	}
	grace := connect(t, a, sessionAdmin, nil)
	before := len(a.gw.recorded())
	e := toolErr(t, grace, "list_categories", map[string]any{})
	if e["code"] != "CONCURRENCY_LIMIT_EXCEEDED" || e["retryable"] != true {
		t.Errorf("third call in flight over two replicas: %v, want CONCURRENCY_LIMIT_EXCEEDED, retryable", e)
	}
	if n := len(a.gw.recorded()) - before; n != 0 {
		t.Errorf("third call in flight: %d gateway requests, want none", n)
	}
	for _, h := range holds {
		close(h.release)
	}
	for range 2 {
		if err := recv(t, errc, "a held call"); err != nil {
			t.Errorf("held call: %v", err)
		}
	}
	ok(t, grace, "list_categories", map[string]any{}) // the slots came back
}

// TestReview12RedisDownRefuses: a Redis that cannot decide refuses every
// call, read or write, with the library's answer for a limiter that
// failed (RATE_LIMIT_EXCEEDED, retry in 1 s), before anything (not even
// the session check) reaches the gateway; the refusals are audited. A
// hung Redis is refused alike, and calls pass again once it answers.
func TestReview12RedisDownRefuses(t *testing.T) {
	rd := testsvc.StartRedis(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	st := newStack(t, onRedis(rd.Addr, func(c *config) { c.auditPath = path }), nil)
	ada := connect(t, st, sessionCustomer, nil)
	ok(t, ada, "list_categories", map[string]any{})

	refused := func(what string) {
		t.Helper()
		before := len(st.gw.recorded())
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"list_categories", map[string]any{}},
			{"update_cart", map[string]any{"sku": "RB-500", "quantity": 1}},
		} {
			e := toolErr(t, ada, c.tool, c.args)
			msg, _ := e["message"].(string)
			if e["code"] != "RATE_LIMIT_EXCEEDED" || e["retryable"] != true || e["retry_after_seconds"] != float64(1) ||
				!strings.Contains(msg, "unavailable") || e["correlation_id"] == "" {
				t.Errorf("%s with Redis %s: %v, want RATE_LIMIT_EXCEEDED (the limiter is unavailable), retry in 1 s", c.tool, what, e)
			}
		}
		if _, err := ada.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "unavailable") {
			t.Errorf("tools/list with Redis %s: %v, want refused (the limiter is unavailable)", what, err)
		}
		if n := len(st.gw.recorded()) - before; n != 0 {
			t.Errorf("with Redis %s: %d gateway requests, want none", what, n)
		}
	}

	if err := rd.Pause(); err != nil {
		t.Fatal(err)
	}
	refused("hung")
	if err := rd.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := call(t, ada, "list_categories", map[string]any{})
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still refused 10 s after Redis answers again: %s", mustJSON(t, res.StructuredContent))
		}
		time.Sleep(50 * time.Millisecond)
	}

	rd.Stop()
	refused("stopped")
	st.stop()
	evs, err := audit.QueryJSONL(path, audit.Filter{Phase: audit.PhaseOutcome, Code: "RATE_LIMIT_EXCEEDED"})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, e := range evs {
		tools = append(tools, e.Tool)
	}
	want := []string{"list_categories", "update_cart", "list_categories", "update_cart"}
	if diff := cmp.Diff(want, tools); diff != "" {
		t.Errorf("audited refusals (-want +got):\n%s", diff)
	}
}

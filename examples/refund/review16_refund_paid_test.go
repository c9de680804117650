package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refundResult calls trigger_refund and returns the result (also a tool
// error) as a map with its isError, or the JSON-RPC error.
func refundResult(t *testing.T, cs *mcp.ClientSession, id string, amount any) (map[string]any, bool, *jsonrpc.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger_refund", Arguments: map[string]any{
		"customer_id": id, "amount": amount, "reason": "refund beyond what was paid?",
	}})
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			t.Fatalf("trigger_refund(%s, %v): %v", id, amount, err)
		}
		return nil, false, we
	}
	var m map[string]any
	if err := json.Unmarshal(mustMarshal(t, res.StructuredContent), &m); err != nil {
		t.Fatalf("trigger_refund(%s, %v): structured content: %v", id, amount, err)
	}
	return m, res.IsError, nil
}

// refundedTotal reads a customer's refunded_total and paid_total.
func refundedTotal(t *testing.T, cs *mcp.ClientSession, id string) (refunded, paid any) {
	t.Helper()
	got, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": id})
	if we != nil {
		t.Fatalf("get_customer_record(%s): %v", id, we)
	}
	c, _ := got["customer"].(map[string]any)
	return c["refunded_total"], c["paid_total"]
}

// TestReview16RefundNeverExceedsPaid: a customer is never refunded more
// than they paid, in one call or over many; a refund that would go beyond
// is a tool error (isError) that says what is left, refunds nothing and
// costs nothing against the caps. The caps bound a caller; they do not
// bound what one customer receives.
func TestReview16RefundNeverExceedsPaid(t *testing.T) {
	cs, _ := connect(t, "", []string{"-session-cap", "500", "-user-cap", "500"}, alice)
	if refunded, paid := refundedTotal(t, cs, "CUST-00002"); refunded != 0.0 || paid != 480.0 {
		t.Fatalf("CUST-00002 refunded_total %v paid_total %v, want 0 and 480", refunded, paid)
	}
	steps := []struct {
		amount    float64
		wantError bool
		want      map[string]any
	}{
		// One call beyond what was paid, within the caps.
		{480.01, true, map[string]any{"found": true, "customer_id": "CUST-00002", "amount": 480.01, "status": "refused", "refundable": 480.0, "refunded_total": 0.0}},
		// Charged nothing: the whole cap is still there.
		{300, false, map[string]any{"found": true, "customer_id": "CUST-00002", "amount": 300.0, "status": "processed", "refund_id": "RF-000001", "refunded_total": 300.0}},
		{200, true, map[string]any{"found": true, "customer_id": "CUST-00002", "amount": 200.0, "status": "refused", "refundable": 180.0, "refunded_total": 300.0}},
		{180, false, map[string]any{"found": true, "customer_id": "CUST-00002", "amount": 180.0, "status": "processed", "refund_id": "RF-000002", "refunded_total": 480.0}},
		{0.01, true, map[string]any{"found": true, "customer_id": "CUST-00002", "amount": 0.01, "status": "refused", "refundable": 0.0, "refunded_total": 480.0}},
	}
	for _, s := range steps {
		got, isError, we := refundResult(t, cs, "CUST-00002", s.amount)
		if we != nil {
			t.Fatalf("refund of %v: JSON-RPC error %d %q, want a result", s.amount, we.Code, we.Message)
		}
		delete(got, "message")
		if isError != s.wantError {
			t.Errorf("refund of %v: isError %v, want %v", s.amount, isError, s.wantError)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("refund of %v (-want +got):\n%s", s.amount, diff)
		}
	}
	if refunded, _ := refundedTotal(t, cs, "CUST-00002"); refunded != 480.0 {
		t.Errorf("CUST-00002 refunded_total %v, want 480 (what it paid)", refunded)
	}
	// A dry run previews the refusal too.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger_refund", Meta: mcp.Meta{"io.mcpguard/dryRun": true},
		Arguments: map[string]any{"customer_id": "CUST-00002", "amount": 1, "reason": "dry run past the paid total"}})
	if err != nil || !res.IsError || !strings.Contains(mustText(res), `"status":"refused"`) {
		t.Errorf("dry run past the paid total: %v %+v, want a refused preview", err, res)
	}
}

func mustText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// TestReview16PaidBoundsEveryCaller: over HTTP, behind the gateway, each
// subject has a cap of its own; what one customer can be refunded is one
// bound for all of them.
func TestReview16PaidBoundsEveryCaller(t *testing.T) {
	base := startHTTP(t)
	refund := func(id, sub, amount string) response {
		_, r := post(t, base, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00002","amount":`+amount+`,"reason":"two callers, one customer"}}}`,
			map[string]string{headerSubject: sub, headerRole: "support"})
		return r
	}
	if r := refund("1", "alice@example.com", "300"); r.Error != nil || !strings.Contains(string(r.Result), `"status":"processed"`) {
		t.Fatalf("alice's refund of 300: %s %+v", r.Result, r.Error)
	}
	r := refund("2", "bob@example.com", "300")
	if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), `"refundable":180`) {
		t.Errorf("bob's refund of 300 after alice's (480 paid): %s %+v, want a refusal with refundable 180", r.Result, r.Error)
	}
	if r := refund("3", "carol@example.com", "180"); r.Error != nil || !strings.Contains(string(r.Result), `"status":"processed"`) {
		t.Errorf("carol's refund of the 180 left: %s %+v", r.Result, r.Error)
	}
}

// startInProcess runs serve over an in-memory transport in this process,
// so that the race detector sees the whole server (guard, limiter, store),
// and returns a connected client.
func startInProcess(t *testing.T, cfg config) *mcp.ClientSession {
	t.Helper()
	t.Setenv(tokenEnv, "demo-token-alice")
	t.Setenv(tokensEnv, "")
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() { done <- serve(ctx, cfg, st, io.Discard, log) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "refund-test", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return cs
}

// TestReview16ConcurrentRefundsRace: refunds racing for the last of what a
// customer paid, and for the last of a cap, never go beyond either; run
// under -race, it also checks the server for data races.
func TestReview16ConcurrentRefundsRace(t *testing.T) {
	burst := func(cs *mcp.ClientSession, n int, id string, amount float64) (processed, refused, capped int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, isError, we := refundResult(t, cs, id, amount)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case we != nil && we.Code == -32029:
					capped++
				case we != nil:
					t.Errorf("refund of %v: %d %q", amount, we.Code, we.Message)
				case isError && got["status"] == "refused":
					refused++
				case !isError && got["status"] == "processed":
					processed++
				default:
					t.Errorf("refund of %v: %v (isError %v)", amount, got, isError)
				}
			}()
		}
		wg.Wait()
		return processed, refused, capped
	}
	t.Run("paid_total", func(t *testing.T) {
		cs := startInProcess(t, config{sessionCap: 100000, userCap: 100000, capWindow: time.Hour})
		p, r, c := burst(cs, 48, "CUST-00002", 20)
		if p != 24 || r != 24 || c != 0 {
			t.Errorf("48 concurrent refunds of 20 to a customer who paid 480: %d processed, %d refused, %d capped; want 24, 24, 0", p, r, c)
		}
		if refunded, _ := refundedTotal(t, cs, "CUST-00002"); refunded != 480.0 {
			t.Errorf("refunded_total %v, want 480", refunded)
		}
	})
	t.Run("cap", func(t *testing.T) {
		cs := startInProcess(t, config{sessionCap: 100000, userCap: 200, capWindow: 1000 * time.Hour})
		p, r, c := burst(cs, 40, "CUST-00001", 10)
		if p != 20 || r != 0 || c != 20 {
			t.Errorf("40 concurrent refunds of 10 under a cap of 200: %d processed, %d refused, %d capped; want 20, 0, 20", p, r, c)
		}
		if refunded, _ := refundedTotal(t, cs, "CUST-00001"); refunded != 200.0 {
			t.Errorf("refunded_total %v, want 200", refunded)
		}
	})
}

package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57WriteIntentBounded: a write's intent record was written with
// the request's context only, so a sink that stops answering without
// failing (a PostgreSQL server whose host froze) held the call for as long
// as its client waited, and forwarded it however late once the sink
// answered. Timeout bounds it now: 503 AUDIT_UNAVAILABLE, never forwarded.
func TestReview57WriteIntentBounded(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan struct{})
	defer close(answer)
	sink := audit.SinkFunc(func(ctx context.Context, e *audit.Event) error {
		if e.Phase != audit.PhaseIntent {
			return nil
		}
		select {
		case <-answer:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	const bound = 300 * time.Millisecond
	rg := newRig(t, &Options{Policy: pol, Audit: sink, Timeout: bound})
	start := time.Now()
	got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`))
	took := time.Since(start)
	if got.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d after %v, want 503: %s", got.status, took, got.body)
	}
	if _, code, data := rpcErr(t, got.body); code != CodeInternal || data["code"] != "AUDIT_UNAVAILABLE" {
		t.Errorf("answer %s", got.body)
	}
	if took < bound || took > bound+10*time.Second {
		t.Errorf("answered after %v; want about %v", took, bound)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the write reached the downstream %d times without a durable intent", n)
	}
}

// TestReview57NeverSentGivesBack: a tools/call whose downstream refused the
// connection never reached it, yet kept its limiter charge: clients
// retrying through an outage used up their rate and spend caps on calls
// that never ran, and were refused 429 once the downstream was back. Such
// a call is given back its charge now, alone or in a batch, through the
// gateway's own client or net/http's Transport; its outcome record's cost
// is 0.
func TestReview57NeverSentGivesBack(t *testing.T) {
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	upstream := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	for _, own := range []bool{true, false} {
		for _, batch := range []bool{false, true} {
			name := fmt.Sprintf("own client %v, batch %v", own, batch)
			t.Run(name, func(t *testing.T) {
				lim, err := limiter.New([]limiter.Limit{
					{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour},
					{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour},
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var costs []float64
				opts := Options{Limiter: lim, Logger: discardLogger(),
					Audit: audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
						mu.Lock()
						defer mu.Unlock()
						if e.Phase == audit.PhaseOutcome {
							costs = append(costs, e.Cost)
						}
						return nil
					})}
				if !own {
					opts.Transport = &http.Transport{}
				}
				g, err := New(upstream, DemoTokens(), &opts)
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(g)
				defer gw.Close()
				for i := range 3 {
					body := call(strconv.Itoa(i), "get_customer_record", `{"q":"x"}`)
					if batch {
						body = "[" + body + "]"
					}
					got := r28Post(t, gw.URL, body, false)
					if strings.Contains(got.body, "RATE_LIMIT") || strings.Contains(got.body, "SPEND_LIMIT") || !strings.Contains(got.body, "UPSTREAM_UNAVAILABLE") {
						t.Fatalf("call %d with the downstream refusing connections: %d %s; want UPSTREAM_UNAVAILABLE", i, got.status, got.body)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if fmt.Sprint(costs) != "[0 0 0]" {
					t.Errorf("outcome costs %v; want [0 0 0]", costs)
				}
			})
		}
	}
}

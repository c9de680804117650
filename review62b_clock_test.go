package mcpguard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62bLatencyAfterClockStepBack: Options.Now is a wall clock
// without a monotonic reading (time.Now().UTC(), a test's clock) and an
// NTP correction steps it back an hour while a call runs. The outcome
// record's latency_ms is the difference of two readings of that clock:
// minus an hour. A call takes no negative time; the gateway's records
// (gateway.event) clamp such a latency to 0, and the Guard's should not
// record a duration that cannot be (a trail's latency percentiles, an
// alert on latency_ms, read it as it is).
func TestReview62bLatencyAfterClockStepBack(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "r", Class: policy.Read}, {Name: "w", Class: policy.Write}},
		WriteAllowlist: []string{"w"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Now: now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"r", "w"} {
		t.Run(name, func(t *testing.T) {
			clock.Store(t0.UnixNano())
			before := len(sink.all())
			h, err := g.Wrap(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					clock.Store(t0.Add(-time.Hour).UnixNano()) // the wall clock steps back
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), r61cCall(name))
			if err != nil || res == nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
			evs := sink.all()[before:]
			if len(evs) == 0 {
				t.Fatal("no record")
			}
			for _, e := range evs {
				if e.LatencyMS < 0 {
					t.Errorf("%s record: latency_ms %v after the clock stepped back an hour, want >= 0", e.Phase, e.LatencyMS)
				}
			}
		})
	}
}

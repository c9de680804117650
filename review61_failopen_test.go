package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61FailOpenRecorded: a call the limiter admitted only because
// its store failed (FailOpenReads) was recorded as any allowed call, its
// cost, an empty detail: the trail of an outage did not tell the calls that
// ran without their caps (only the log did). Its outcome's detail says so
// now (audit.DetailFailOpen), the Guard's and the stand-alone Audit's
// around Limit; a call admitted by a working store's does not.
func TestReview61FailOpenRecorded(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read, Cost: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	log := slog.New(slog.DiscardHandler)
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	newLim := func(down bool) *limiter.Limiter {
		opts := &limiter.Options{FailOpenReads: true, Store: limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
			return errors.New("review61: store down")
		})}
		if !down {
			opts = nil
		}
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	guarded := func(lim *limiter.Limiter, sink audit.Sink) mcp.ToolHandler {
		g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Limiter: lim, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		w, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	steps := func(lim *limiter.Limiter, sink audit.Sink) mcp.ToolHandler {
		a, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		l, err := mcpguard.Limit(lim, pol, &mcpguard.Options{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return mcpguard.Chain(a, mcpguard.Authenticate(auth), mcpguard.Authorize(pol), l)(h)
	}
	for name, build := range map[string]func(*limiter.Limiter, audit.Sink) mcp.ToolHandler{"guard": guarded, "steps": steps} {
		for _, down := range []bool{true, false} {
			sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
			res, err := build(newLim(down), sink)(context.Background(), r61cCall("r"))
			if err != nil || res == nil || res.IsError {
				t.Fatalf("%s, store down %v: %v %v", name, down, res, err)
			}
			var outs []audit.Event
			for _, e := range sink.all() {
				if e.Phase == audit.PhaseOutcome {
					outs = append(outs, e)
				}
			}
			if len(outs) != 1 || !outs[0].Allowed {
				t.Fatalf("%s, store down %v: outcome records %+v", name, down, outs)
			}
			if says := strings.Contains(outs[0].Detail, audit.DetailFailOpen); says != down {
				t.Errorf("%s, store down %v: detail %q", name, down, outs[0].Detail)
			}
		}
	}
}

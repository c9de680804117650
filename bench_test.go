package mcpguard_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The benchmarks compare the guarded path with the bare one in the same
// run; BENCHMARKS.md records the ratios. Run:
//
//	go test -run '^$' -bench 'Pipeline$|RoundTripInterleaved' -benchmem -count 5 .
//	go test -run '^$' -bench 'PipelineCold' -benchtime 10000x -count 5 .

var benchSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"customer_id": {"type": "string", "pattern": "^CUST-[A-Z0-9]{5}$"},
		"amount":      {"type": "number", "exclusiveMinimum": 0},
		"reason":      {"type": "string", "minLength": 10, "maxLength": 200}
	},
	"required": ["customer_id", "amount", "reason"],
	"additionalProperties": false
}`)

var benchArgs = json.RawMessage(`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`)

func noop(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
}

// benchGuard is the full guard of DESIGN.md's target: authentication,
// policy, strict validation, a rate and a spend limit, and audit to a
// buffered JSONL sink.
func benchGuard(b *testing.B) *mcpguard.Guard {
	b.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read}},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{},
	})
	if err != nil {
		b.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1e12, Window: time.Second},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 1e15, Window: time.Second},
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	sink, err := audit.OpenJSONL(filepath.Join(b.TempDir(), "audit.jsonl"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sink.Close() })
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkPipeline(b *testing.B) {
	tool := &mcp.Tool{Name: "trigger_refund", InputSchema: benchSchema}
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "trigger_refund", Arguments: benchArgs}}
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			noop(ctx, r)
		}
	})
	b.Run("guarded", func(b *testing.B) {
		h, err := benchGuard(b).Wrap(tool, noop)
		if err != nil {
			b.Fatal(err)
		}
		if res, _ := h(ctx, r); res.IsError {
			b.Fatalf("guarded call refused: %s", mustJSON(res))
		}
		b.ReportAllocs()
		for b.Loop() {
			h(ctx, r)
		}
	})
}

// coldBytes is what BenchmarkPipelineCold writes between two calls: twice
// a core's L2 cache on this project's machine (4 MiB), so that each call
// finds its code and data evicted, as it does inside a round trip where
// the go-sdk allocates and touches some 385 KB per call.
var coldBytes = make([]byte, 8<<20)

// BenchmarkPipelineCold is BenchmarkPipeline with the caches emptied
// before every call: the guard's cost as it runs inside a round trip
// (BenchmarkRoundTripInterleaved), where the go-sdk's work evicts it
// between calls, measured without the round trip's noise. It reports the
// median of the timed calls only; ns/op includes the eviction.
func BenchmarkPipelineCold(b *testing.B) {
	tool := &mcp.Tool{Name: "trigger_refund", InputSchema: benchSchema}
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "trigger_refund", Arguments: benchArgs}}
	ctx := context.Background()
	run := func(b *testing.B, h mcp.ToolHandler) {
		if res, _ := h(ctx, r); res.IsError {
			b.Fatalf("call refused: %s", mustJSON(res))
		}
		var ts []time.Duration
		for b.Loop() {
			for i := 0; i < len(coldBytes); i += 64 {
				coldBytes[i]++
			}
			t0 := time.Now()
			h(ctx, r)
			ts = append(ts, time.Since(t0))
		}
		b.ReportMetric(float64(median(ts).Nanoseconds()), "p50-ns")
	}
	b.Run("bare", func(b *testing.B) { run(b, noop) })
	b.Run("guarded", func(b *testing.B) {
		h, err := benchGuard(b).Wrap(tool, noop)
		if err != nil {
			b.Fatal(err)
		}
		run(b, h)
	})
}

// refundArgs is benchArgs as a typed tool's input.
type refundArgs struct {
	CustomerID string  `json:"customer_id"`
	Amount     float64 `json:"amount"`
	Reason     string  `json:"reason"`
}

// roundTripSession connects a client to a server with one no-op tool,
// raw (Server.AddTool) or typed (mcp.AddTool, whose wrapper decodes the
// arguments into refundArgs), bare or with Guard.Install. When inside is
// not nil, an outermost receiving middleware appends to it how long the
// server spent in each tools/call, from the guard's start (if any) to the
// result.
func roundTripSession(b *testing.B, typed, guarded bool, inside *[]time.Duration) *mcp.ClientSession {
	b.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	tool := &mcp.Tool{Name: "trigger_refund", InputSchema: benchSchema}
	if typed {
		mcp.AddTool(s, tool, func(ctx context.Context, req *mcp.CallToolRequest, in refundArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{}}, nil, nil
		})
	} else {
		s.AddTool(tool, noop)
	}
	if guarded {
		if err := benchGuard(b).Install(s); err != nil {
			b.Fatal(err)
		}
	}
	if inside != nil {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method != "tools/call" {
					return next(ctx, method, req)
				}
				t0 := time.Now()
				res, err := next(ctx, method, req)
				*inside = append(*inside, time.Since(t0))
				return res, err
			}
		})
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// BenchmarkRoundTripInterleaved alternates a bare and a guarded call in
// one loop (each first every other time), so that the drift of a shared,
// noisy machine hits both alike, and reports the median of each and their
// ratio, for a raw tool and for a typed one; and, from a timing
// middleware around each server's tools/call, the guard's own time inside
// the round trip (guard-inside-ns: the difference of the two servers'
// medians).
func BenchmarkRoundTripInterleaved(b *testing.B) {
	for _, typed := range []bool{false, true} {
		name := "raw"
		if typed {
			name = "typed"
		}
		b.Run(name, func(b *testing.B) {
			var ib, ig []time.Duration
			bare, guarded := roundTripSession(b, typed, false, &ib), roundTripSession(b, typed, true, &ig)
			params := &mcp.CallToolParams{Name: "trigger_refund", Arguments: benchArgs}
			ctx := context.Background()
			for _, cs := range []*mcp.ClientSession{bare, guarded} {
				if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
					b.Fatalf("call: %v %s", err, mustJSON(res))
				}
			}
			var tb, tg []time.Duration
			for i := 0; b.Loop(); i++ {
				// Alternate which goes first, so that neither always
				// runs in the wake of the other (its garbage, its cache).
				first, second := bare, guarded
				if i%2 == 1 {
					first, second = guarded, bare
				}
				t0 := time.Now()
				first.CallTool(ctx, params)
				t1 := time.Now()
				second.CallTool(ctx, params)
				d1, d2 := t1.Sub(t0), time.Since(t1)
				if i%2 == 1 {
					d1, d2 = d2, d1
				}
				tb = append(tb, d1)
				tg = append(tg, d2)
			}
			mb, mg := median(tb), median(tg)
			b.ReportMetric(float64(mb.Nanoseconds()), "bare-p50-ns")
			b.ReportMetric(float64(mg.Nanoseconds()), "guarded-p50-ns")
			b.ReportMetric(float64(mg)/float64(mb), "guarded/bare")
			// The guard's own time inside the round trip: how much longer
			// the guarded server took from receiving the call to its result.
			b.ReportMetric(float64((median(ig) - median(ib)).Nanoseconds()), "guard-inside-ns")
		})
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[len(s)/2]
}

func BenchmarkRoundTrip(b *testing.B) {
	params := &mcp.CallToolParams{Name: "trigger_refund", Arguments: benchArgs}
	for _, guarded := range []bool{false, true} {
		name := "bare"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			cs := roundTripSession(b, false, guarded, nil)
			if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
				b.Fatalf("call: %v %s", err, mustJSON(res))
			}
			b.ReportAllocs()
			for b.Loop() {
				cs.CallTool(context.Background(), params)
			}
		})
	}
}

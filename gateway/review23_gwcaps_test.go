package gateway

import (
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview23InvalidCostRefused: a Cost function that returns what no
// spend cap can take (a negative amount read from the arguments, NaN,
// an infinity) is the configuration's failure, as the library's pipeline
// says ("the cost of the call could not be computed", INTERNAL): the call
// is refused with -32603 and 500, not forwarded, and its outcome record
// is written (a NaN or infinite cost made the JSONL sink refuse it, and
// with a limiter the call was answered "Limiter unavailable", 503, as
// though a retry could help).
func TestReview23InvalidCostRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limited bool
		cost    func(args policy.Args) float64
	}{
		{"negative_amount_limited", true, func(a policy.Args) float64 { v, _ := a.Number("amount"); return v }},
		{"negative_amount_unlimited", false, func(a policy.Args) float64 { v, _ := a.Number("amount"); return v }},
		{"nan_limited", true, func(policy.Args) float64 { return math.NaN() }},
		{"nan_unlimited", false, func(policy.Args) float64 { return math.NaN() }},
		{"inf_unlimited", false, func(policy.Args) float64 { return math.Inf(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			sink, err := audit.OpenJSONL(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts := &Options{Audit: sink, Cost: func(_ string, a policy.Args) float64 { return tc.cost(a) }}
			if tc.limited {
				lim, err := limiter.New([]limiter.Limit{
					{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
					{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				opts.Limiter = lim
			}
			rg := newRig(t, opts)
			got := rg.post(t, viewer, call(`7`, "get_customer_record", `{"amount":-5}`))
			if got.status != http.StatusInternalServerError {
				t.Errorf("status %d, want 500: %s", got.status, got.body)
			}
			if _, code, data := rpcErr(t, got.body); code != CodeInternal || data["code"] != "INTERNAL" {
				t.Errorf("error %d %v, want -32603 INTERNAL: %s", code, data["code"], got.body)
			}
			if n := len(rg.down.log()); n != 0 {
				t.Errorf("%d requests forwarded, want 0", n)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var recs []audit.Event
			for e, err := range audit.ReadJSONL(f) {
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, e)
			}
			if len(recs) != 1 || recs[0].Code != "INTERNAL" || recs[0].Allowed || recs[0].Cost != 0 || recs[0].Tool != "get_customer_record" {
				t.Errorf("records %+v, want one INTERNAL refusal of get_customer_record with cost 0", recs)
			}
			if !strings.Contains(rg.logs.String(), "cost") {
				t.Errorf("the log does not say the cost failed:\n%s", rg.logs)
			}
		})
	}
}

// TestReview23InvalidCostInBatch: in a batch, the member whose cost is
// invalid is refused alone; the others are forwarded and charged.
func TestReview23InvalidCostInBatch(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Limiter: lim, Cost: func(_ string, a policy.Args) float64 { v, _ := a.Number("amount"); return v }})
	got := rg.post(t, viewer, `[`+call(`1`, "get_customer_record", `{"amount":-5}`)+`,`+call(`2`, "get_customer_record", `{"amount":4}`)+`]`)
	if got.status != http.StatusOK || !strings.Contains(got.body, `"id":1,"error":{"code":-32603`) || !strings.Contains(got.body, `"id":2,"result"`) {
		t.Errorf("batch answer %d %s, want member 1 refused with -32603 and member 2 answered", got.status, got.body)
	}
	if n := len(rg.down.log()); n != 1 {
		t.Errorf("%d requests forwarded, want 1", n)
	}
}

// panicky is a custom Transport that panics while armed, and otherwise
// sends requests with the default one.
type panicky struct {
	armed atomic.Bool
	body  atomic.Bool // panic in the answer's Read instead
}

func (p *panicky) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.armed.Load() && !p.body.Load() {
		panic("review23: a Transport's bug")
	}
	resp, err := NewTransport().RoundTrip(r)
	if err == nil && p.armed.Load() && p.body.Load() {
		resp.Body = panickyBody{resp.Body}
	}
	return resp, err
}

type panickyBody struct{ io.ReadCloser }

func (panickyBody) Read([]byte) (int, error) { panic("review23: a body's bug") }
func (panickyBody) Close() error             { return nil }

// TestReview23TransportPanicReleases: a custom Transport that panics,
// in RoundTrip or in its answer's Read, fails the call (-32603, 500, or
// the cut of an answer begun), and the call gives back its in-flight
// place and gets its outcome record: the slot was held for ever (every
// later call of the caller refused CONCURRENCY_LIMIT_EXCEEDED), and in a
// batch, whose members are sent from goroutines of their own, the panic
// ended the whole gateway process.
func TestReview23TransportPanicReleases(t *testing.T) {
	for _, where := range []string{"round_trip", "body"} {
		for _, batch := range []bool{false, true} {
			name := where + "_single"
			if batch {
				name = where + "_batch"
			}
			t.Run(name, func(t *testing.T) {
				lim := oneInFlight(t)
				sink := &codeSink{}
				tr := &panicky{}
				tr.armed.Store(true)
				tr.body.Store(where == "body")
				rg := newRig(t, &Options{Limiter: lim, Audit: sink, Transport: tr})
				body := call(`1`, "get_customer_record", "")
				if batch {
					body = "[" + body + "]"
				}
				req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", viewer)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("first call: %v", err)
				}
				b, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case batch:
					if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"error":{"code":-32`) {
						t.Errorf("batch answer %d %s, want the member answered with an error", resp.StatusCode, b)
					}
				case where == "round_trip":
					if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), `"code":-32603`) {
						t.Errorf("answer %d %s, want -32603 with 500", resp.StatusCode, b)
					}
				default:
					// The answer's header was relayed before its body failed:
					// the client reads it cut short.
					if rerr == nil {
						t.Errorf("answer %d %s read whole, want it cut short", resp.StatusCode, b)
					}
				}
				tr.armed.Store(false)
				deadline := time.Now().Add(3 * time.Second)
				for {
					got := rg.post(t, viewer, call(`2`, "get_customer_record", ""))
					if got.status == http.StatusOK {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the next call: status %d, want 200 (the panicked call kept its in-flight place): %s", got.status, got.body)
					}
					time.Sleep(20 * time.Millisecond)
				}
				codes := sink.all()
				if len(codes) != 2 || codes[0] == "" || codes[1] != "" {
					t.Errorf("outcome codes %q, want the failed call's and then the allowed one's", codes)
				}
			})
		}
	}
}

// TestReview23BatchSpendSum: a batch whose members each fit the spend cap
// but not together is charged member by member: the member past the cap
// is refused (-32029, SPEND_LIMIT_EXCEEDED, a whole number of seconds to
// wait, at least 1), never forwarded, and recorded with cost 0, and the
// others are charged once each.
func TestReview23BatchSpendSum(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	costs := map[string]float64{}
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		costs[e.Code] += e.Cost
		return nil
	})
	rg := newRig(t, &Options{Limiter: lim, Audit: sink, Cost: func(string, policy.Args) float64 { return 4 }})
	body := `[` + call(`1`, "get_customer_record", "") + `,` + call(`2`, "get_customer_record", "") + `,` +
		call(`3`, "get_customer_record", "") + `,{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_customer_record"}}]`
	got := rg.post(t, viewer, body)
	if got.status != http.StatusOK {
		t.Fatalf("status %d: %s", got.status, got.body)
	}
	if !strings.Contains(got.body, `"id":3,"error":{"code":-32029`) || !strings.Contains(got.body, `"SPEND_LIMIT_EXCEEDED"`) ||
		!strings.Contains(got.body, `"retry_after_seconds":`) || strings.Contains(got.body, `"retry_after_seconds":0`) {
		t.Errorf("answer %s, want member 3 refused for spend with a retry_after_seconds of at least 1", got.body)
	}
	if n := len(rg.down.log()); n != 2 {
		t.Errorf("%d members forwarded, want 2", n)
	}
	single := rg.post(t, viewer, call(`4`, "get_customer_record", ""))
	if ra := single.header.Get("Retry-After"); single.status != http.StatusTooManyRequests || ra == "" || ra == "0" || strings.ContainsAny(ra, ".-") {
		t.Errorf("a single call past the cap: status %d, Retry-After %q, want 429 and a positive whole number", single.status, ra)
	}
	mu.Lock()
	defer mu.Unlock()
	if costs[""] != 8 || costs["SPEND_LIMIT_EXCEEDED"] != 0 {
		t.Errorf("recorded costs %v, want 8 for the allowed members and 0 for the refused ones", costs)
	}
}

// TestReview23CostPanicReleases: a Cost function that panics on some
// arguments refuses that call (-32603, INTERNAL) and nothing else: the
// batch members decided before it keep no in-flight place (the panic
// ended the handler with their places taken for good, and with a global
// in-flight cap one client's batches locked every caller out).
func TestReview23CostPanicReleases(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var codes []string
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		codes = append(codes, e.Code)
		return nil
	})
	cost := func(_ string, a policy.Args) float64 {
		if v, _ := a.Number("amount"); v > 100 {
			panic("review23: a Cost bug the arguments reach")
		}
		return 1
	}
	rg := newRig(t, &Options{Limiter: lim, Audit: sink, Cost: cost})
	body := `[` + call(`1`, "get_customer_record", `{"amount":1}`) + `,` + call(`2`, "get_customer_record", `{"amount":1000}`) + `]`
	req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("batch: %v, want member 2 refused with -32603", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"id":2,"error":{"code":-32603`) {
			t.Errorf("batch answer %d %s, want member 2 refused with -32603", resp.StatusCode, b)
		}
	}
	if got := rg.post(t, admin, call(`3`, "get_customer_record", `{"amount":1}`)); got.status != http.StatusOK {
		t.Errorf("another caller's call: status %d, want 200 (the batch kept the global in-flight place): %s", got.status, got.body)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(codes)
	if !slices.Equal(codes, []string{"", "", "INTERNAL"}) {
		t.Errorf("outcome codes %q, want one for each call, member 2's INTERNAL", codes)
	}
}

// oneInFlight returns a limiter that lets each user have one call in
// flight: a call whose place is never given back blocks the next.
func oneInFlight(t *testing.T) *limiter.Limiter {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// codeSink is an audit sink that keeps the code of every event it is given.
type codeSink struct {
	mu    sync.Mutex
	codes []string
}

func (s *codeSink) Write(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes = append(s.codes, e.Code)
	return nil
}

func (s *codeSink) Close() error { return nil }

// all returns the codes kept so far.
func (s *codeSink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.codes)
}

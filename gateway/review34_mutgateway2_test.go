package gateway

import (
	"context"
	"io"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestRequiredRoleSetsShownOnce pins the role sets a -32001 refusal names
// (data.required_roles or data.required_role_sets, and its message): each
// set once, each role in it once, and no set that a smaller one implies
// (meeting any role of the smaller set meets the larger), in their order.
// Two sets holding the same roles in another order are one requirement:
// the first is kept, not both dropped.
func TestRequiredRoleSetsShownOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   [][]string
		want [][]string
	}{
		{"none", nil, nil},
		{"one", [][]string{{"a"}}, [][]string{{"a"}}},
		{"role_twice", [][]string{{"a", "b", "a"}}, [][]string{{"a", "b"}}},
		{"same_set_twice", [][]string{{"a"}, {"a"}}, [][]string{{"a"}}},
		{"same_roles_other_order", [][]string{{"a", "b"}, {"b", "a"}}, [][]string{{"a", "b"}}},
		{"same_roles_after_dedup", [][]string{{"a", "a", "b"}, {"b", "a"}}, [][]string{{"a", "b"}}},
		{"smaller_after", [][]string{{"a", "b"}, {"a"}}, [][]string{{"a"}}},
		{"smaller_before", [][]string{{"a"}, {"b", "a"}}, [][]string{{"a"}}},
		{"disjoint", [][]string{{"a"}, {"b"}}, [][]string{{"a"}, {"b"}}},
		{"overlapping", [][]string{{"a", "b"}, {"b", "c"}}, [][]string{{"a", "b"}, {"b", "c"}}},
		{"smaller_of_three", [][]string{{"a", "c"}, {"b"}, {"c"}}, [][]string{{"b"}, {"c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in [][]string
			for _, s := range tc.in {
				in = append(in, append([]string(nil), s...))
			}
			got := requiredRoleSets(in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requiredRoleSets(%q) (-want +got):\n%s", tc.in, diff)
			}
			if diff := cmp.Diff(tc.in, in); diff != "" {
				t.Errorf("the caller's sets changed (-was +now):\n%s", diff)
			}
		})
	}
}

// TestLimitErrorAnswers pins the answer to each kind of limiter refusal a
// client sees: a failed decision is 503 "Limiter unavailable" with a
// Retry-After of a second; a rate, spend or in-flight refusal is 429 with
// its own contract and the limit named; any positive wait, however short,
// is a Retry-After (retryable), while no wait that helps is said to be not
// retryable, except for the in-flight limit, retried after a second.
func TestLimitErrorAnswers(t *testing.T) {
	rate := limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Minute}
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Hour}
	conc := limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 4}
	for _, tc := range []struct {
		name       string
		d          limiter.Decision
		status     int
		contract   string
		message    string
		retryAfter time.Duration
		retryable  any
	}{
		{"store_failed", limiter.Decision{Err: limiter.ErrStoreUnavailable},
			http.StatusServiceUnavailable, "RATE_LIMIT_EXCEEDED",
			"Limiter unavailable: the call was not forwarded", time.Second, nil},
		{"rate", limiter.Decision{Limit: rate, RetryAfter: 30 * time.Second},
			http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED",
			"Too many requests: rate limit exceeded (" + rate.String() + ")", 30 * time.Second, nil},
		{"rate_shortest_wait", limiter.Decision{Limit: rate, RetryAfter: time.Nanosecond},
			http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED",
			"Too many requests: rate limit exceeded (" + rate.String() + ")", time.Nanosecond, nil},
		{"rate_never", limiter.Decision{Limit: rate},
			http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED",
			"Too many requests: the call takes more than the rate limit allows (" + rate.String() + ")", 0, false},
		{"spend", limiter.Decision{Limit: spend, RetryAfter: time.Minute},
			http.StatusTooManyRequests, "SPEND_LIMIT_EXCEEDED",
			"Too many requests: spend limit exceeded (" + spend.String() + ")", time.Minute, nil},
		{"spend_never", limiter.Decision{Limit: spend},
			http.StatusTooManyRequests, "SPEND_LIMIT_EXCEEDED",
			"Too many requests: the call takes more than the spend limit allows (" + spend.String() + ")", 0, false},
		{"in_flight", limiter.Decision{Limit: conc},
			http.StatusTooManyRequests, "CONCURRENCY_LIMIT_EXCEEDED",
			"Too many requests: in-flight limit exceeded (" + conc.String() + ")", time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := limitError(tc.d)
			if e.code != CodeLimitExceeded || e.status != tc.status || e.contract != tc.contract || e.message != tc.message {
				t.Errorf("got %d %d %s %q, want %d %d %s %q", e.code, e.status, e.contract, e.message,
					CodeLimitExceeded, tc.status, tc.contract, tc.message)
			}
			if e.retryAfter != tc.retryAfter {
				t.Errorf("retryAfter %v, want %v", e.retryAfter, tc.retryAfter)
			}
			if got := e.data["retryable"]; got != tc.retryable {
				t.Errorf("data.retryable = %v, want %v", got, tc.retryable)
			}
		})
	}
}

// TestUnfilteredToolsListRelayedAsIs pins that, with neither
// FilterToolsList nor Pins, a tools/list answer is the downstream's own,
// relayed byte for byte with its status: the gateway reads (and may refuse
// as an upstream error) only the listings it has to filter. A body it could
// not parse, such as one cut short, reaches the client as it is.
func TestUnfilteredToolsListRelayedAsIs(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
	for _, tc := range []struct{ name, contentType, body string }{
		{"json", "application/json", list},
		{"json_cut_short", "application/json", list[:len(list)-3]},
		{"sse", "text/event-stream", "id: 7\nevent: message\ndata:   " + list + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.contentType)
				io.WriteString(w, tc.body)
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			if got.status != http.StatusOK || got.body != tc.body {
				t.Errorf("answer = %d %q, want 200 %q", got.status, got.body, tc.body)
			}
		})
	}
}

// TestRefusalRecordsChargeNothing pins the one record of each kind of
// tools/call the gateway refuses itself (malformed, policy, confirmation,
// pins, arguments a Cost cannot read, Cost failing, limiter): an outcome, not allowed, with the
// refusal's contract, the tool (none for a name refused for its
// characters) and a cost of 0, whatever the Cost function says: nothing
// was charged, and a trail whose costs add up to the spend must not count
// refused calls. Nothing reaches the downstream.
func TestRefusalRecordsChargeNothing(t *testing.T) {
	cost := func(tool string, a policy.Args) float64 {
		if tool == "get_nan" {
			return math.NaN()
		}
		return 5
	}
	for _, tc := range []struct {
		name     string
		tools    []policy.ToolRule
		limits   []limiter.Limit
		pins     string // a fixed set of pins, when not empty
		first    string // a call made (and allowed) before the refused one
		body     string
		tool     string
		contract string
	}{
		{name: "invalid_name", body: call(`1`, `get\u0001x`, `{}`), tool: "", contract: "INVALID_ARGUMENTS"},
		{name: "invalid_params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_a","name":"get_b"}}`,
			tool: "", contract: "INVALID_ARGUMENTS"},
		{name: "policy", body: call(`1`, "admin_reset_key", `{}`), tool: "admin_reset_key", contract: "FORBIDDEN"},
		{name: "confirm", tools: []policy.ToolRule{{Name: "get_confirmed", Class: policy.Read, Confirm: true}},
			body: call(`1`, "get_confirmed", `{}`), tool: "get_confirmed", contract: "CONFIRMATION_REQUIRED"},
		{name: "not_pinned", pins: `{}`, body: call(`1`, "get_a", `{}`), tool: "get_a", contract: "TOOL_NOT_PINNED"},
		{name: "broken_args", body: call(`1`, "get_a", `{"amount":1,"AMOUNT":2}`), tool: "get_a", contract: "INVALID_ARGUMENTS"},
		{name: "cost_failed", body: call(`1`, "get_nan", `{}`), tool: "get_nan", contract: "INTERNAL"},
		{name: "limiter", limits: []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}},
			first: call(`1`, "get_a", `{}`), body: call(`2`, "get_a", `{}`), tool: "get_a", contract: "RATE_LIMIT_EXCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultPolicyConfig()
			cfg.Tools = tc.tools
			pol, err := policy.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var recs []audit.Event
			sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
				mu.Lock()
				defer mu.Unlock()
				recs = append(recs, *e)
				return nil
			})
			opts := &Options{Policy: pol, Audit: sink, Cost: cost}
			if tc.limits != nil {
				if opts.Limiter, err = limiter.New(tc.limits, nil); err != nil {
					t.Fatal(err)
				}
			}
			if tc.pins != "" {
				if opts.Pins, err = ParsePins([]byte(tc.pins)); err != nil {
					t.Fatal(err)
				}
			}
			rg := newRig(t, opts)
			forwarded := 0
			if tc.first != "" {
				if got := rg.post(t, viewer, tc.first); got.status != http.StatusOK {
					t.Fatalf("first call: %d %s", got.status, got.body)
				}
				forwarded = len(rg.down.log())
				mu.Lock()
				recs = nil
				mu.Unlock()
			}
			got := rg.post(t, viewer, tc.body)
			if got.status == http.StatusOK {
				t.Fatalf("answer %d %s, want a refusal", got.status, got.body)
			}
			if n := len(rg.down.log()); n != forwarded {
				t.Errorf("%d requests forwarded, want %d", n, forwarded)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(recs), recs)
			}
			e := recs[0]
			if e.Phase != audit.PhaseOutcome || e.Allowed || e.Code != tc.contract || e.Tool != tc.tool || e.Cost != 0 {
				t.Errorf("record: phase %s allowed %v code %s tool %q cost %v; want outcome false %s %q 0",
					e.Phase, e.Allowed, e.Code, e.Tool, e.Cost, tc.contract, tc.tool)
			}
		})
	}
}

// durableSink records events with the way each was written: through
// WriteDurable or through Write.
type durableSink struct {
	mu      sync.Mutex
	recs    []audit.Event
	durable []bool
}

func (s *durableSink) Write(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs, s.durable = append(s.recs, *e), append(s.durable, false)
	return nil
}

func (s *durableSink) WriteDurable(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs, s.durable = append(s.recs, *e), append(s.durable, true)
	return nil
}

// TestWriteRecordsAllowedIntentThenOutcome pins the two records of an
// allowed write: first an intent, allowed, with the tool, its class and
// no code or cost (the outcome carries the charge, once), written durably
// (audit.WriteDurable) before the call is forwarded, then the outcome,
// allowed, with the call's cost.
func TestWriteRecordsAllowedIntentThenOutcome(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Cost: 2}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &durableSink{}
	rg := newRig(t, &Options{Policy: pol, Audit: sink})
	if got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`)); got.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", got.status, got.body)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	type rec struct {
		Phase         audit.Phase
		Allowed       bool
		Tool, Class   string
		Code          string
		Cost          float64
		CorrelationID bool
	}
	var got []rec
	for _, e := range sink.recs {
		got = append(got, rec{e.Phase, e.Allowed, e.Tool, e.Class, e.Code, e.Cost, e.CorrelationID != ""})
	}
	want := []rec{
		{audit.PhaseIntent, true, "trigger_refund", "write", "", 0, true},
		{audit.PhaseOutcome, true, "trigger_refund", "write", "", 2, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if len(sink.durable) > 0 && !sink.durable[0] {
		t.Errorf("the intent was written with Write, not WriteDurable: the call may run unrecorded")
	}
}

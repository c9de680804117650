package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The soak of SetPolicy: many sessions call in loops while an operator
// flips the policy between a (every tool allowed) and a b (the writes
// revoked: hidden, off the allowlist or over an argument limit), and the
// trail, the handlers' runs and the limiter are checked after.
//
// Tools: "peek" (read, its cost the argument amount), "pay" (write, needs
// confirmation), "give" (write, an argument limit on amount) and "draft"
// (write, always a dry run, dry-run aware).

const r30sSchema = `{"type":"object","properties":{"n":{"type":"integer"},"amount":{"type":"number"},"hold":{"type":"boolean"}},"required":["n"]}`

// r30sRun is one run of a handler.
type r30sRun struct {
	tool string
	seq  int64 // when it ran
	pol  *policy.Policy
	corr string
	dry  bool
}

type r30sSoak struct {
	seq atomic.Int64 // orders the client's, the handlers' and the flipper's moments

	mu      sync.Mutex
	sent    map[int64]int64 // n: when the client last sent or answered
	elicits map[int64]int   // n: confirmation questions answered
	runs    map[int64][]r30sRun
	mrtr    map[int64]bool // n: the call came from a client of multi round-trips
	told    map[int64]string
	tool    map[int64]string
	bSpans  [][2]int64 // [set, replaced] of each b

	hold    chan struct{} // a "peek" with hold waits on it
	holding chan struct{}
}

func (s *r30sSoak) mark(n int64, ans bool) {
	q := s.seq.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent[n] = q
	if ans {
		s.elicits[n]++
	}
}

var r30sN = regexp.MustCompile(`n=(\d+)`)

// r30sPolicies returns a and the b variants.
func r30sPolicies(t *testing.T) (*policy.Policy, []*policy.Policy) {
	t.Helper()
	rules := func(pay, give, draft policy.ToolRule) []policy.ToolRule {
		return []policy.ToolRule{{Name: "peek", Class: policy.Read}, pay, give, draft}
	}
	pay := policy.ToolRule{Name: "pay", Class: policy.Write, Confirm: true, Cost: 1}
	give := policy.ToolRule{Name: "give", Class: policy.Write, Cost: 1,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}}
	draft := policy.ToolRule{Name: "draft", Class: policy.Write}
	all := []string{"pay", "give", "draft"}
	a := r29pPolicy(t, policy.Config{Tools: rules(pay, give, draft), WriteAllowlist: all})
	hidden := func(r policy.ToolRule) policy.ToolRule { r.Roles = []string{"incident"}; return r }
	tight := give
	tight.ArgLimits = []policy.ArgLimit{{Field: "amount", Max: 10}}
	// b1: pay hidden, give and draft off the allowlist.
	b1 := r29pPolicy(t, policy.Config{Tools: rules(hidden(pay), give, draft), WriteAllowlist: []string{"pay"}})
	// b2: pay off the allowlist, give over its limit, draft hidden.
	b2 := r29pPolicy(t, policy.Config{Tools: rules(pay, tight, hidden(draft)), WriteAllowlist: []string{"give", "draft"}})
	return a, []*policy.Policy{b1, b2}
}

// r30sServer makes the guarded server of the soak.
func r30sServer(t *testing.T, s *r30sSoak, a *policy.Policy, sink audit.Sink, lim *limiter.Limiter) (*mcp.Server, *mcpguard.Guard) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "r30s", Version: "1"}, nil)
	var g *mcpguard.Guard
	handler := func(name string) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				N    int64 `json:"n"`
				Hold bool  `json:"hold"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			r := r30sRun{tool: name, seq: s.seq.Add(1), pol: g.Policy(), corr: mcpguard.CorrelationID(ctx), dry: dryrun.FromContext(ctx)}
			s.mu.Lock()
			s.runs[in.N] = append(s.runs[in.N], r)
			s.mu.Unlock()
			if in.Hold {
				s.holding <- struct{}{}
				<-s.hold
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, nil
		}
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	for _, n := range []string{"peek", "pay", "give", "draft"} {
		tl := &mcp.Tool{Name: n, InputSchema: json.RawMessage(r30sSchema)}
		if n == "peek" {
			tl.Annotations = ro
		}
		srv.AddTool(tl, handler(n))
	}
	var err error
	g, err = mcpguard.New(a, fixed(bob), &mcpguard.Options{
		Audit:     sink,
		Logger:    quiet,
		Confirmer: testSigner(t, nil),
		Limiter:   lim,
		Tools: map[string]mcpguard.ToolOptions{
			"peek": {Cost: func(args map[string]any) (float64, error) {
				return args["amount"].(json.Number).Float64()
			}},
			"pay":   {Describe: func(tool string, args map[string]any) string { return fmt.Sprintf("pay n=%v", args["n"]) }},
			"draft": {DryRun: true, DryRunAware: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return srv, g
}

// r30sKind is how a soak session reaches the server.
type r30sKind struct {
	name    string
	version string // "" the default, 2026-07-28: multi round-trips
	http    bool
}

func TestReview30PolicySoakInMemory(t *testing.T) {
	r30sRunSoak(t, []r30sKind{{name: "mem-default"}, {name: "mem-2025-11-25", version: "2025-11-25"}}, 24)
}

func TestReview30PolicySoakHTTP(t *testing.T) {
	r30sRunSoak(t, []r30sKind{
		{name: "http-stateless-default", http: true},
		{name: "http-stateful-2025-11-25", version: "2025-11-25", http: true},
		{name: "mem-default"},
	}, 18)
}

func r30sRunSoak(t *testing.T, kinds []r30sKind, sessions int) {
	base := runtime.NumGoroutine()
	const slots, budget = 8, 1_000_000
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: slots},
		{Kind: limiter.Spend, Scope: limiter.User, Max: budget, Window: limiter.MaxWindow},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &r30sSoak{sent: map[int64]int64{}, elicits: map[int64]int{}, runs: map[int64][]r30sRun{},
		mrtr: map[int64]bool{}, told: map[int64]string{}, tool: map[int64]string{},
		hold: make(chan struct{}), holding: make(chan struct{}, slots+1)}
	a, bs := r30sPolicies(t)
	srv, g := r30sServer(t, s, a, sink, lim)

	mux := http.NewServeMux()
	mux.Handle("/stateless", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	mux.Handle("/stateful", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := httptest.NewServer(mux)

	ctx := context.Background()
	type sess struct {
		cs   *mcp.ClientSession
		ss   *mcp.ServerSession
		mrtr bool
	}
	var all []sess
	for i := range sessions {
		k := kinds[i%len(kinds)]
		elicit := func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			m := r30sN.FindStringSubmatch(r.Params.Message)
			if m == nil {
				return nil, fmt.Errorf("no n in %q", r.Params.Message)
			}
			n, _ := strconv.ParseInt(m[1], 10, 64)
			s.mark(n, true)
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
		var tr mcp.Transport
		var ss *mcp.ServerSession
		switch {
		case k.http && k.version == "":
			tr = &mcp.StreamableClientTransport{Endpoint: hs.URL + "/stateless", MaxRetries: -1}
		case k.http:
			tr = &mcp.StreamableClientTransport{Endpoint: hs.URL + "/stateful", MaxRetries: -1}
		default:
			ct, st := mcp.NewInMemoryTransports()
			if ss, err = srv.Connect(ctx, st, nil); err != nil {
				t.Fatal(err)
			}
			tr = ct
		}
		cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: k.version})
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		all = append(all, sess{cs, ss, k.version == ""})
	}

	var next atomic.Int64
	var stop atomic.Bool
	var calls, transport atomic.Int64
	var wg sync.WaitGroup
	for i, se := range all {
		wg.Go(func() {
			tools := []string{"peek", "pay", "give", "draft"}
			for j := i; !stop.Load(); j++ {
				n := next.Add(1)
				tool := tools[j%len(tools)]
				args := json.RawMessage(fmt.Sprintf(`{"n":%d,"amount":50}`, n))
				if tool == "peek" {
					args = json.RawMessage(fmt.Sprintf(`{"n":%d,"amount":1}`, n))
				}
				s.mu.Lock()
				s.mrtr[n], s.tool[n] = se.mrtr, tool
				s.mu.Unlock()
				s.mark(n, false)
				res, err := se.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				calls.Add(1)
				told := ""
				switch {
				case err != nil:
					told = "error: " + err.Error()
					if wireError(err) == nil {
						transport.Add(1)
					}
				case res.IsError:
					told = "refused: " + errorCode(t, res)
				case res.NeedsInput():
					told = "input required"
				default:
					told = "ok"
				}
				s.mu.Lock()
				s.told[n] = told
				s.mu.Unlock()
			}
		})
	}
	// The operator.
	var flips int
	flipDone := make(chan struct{})
	go func() {
		defer close(flipDone)
		for k := 0; !stop.Load(); k++ {
			if err := g.SetPolicy(bs[k%len(bs)]); err != nil {
				t.Error(err)
				return
			}
			set := s.seq.Add(1)
			time.Sleep(time.Duration(1+rand.N(3)) * time.Millisecond)
			end := s.seq.Add(1)
			if err := g.SetPolicy(a); err != nil {
				t.Error(err)
				return
			}
			s.mu.Lock()
			s.bSpans = append(s.bSpans, [2]int64{set, end})
			s.mu.Unlock()
			flips++
			time.Sleep(time.Duration(1+rand.N(3)) * time.Millisecond)
		}
	}()
	time.Sleep(3 * time.Second)
	stop.Store(true)
	<-flipDone
	wg.Wait()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := g.Wait(wctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}

	// No slot is kept: all of them can be held at once, and no more.
	probe := all[0].cs
	held := make(chan string, slots)
	for i := range slots {
		go func() {
			res, err := probe.CallTool(ctx, &mcp.CallToolParams{Name: "peek", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d,"amount":0,"hold":true}`, -1-i))})
			held <- codeOf(t, res, err)
		}()
	}
	for range slots {
		select {
		case <-s.holding:
		case c := <-held:
			t.Fatalf("a call while the probe holds fewer than %d slots: %q, want it to hold one (a slot leaked)", slots, c)
		case <-time.After(5 * time.Second):
			t.Fatal("the probe's calls did not start")
		}
	}
	if res, err := probe.CallTool(ctx, &mcp.CallToolParams{Name: "peek", Arguments: json.RawMessage(`{"n":-100,"amount":0}`)}); codeOf(t, res, err) != "CONCURRENCY_LIMIT_EXCEEDED" {
		t.Errorf("a call past the %d held slots: %q, want CONCURRENCY_LIMIT_EXCEEDED", slots, codeOf(t, res, err))
	}
	close(s.hold)
	for range slots {
		if c := <-held; c != "" {
			t.Errorf("a held probe call: %q", c)
		}
	}

	// The spend charged is what the trail's costs add up to: the rest of
	// the budget can be spent, and not a unit more.
	if err := sink.Flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.QueryJSONL(path, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var spent float64
	for _, e := range evs {
		spent += e.Cost
	}
	rest := budget - spent
	if res, err := probe.CallTool(ctx, &mcp.CallToolParams{Name: "peek", Arguments: json.RawMessage(fmt.Sprintf(`{"n":-101,"amount":%v}`, rest))}); codeOf(t, res, err) != "" {
		t.Errorf("spending the %v the trail says is left: %q, want it allowed", rest, codeOf(t, res, err))
	}
	if res, err := probe.CallTool(ctx, &mcp.CallToolParams{Name: "peek", Arguments: json.RawMessage(`{"n":-102,"amount":1}`)}); codeOf(t, res, err) != "SPEND_LIMIT_EXCEEDED" {
		t.Errorf("spending 1 past the %v the trail says is left: %q, want SPEND_LIMIT_EXCEEDED", rest, codeOf(t, res, err))
	}

	// Close everything, then read the trail.
	for _, se := range all {
		se.cs.Close()
		if se.ss != nil {
			se.ss.Close()
		}
	}
	hs.Close()
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if evs, err = audit.QueryJSONL(path, audit.Filter{}); err != nil {
		t.Fatal(err)
	}
	r30sCheck(t, s, evs, a)

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d, %d before the soak\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("%d sessions, %d calls (%d transport errors), %d flips", sessions, calls.Load(), transport.Load(), flips)
}

// r30sCheck checks the invariants of the soak on its trail evs.
func r30sCheck(t *testing.T, s *r30sSoak, evs []audit.Event, a *policy.Policy) {
	t.Helper()
	type at struct {
		i int
		e *audit.Event
	}
	outcomes := map[string][]at{} // by args hash
	byCorr := map[string][]at{}
	for i := range evs {
		e := &evs[i]
		if e.Phase == audit.PhaseOutcome {
			outcomes[e.ArgsSHA256] = append(outcomes[e.ArgsSHA256], at{i, e})
		}
		byCorr[e.CorrelationID] = append(byCorr[e.CorrelationID], at{i, e})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var bad, ranB, ran, refusedCalls int
	fail := func(format string, args ...any) {
		bad++
		if bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	for n, tool := range s.tool {
		amount := 50
		if tool == "peek" {
			amount = 1
		}
		h := audit.ArgsSHA256(json.RawMessage(fmt.Sprintf(`{"n":%d,"amount":%d}`, n, amount)))
		want := 1
		if s.mrtr[n] {
			want += s.elicits[n]
		}
		if got := len(outcomes[h]); got != want {
			fail("call %d (%s, told %q): %d outcome records, want %d", n, tool, s.told[n], got, want)
		}
		if tl := s.told[n]; tl != "ok" && !strings.HasPrefix(tl, "refused: ") && !strings.HasPrefix(tl, "error: calling \"tools/call\": ") {
			fail("call %d (%s): told %q", n, tool, tl)
		}
		runs := s.runs[n]
		if len(runs) > 1 {
			fail("call %d (%s): its handler ran %d times", n, tool, len(runs))
		}
		if (len(runs) == 1) != (s.told[n] == "ok") {
			fail("call %d (%s): %d runs, the client told %q", n, tool, len(runs), s.told[n])
		}
		if len(runs) == 0 {
			refusedCalls++
			continue
		}
		r := runs[0]
		ran++
		if r.pol != a {
			ranB++
		}
		recs := byCorr[r.corr]
		var intent, outcome *at
		for k := range recs {
			switch recs[k].e.Phase {
			case audit.PhaseIntent:
				intent = &recs[k]
			case audit.PhaseOutcome:
				if outcome != nil {
					fail("call %d (%s): two outcome records with correlation id %s", n, tool, r.corr)
				}
				outcome = &recs[k]
			}
		}
		switch {
		case outcome == nil:
			fail("call %d (%s) ran, and has no outcome record", n, tool)
		case !outcome.e.Allowed || outcome.e.Code != "":
			fail("call %d (%s) ran under a refusal: %+v", n, tool, *outcome.e)
		case outcome.e.DryRun != (tool == "draft") || r.dry != (tool == "draft"):
			fail("call %d (%s): dry run %v in the record, %v in the handler", n, tool, outcome.e.DryRun, r.dry)
		}
		if tool == "pay" || tool == "give" {
			if intent == nil || outcome == nil || intent.i > outcome.i {
				fail("write %d (%s) ran without an intent record before its outcome (intent %v)", n, tool, intent)
			}
		}
		if tool == "peek" {
			continue
		}
		// A write whose last word from the client (its call, or its answer
		// to the confirmation) came after a b was set, and that ran before
		// that b was replaced, ran under a policy that refuses it.
		for _, sp := range s.bSpans {
			if sp[0] < s.sent[n] && r.seq < sp[1] {
				fail("write %d (%s) came at %d and ran at %d, within b's span %v", n, tool, s.sent[n], r.seq, sp)
			}
		}
	}
	codes := map[string]int{}
	for _, e := range evs {
		if e.Phase == audit.PhaseOutcome && e.Code != "" {
			k := e.Tool + " " + e.Code
			if strings.HasPrefix(e.Detail, "the policy changed while the user was asked") {
				k += " (re-decided)"
			}
			codes[k]++
		}
	}
	t.Logf("%d calls: %d ran (%d with b the policy when the handler ran), %d refused or asked; %d records; %d b spans; refusals %v",
		len(s.tool), ran, ranB, refusedCalls, len(evs), len(s.bSpans), codes)
}

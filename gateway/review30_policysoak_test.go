package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The soak of SetPolicy in front of a go-sdk downstream: workers post calls
// and batches of "lookup" (a read) and "refund" (a write) while an operator
// flips the policy between a (refund allowed) and a b (refund hidden from
// the viewer, or off the write allowlist).

type r30gSoak struct {
	seq atomic.Int64 // orders the workers', the downstream's and the flipper's moments

	mu       sync.Mutex
	sent     map[int64]int64   // n: when its request was sent
	tool     map[int64]string  // n: the tool called
	received map[int64][]int64 // n: when the downstream ran it
	told     map[int64]string  // n: "ok", or the error's code
	bSpans   [][2]int64

	hold    chan struct{}
	holding chan struct{}
}

type r30gSink struct {
	mu  sync.Mutex
	evs []audit.Event
}

func (s *r30gSink) Write(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, *e)
	return nil
}

func (s *r30gSoak) downstream() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "r30g", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"hold":{"type":"boolean"}},"required":["n"]}`)
	for _, name := range []string{"lookup", "refund"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				N    int64 `json:"n"`
				Hold bool  `json:"hold"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			q := s.seq.Add(1)
			s.mu.Lock()
			s.received[in.N] = append(s.received[in.N], q)
			s.mu.Unlock()
			if in.Hold {
				s.holding <- struct{}{}
				<-s.hold
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, nil
		})
	}
	return srv
}

func r30gPolicies(t *testing.T) (*policy.Policy, []*policy.Policy) {
	t.Helper()
	mk := func(cfg policy.Config) *policy.Policy {
		p, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lookup := policy.ToolRule{Name: "lookup", Class: policy.Read}
	refund := policy.ToolRule{Name: "refund", Class: policy.Write}
	a := mk(policy.Config{Tools: []policy.ToolRule{lookup, refund}, WriteAllowlist: []string{"refund"}})
	hidden := refund
	hidden.Roles = []string{"admin"}
	b1 := mk(policy.Config{Tools: []policy.ToolRule{lookup, hidden}, WriteAllowlist: []string{"refund"}})
	b2 := mk(policy.Config{Tools: []policy.ToolRule{lookup, refund}})
	return a, []*policy.Policy{b1, b2}
}

func TestReview30PolicySoakGateway(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"stateless_json", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{"stateful_sse", &mcp.StreamableHTTPOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) { r30gRun(t, tc.opts) })
	}
}

func r30gRun(t *testing.T, dopts *mcp.StreamableHTTPOptions) {
	base := runtime.NumGoroutine()
	const slots, workers = 16, 16
	s := &r30gSoak{sent: map[int64]int64{}, tool: map[int64]string{}, received: map[int64][]int64{}, told: map[int64]string{},
		hold: make(chan struct{}), holding: make(chan struct{}, slots+1)}
	srv := s.downstream()
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, dopts))
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.Global, Max: slots}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, bs := r30gPolicies(t)
	sink := &r30gSink{}
	g, err := New(down.URL, DemoTokens(), &Options{Policy: a, Limiter: lim, Audit: sink, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	rg := &rig{url: gw.URL}
	var hdr []string
	if !dopts.Stateless {
		hdr = []string{"Mcp-Session-Id", sdkSession(t, rg, viewer), "Mcp-Protocol-Version", "2025-06-18"}
	}
	client := &http.Client{Transport: NewTransport()}
	defer client.CloseIdleConnections()
	post := func(body string) (reply, error) {
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			return reply{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", viewer)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return reply{}, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return reply{resp.StatusCode, resp.Header, string(b)}, err
	}
	member := func(n int64, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"n":%d}}}`, n, tool, n)
	}

	var next atomic.Int64
	var stop atomic.Bool
	var requests, batches, postErrs atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for j := w; !stop.Load(); j++ {
				size := 1 + rand.N(3)
				var ns []int64
				var parts []string
				s.mu.Lock()
				for k := range size {
					n := next.Add(1)
					tool := "lookup"
					if (j+k)%2 == 0 {
						tool = "refund"
					}
					s.tool[n] = tool
					ns = append(ns, n)
					parts = append(parts, member(n, tool))
				}
				s.mu.Unlock()
				body := parts[0]
				if size > 1 || j%5 == 0 { // a batch of one now and then
					body = "[" + strings.Join(parts, ",") + "]"
					batches.Add(1)
				}
				q := s.seq.Add(1)
				s.mu.Lock()
				for _, n := range ns {
					s.sent[n] = q
				}
				s.mu.Unlock()
				got, err := post(body)
				requests.Add(1)
				if err != nil {
					postErrs.Add(1)
					continue
				}
				told := map[int64]string{}
				for _, m := range r28Messages(t, got) {
					var id int64
					if json.Unmarshal(m["id"], &id) != nil {
						continue
					}
					var e struct {
						Code int `json:"code"`
					}
					switch {
					case m["error"] != nil && json.Unmarshal(m["error"], &e) == nil:
						told[id] = fmt.Sprint(e.Code)
					case m["result"] != nil:
						told[id] = "ok"
					}
				}
				if len(told) == 0 && got.status != http.StatusOK {
					for _, n := range ns { // a single call refused with its HTTP status
						told[n] = fmt.Sprint("status ", got.status)
					}
				}
				s.mu.Lock()
				for _, n := range ns {
					s.told[n] = told[n]
				}
				s.mu.Unlock()
			}
		})
	}
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
	time.Sleep(2500 * time.Millisecond)
	stop.Store(true)
	<-flipDone
	wg.Wait()
	if n := postErrs.Load(); n != 0 {
		t.Errorf("%d posts failed", n)
	}

	// No slot is kept: all of them can be held at once, and no more.
	var release sync.Once
	defer release.Do(func() { close(s.hold) })
	held := make(chan string, slots)
	for i := range slots {
		go func() {
			got, err := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup","arguments":{"n":%d,"hold":true}}}`, -1-i, -1-i))
			held <- fmt.Sprint(got.status, " ", err)
		}()
	}
	for range slots {
		select {
		case <-s.holding:
		case c := <-held:
			t.Fatalf("a call while the probe holds fewer than %d slots: %s, want it to hold one (a slot leaked)", slots, c)
		case <-time.After(5 * time.Second):
			t.Fatal("the probe's calls did not start")
		}
	}
	if got, err := post(`{"jsonrpc":"2.0","id":-100,"method":"tools/call","params":{"name":"lookup","arguments":{"n":-100}}}`); err != nil || got.status != http.StatusTooManyRequests {
		t.Errorf("a call past the %d held slots: %d %v %s, want 429", slots, got.status, err, got.body)
	}
	release.Do(func() { close(s.hold) })
	for range slots {
		if c := <-held; c != "200 <nil>" {
			t.Errorf("a held probe call: %s", c)
		}
	}

	r30gCheck(t, s, sink, a)
	t.Logf("%d workers, %d requests (%d batches), %d flips", workers, requests.Load(), batches.Load(), flips)

	client.CloseIdleConnections()
	gw.Close()
	down.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d, %d before the soak\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// r30gCheck checks the invariants of the soak.
func r30gCheck(t *testing.T, s *r30gSoak, sink *r30gSink, a *policy.Policy) {
	t.Helper()
	sink.mu.Lock()
	outcomes := map[string]int{}
	outcomeAt, intentAt := map[string]int{}, map[string]int{}
	for i, e := range sink.evs {
		switch e.Phase {
		case audit.PhaseOutcome:
			outcomes[e.ArgsSHA256]++
			outcomeAt[e.ArgsSHA256] = i
		case audit.PhaseIntent:
			intentAt[e.ArgsSHA256] = i + 1
		}
	}
	nev := len(sink.evs)

	sink.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var bad, forwarded, refused int
	byTold := map[string]int{}
	for n, tl := range s.told {
		byTold[s.tool[n]+" "+tl]++
	}
	fail := func(format string, args ...any) {
		bad++
		if bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	for n, tool := range s.tool {
		h := audit.ArgsSHA256(json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)))
		if got := outcomes[h]; got != 1 {
			fail("call %d (%s, told %q): %d outcome records, want 1", n, tool, s.told[n], got)
		}
		rec := s.received[n]
		if len(rec) > 1 {
			fail("call %d (%s) reached the downstream %d times", n, tool, len(rec))
		}
		if (len(rec) == 1) != (s.told[n] == "ok") {
			fail("call %d (%s): reached the downstream %d times, the client told %q", n, tool, len(rec), s.told[n])
		}
		if len(rec) == 0 {
			refused++
			continue
		}
		forwarded++
		if tool != "refund" {
			continue
		}
		if i := intentAt[h]; i == 0 || i-1 > outcomeAt[h] {
			fail("refund %d reached the downstream without an intent record before its outcome", n)
		}
		for _, sp := range s.bSpans {
			if sp[0] < s.sent[n] && rec[0] < sp[1] {
				fail("refund %d was sent at %d and reached the downstream at %d, within b's span %v", n, s.sent[n], rec[0], sp)
			}
		}
	}
	t.Logf("%d calls: %d forwarded, %d refused; %d records; %d b spans; answers %v", len(s.tool), forwarded, refused, nev, len(s.bSpans), byTold)
}

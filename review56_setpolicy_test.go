package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview56SetPolicyInFlight flips the policy of a tool between read,
// allowlisted write and hidden while calls of it are in flight, under
// Wrap and under Install, and checks each call's records against each
// other: one outcome per call; an intent exactly for an allowed write
// (a call decided wholly by the policy of the moment it came); the
// in-flight slot of every call given back.
func TestReview56SetPolicyInFlight(t *testing.T) {
	mk := func(class policy.Class, hidden bool) *policy.Policy {
		cfg := policy.Config{
			Tools:          []policy.ToolRule{{Name: "flip", Class: class}},
			WriteAllowlist: []string{"flip"},
		}
		if hidden {
			cfg.RoleRules = []policy.RoleRule{{Pattern: "flip", Roles: []string{"nobody"}}}
		}
		p, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pols := []*policy.Policy{mk(policy.Read, false), mk(policy.Write, false), mk(policy.Read, true), mk(policy.Write, true)}
	for _, install := range []bool{false, true} {
		name := map[bool]string{false: "wrap", true: "install"}[install]
		t.Run(name, func(t *testing.T) {
			sink := &memSink{}
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 64}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return bob, nil })
			g, err := mcpguard.New(pols[0], authn, &mcpguard.Options{Audit: sink, Limiter: lim, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "flip", Version: "1"}, nil)
			tool := &mcp.Tool{Name: "flip", InputSchema: json.RawMessage(`{"type":"object"}`)}
			h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				time.Sleep(time.Millisecond)
				return textResult("ok"), nil
			}
			if install {
				srv.AddTool(tool, h)
				if err := g.Install(srv); err != nil {
					t.Fatal(err)
				}
			} else if err := g.AddTool(srv, tool, h); err != nil {
				t.Fatal(err)
			}
			cs := connectPlain(t, srv, nil)
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "flip", Arguments: map[string]any{}}); err != nil && !isUnknownTool(err) {
							t.Error(err)
							return
						}
					}
				}()
			}
			for i := range 200 {
				if err := g.SetPolicy(pols[i%len(pols)]); err != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Microsecond)
			}
			stop.Store(true)
			wg.Wait()
			if err := g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			type pair struct{ intents, outcomes int }
			calls := map[string]*pair{}
			outcome := map[string]string{}
			for _, ev := range sink.all() {
				p := calls[ev.CorrelationID]
				if p == nil {
					p = &pair{}
					calls[ev.CorrelationID] = p
				}
				if ev.Phase == "intent" {
					p.intents++
					continue
				}
				p.outcomes++
				outcome[ev.CorrelationID] = ev.Class + "/" + ev.Code
			}
			for id, p := range calls {
				o := outcome[id]
				switch {
				case p.outcomes != 1:
					t.Errorf("call %s: %d outcome records", id, p.outcomes)
				case p.intents > 1:
					t.Errorf("call %s: %d intent records", id, p.intents)
				case o == "write/" && p.intents != 1:
					t.Errorf("call %s: an allowed write without its intent", id)
				case o != "write/" && p.intents != 0:
					t.Errorf("call %s: an intent for an outcome %q", id, o)
				}
			}
			// Every in-flight slot was given back.
			for range 64 {
				d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "x", Calls: 1})
				if !d.Allowed {
					t.Fatalf("in-flight slots left held: %+v", d)
				}
				defer lim.Release(d)
			}
		})
	}
}

func isUnknownTool(err error) bool {
	we := wireError(err)
	return we != nil && len(we.Message) > 12 && we.Message[:12] == "unknown tool"
}

// TestReview56CancelledCall cancels a call from the client while its
// handler runs, under Wrap and Install, for a read and a write, and checks
// the records: a read's handler sees its context end and its outcome is
// recorded refused; a write's handler is not cancelled, runs to its end,
// and has its intent and an allowed outcome; nothing is left in flight.
// Without Options.Timeout: the write's release comes after the client's
// cancel, which a loaded machine delays past a 30 ms deadline (then the
// handler timed out, rightly, and the test failed).
func TestReview56CancelledCall(t *testing.T) {
	for _, install := range []bool{false, true} {
		for _, tool := range []string{"r56_read", "r56_write"} {
			name := map[bool]string{false: "wrap", true: "install"}[install] + "/" + tool
			t.Run(name, func(t *testing.T) {
				e := newR56EnvMode(t, map[bool]string{false: "wrap", true: "install"}[install], r56Opts{noTimeout: true})
				e.authOK.Store(true)
				started := make(chan struct{})
				release := make(chan struct{})
				var sawCancel atomic.Bool
				e.mode.Store("hook")
				e.hook = func(ctx context.Context) (*mcp.CallToolResult, error) {
					close(started)
					select {
					case <-ctx.Done():
						sawCancel.Store(true)
						return nil, ctx.Err()
					case <-release:
						return textResult("done"), nil
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					_, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}})
					errc <- err
				}()
				<-started
				cancel()
				if err := <-errc; err == nil {
					t.Fatal("a cancelled call returned no error")
				}
				if tool == "r56_write" {
					time.Sleep(20 * time.Millisecond)
					close(release)
				}
				wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer wcancel()
				if err := e.g.Wait(wctx); err != nil {
					t.Fatal(err)
				}
				evs := e.sink.all()
				var got []string
				for _, ev := range evs {
					got = append(got, string(ev.Phase)+"/"+ev.Code)
				}
				want := "[outcome/INTERNAL]"
				if tool == "r56_write" {
					want = "[intent/ outcome/]"
					if sawCancel.Load() {
						t.Error("a started write's handler was cancelled with its caller")
					}
				}
				if s := fmtList(got); s != want {
					t.Errorf("records %s, want %s", s, want)
				}
				d := e.lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 1})
				if !d.Allowed {
					t.Errorf("after the call: %+v", d)
				}
				e.lim.Release(d)
			})
		}
	}
}

func fmtList(l []string) string {
	s := "["
	for i, x := range l {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s + "]"
}

// TestReview56MultiRoundTripWrapInstall runs a handler that asks for more
// input (its multi round-trip) under Wrap and Install, on both protocol
// generations, for a read and a write: the logical call counts once against
// the rate, its handler's last round gets its own state back, and both
// guards answer alike.
func TestReview56MultiRoundTripWrapInstall(t *testing.T) {
	for _, v := range protocolVersions {
		for _, tool := range []string{"r56_read", "r56_write"} {
			var outs []string
			for _, mode := range []string{"wrap", "install", "chain"} {
				e := newR56EnvMode(t, mode, r56Opts{version: v})
				e.authOK.Store(true)
				e.mode.Store("hook")
				var gotState atomic.Value
				e.reqHook = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if req.Params.RequestState == "" {
						return &mcp.CallToolResult{
							InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "sure?", RequestedSchema: &jsonschemaObject}},
							RequestState:  "handler-state-1",
						}, nil
					}
					gotState.Store(req.Params.RequestState)
					return textResult("done"), nil
				}
				res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}})
				if err != nil {
					t.Fatalf("%s %s %s: %v", versionName(v), tool, mode, err)
				}
				if res.IsError {
					raw, _ := json.Marshal(res)
					t.Fatalf("%s %s %s: %s", versionName(v), tool, mode, raw)
				}
				if s, _ := gotState.Load().(string); s != "handler-state-1" {
					t.Errorf("%s %s %s: the handler's next round got state %q", versionName(v), tool, mode, s)
				}
				if err := e.g.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
				left := 0
				for range 3 {
					d := e.lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 1})
					if d.Allowed {
						left++
						e.lim.Release(d)
					}
				}
				var recs []string
				for _, ev := range e.sink.all() {
					recs = append(recs, string(ev.Phase)+"/"+ev.Code+"/"+ev.Class)
				}
				if left != 1 || e.ran.Load() != 2 {
					t.Errorf("%s %s %s: rate left %d, handler ran %d times; want 1 and 2", versionName(v), tool, mode, left, e.ran.Load())
				}
				if v == "" { // an older client's rounds are one call under Install
					outs = append(outs, fmtList(recs))
				}
			}
			for i := 1; i < len(outs); i++ {
				if outs[i] != outs[0] {
					t.Errorf("%s: records differ: %s, %s", tool, outs[0], outs[i])
				}
			}
		}
	}
}

var jsonschemaObject = jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"ok": {Type: "boolean"}}}

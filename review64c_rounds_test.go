package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64cCapsWithRounds races, over MCP sessions of two users (new
// clients answering confirmations in rounds, older ones inside the call),
// confirmed writes whose human accepts, declines or never answers, calls
// cancelled at random moments, dry runs, sessions closed mid-call and
// SetPolicy changing the writes' cost while calls are in flight. Then: the
// in-flight caps were never passed, every slot is back, and what each
// user may still spend is the cap less what its outcome records say stays
// charged (every refused call's reservation came back, once).
func TestReview64cCapsWithRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const gmax, smax, spend = 2, 1, 40
		lim, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Concurrency, Scope: limiter.Global, Max: gmax},
			{Kind: limiter.Concurrency, Scope: limiter.Session, Max: smax},
			{Kind: limiter.Spend, Scope: limiter.User, Max: spend, Window: time.Hour},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := func(cost float64) policy.Config {
			c := basePolicy(false)
			for i := range c.Tools {
				switch c.Tools[i].Name {
				case "wipe", "add_note":
					c.Tools[i].Cost = cost
				}
			}
			c.Tools = append(c.Tools, policy.ToolRule{Name: "hold", Class: policy.Read, Cost: 1})
			return c
		}
		var mu sync.Mutex
		running, maxRunning := 0, 0
		hold := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			running++
			maxRunning = max(maxRunning, running)
			mu.Unlock()
			defer func() {
				mu.Lock()
				running--
				mu.Unlock()
			}()
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			return textResult("held"), nil
		}
		// newHarness, with the tool hold registered before Install.
		h := &harness{t: t, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
		h.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		addTools(h.srv, h.down)
		h.srv.AddTool(&mcp.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, hold)
		pol, err := policy.New(cfg(2))
		if err != nil {
			t.Fatal(err)
		}
		h.g, err = mcpguard.New(pol, h.auth, &mcpguard.Options{Limiter: lim, Audit: h.sink, Confirmer: testSigner(t, nil), Logger: quiet,
			// A key per MCP session (in-memory ones have no id).
			SessionKey: func(req *mcp.CallToolRequest, _ *mcpguard.Identity) string { return fmt.Sprintf("%p", req.Session) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.g.Install(h.srv); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var pwg sync.WaitGroup
		pwg.Add(1)
		go func() { // SetPolicy while calls are in flight
			defer pwg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(7 * time.Millisecond):
				}
				pol, err := policy.New(cfg(float64(2 + i%2)))
				if err != nil {
					t.Error(err)
					return
				}
				h.g.SetPolicy(pol)
			}
		}()
		var wg sync.WaitGroup
		for s := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(s), 64))
				id := alice
				if s%2 == 1 {
					id = bob
				}
				var emu sync.Mutex
				erng := rand.New(rand.NewPCG(uint64(s), 65))
				elicit := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					emu.Lock()
					what, pause := erng.IntN(3), time.Duration(erng.IntN(10))*time.Millisecond
					emu.Unlock()
					switch what {
					case 0:
						// Answers late, if the call was not cancelled meanwhile.
						select {
						case <-ctx.Done():
							return nil, ctx.Err()
						case <-time.After(40 * time.Millisecond):
							return &mcp.ElicitResult{Action: "cancel"}, nil
						}
					case 1:
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
					time.Sleep(pause)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
				}
				var cs *mcp.ClientSession
				for range 25 {
					if cs == nil {
						cs = h.connect(id, clientOpts{elicit: elicit, noMRTR: s >= 4})
					}
					ctx, cancel := context.WithCancel(context.Background())
					switch rng.IntN(4) {
					case 0:
						time.AfterFunc(time.Duration(rng.IntN(30))*time.Millisecond, cancel)
					case 1:
						c := cs
						time.AfterFunc(time.Duration(rng.IntN(30))*time.Millisecond, func() { c.Close() })
						cs = nil // a new session for the next call
					}
					p := &mcp.CallToolParams{Name: "hold", Arguments: map[string]any{}}
					switch rng.IntN(4) {
					case 0:
						p = &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "x"}}
					case 1:
						p = &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "n"},
							Meta: mcp.Meta{dryrun.MetaKey: rng.IntN(2) == 0}}
					}
					if c := cs; c != nil {
						_, _ = c.CallTool(ctx, p)
					} else {
						// The session is closing: call on a fresh one that
						// is closed mid-call.
						c := h.connect(id, clientOpts{elicit: elicit, noMRTR: s >= 4})
						time.AfterFunc(time.Duration(rng.IntN(30))*time.Millisecond, func() { c.Close() })
						_, _ = c.CallTool(ctx, p)
					}
					cancel()
					time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		close(stop)
		pwg.Wait()
		time.Sleep(time.Second) // every handler and session ends
		synctest.Wait()
		if maxRunning > gmax {
			t.Errorf("%d calls of hold ran at once; global cap %d", maxRunning, gmax)
		}
		if running != 0 {
			t.Fatalf("%d handlers still running", running)
		}
		if pol, err = policy.New(cfg(1)); err != nil {
			t.Fatal(err)
		}
		h.g.SetPolicy(pol)
		// A notification to a session closed mid-call may still be
		// waited for (at most 10 s, the guard's notifyWait): past it.
		time.Sleep(11 * time.Second)
		// Every slot is back: gmax sessions hold a call each.
		release := make(chan struct{})
		var held sync.WaitGroup
		for _, id := range []*mcpguard.Identity{alice, bob} {
			cs := h.connect(id, clientOpts{})
			held.Add(1)
			go func() {
				defer held.Done()
				ctx, cancel := context.WithCancel(context.Background())
				go func() { <-release; cancel() }()
				_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "hold", Arguments: map[string]any{}})
			}()
		}
		synctest.Wait()
		mu.Lock()
		got := running
		mu.Unlock()
		if got != gmax {
			t.Errorf("after every call ended, %d of %d calls at the global cap run", got, gmax)
		}
		close(release)
		held.Wait()
		synctest.Wait() // the records of the held calls are written
		// What each user may still spend is the cap less what the records
		// keep charged.
		for _, id := range []*mcpguard.Identity{alice, bob} {
			charged := 0.0
			for _, e := range h.sink.all() {
				if e.Subject == id.Principal.Subject && e.Phase == audit.PhaseOutcome {
					charged += e.Cost
				}
			}
			cs := h.connect(id, clientOpts{})
			left := 0
			for left <= spend {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "n"}})
				if err != nil || res.IsError {
					if code := errorCode(t, res); code != string(mcpguard.CodeSpendLimitExceeded) {
						t.Errorf("%s: refused %q, %v; want a spend refusal", id.Principal.Subject, code, err)
					}
					break
				}
				left++
			}
			if want := spend - int(charged+0.5); left != want {
				t.Errorf("%s: %d units left; the records charge %v of %d, so want %d", id.Principal.Subject, left, charged, spend, want)
			}
		}
	})
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r64cUserKey struct{}

// r64cFix is a Guard with global and per-user in-flight caps and a per-user
// spend cap, whose handlers count how many run at once.
type r64cFix struct {
	g        *mcpguard.Guard
	read     mcp.ToolHandler
	write    mcp.ToolHandler
	mu       sync.Mutex
	inflight map[string]int // per user, handlers running
	global   int
	maxG     int
	maxU     int
	spent    map[string]float64 // per user, cost of handlers that ran (not dry runs)
}

const (
	r64cGlobal = 3
	r64cUser   = 2
	r64cSpend  = 10
)

func newR64c(t *testing.T, timeout time.Duration) *r64cFix {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: r64cGlobal},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: r64cUser},
		{Kind: limiter.Spend, Scope: limiter.User, Max: r64cSpend, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "work", Class: policy.Read, Cost: 1},
			{Name: "pay", Class: policy.Write, Cost: 2},
		},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(ctx context.Context, _ mcp.Request) (*mcpguard.Identity, error) {
		u, _ := ctx.Value(r64cUserKey{}).(string)
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: u, Roles: []string{"user"}}}, nil
	})
	f := &r64cFix{inflight: map[string]int{}, spent: map[string]float64{}}
	f.g, err = mcpguard.New(pol, authn, &mcpguard.Options{Limiter: lim, Logger: quiet, Audit: &memSink{}, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	h := func(cost float64) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u := mcpguard.PrincipalFromContext(ctx).Subject
			f.mu.Lock()
			f.inflight[u]++
			f.global++
			f.maxG = max(f.maxG, f.global)
			f.maxU = max(f.maxU, f.inflight[u])
			if !dryrun.FromContext(ctx) {
				f.spent[u] += cost
			}
			f.mu.Unlock()
			defer func() {
				f.mu.Lock()
				f.inflight[u]--
				f.global--
				f.mu.Unlock()
			}()
			var in struct {
				M string `json:"m"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			switch in.M {
			case "panic":
				panic("r64c boom")
			case "err":
				return nil, errors.New("r64c failed")
			case "block":
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(30 * time.Millisecond):
				}
			case "slow": // ignores its context
				time.Sleep(20 * time.Millisecond)
			}
			return textResult("ok"), nil
		}
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	obj := map[string]any{"type": "object"}
	if f.read, err = f.g.Wrap(&mcp.Tool{Name: "work", InputSchema: obj, Annotations: ro}, h(1)); err != nil {
		t.Fatal(err)
	}
	if f.write, err = f.g.Wrap(&mcp.Tool{Name: "pay", InputSchema: obj}, h(2)); err != nil {
		t.Fatal(err)
	}
	return f
}

// call makes one call as user u, with a handler mode m, a dry run or not.
func (f *r64cFix) call(ctx context.Context, u, tool, m string, dry bool) (*mcp.CallToolResult, error) {
	r := req(tool, fmt.Sprintf(`{"m":%q}`, m))
	if dry {
		r.Params.Meta = mcp.Meta{dryrun.MetaKey: true}
	}
	h := f.read
	if tool == "pay" {
		h = f.write
	}
	return h(context.WithValue(ctx, r64cUserKey{}, u), r)
}

// TestReview64cCapsUnderChaos races calls of four users, reads and writes,
// dry runs, handler panics, errors, timeouts, and cancellation at random
// moments (before the call, while it waits, mid-handler), and checks: the
// in-flight caps are never passed, no user's handlers spent more than the
// spend cap, every slot comes back (a full set of calls at the caps gets
// in afterwards), each user's remaining budget is exactly the cap less what
// its handlers spent (every refused call's reservation came back once), and
// a spend refusal's RetryAfter is true.
func TestReview64cCapsUnderChaos(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newR64c(t, 15*time.Millisecond)
		users := []string{"u0", "u1", "u2", "u3"}
		modes := []string{"ok", "panic", "err", "block", "slow"}
		var wg sync.WaitGroup
		var calls atomic.Int32
		for i, u := range users {
			for j := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(i), uint64(j)))
					for range 20 {
						ctx, cancel := context.WithCancel(context.Background())
						switch rng.IntN(4) {
						case 0:
							cancel() // before admission
						case 1:
							d := time.Duration(rng.IntN(40)) * time.Millisecond
							time.AfterFunc(d, cancel)
						}
						tool := "work"
						if rng.IntN(3) == 0 {
							tool = "pay"
						}
						_, _ = f.call(ctx, u, tool, modes[rng.IntN(len(modes))], rng.IntN(3) == 0)
						calls.Add(1)
						cancel()
						time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
					}
				}()
			}
		}
		wg.Wait()
		if f.maxG > r64cGlobal || f.maxU > r64cUser {
			t.Errorf("in flight at most %d globally, %d per user; caps %d, %d", f.maxG, f.maxU, r64cGlobal, r64cUser)
		}
		if f.global != 0 {
			t.Fatalf("%d handlers still counted", f.global)
		}
		// Every slot came back: r64cGlobal calls block at once.
		release := make(chan struct{})
		var held sync.WaitGroup
		for i := range r64cGlobal {
			held.Add(1)
			go func() {
				defer held.Done()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() { <-release; cancel() }()
				_, _ = f.call(ctx, "h"+strconv.Itoa(i), "work", "block", false)
			}()
		}
		synctest.Wait()
		f.mu.Lock()
		got := f.global
		f.mu.Unlock()
		if got != r64cGlobal {
			t.Errorf("after all calls ended, %d of %d calls at the cap got in", got, r64cGlobal)
		}
		close(release)
		held.Wait()
		// What is left of each user's budget is the cap less what ran;
		// measured for every user before any waits (which refill).
		var retry []string
		for _, u := range users {
			f.mu.Lock()
			spent := f.spent[u]
			f.mu.Unlock()
			if spent > r64cSpend {
				t.Errorf("%s: handlers spent %v of a cap of %v", u, spent, r64cSpend)
				continue
			}
			left := 0
			for {
				res, err := f.call(context.Background(), u, "work", "ok", false)
				if err != nil || res.IsError {
					if code := codeOf(t, res, err); code != string(mcpguard.CodeSpendLimitExceeded) {
						t.Errorf("%s: refused %q; want a spend refusal", u, code)
					}
					break
				}
				left++
			}
			if want := r64cSpend - int(spent); left != want {
				t.Errorf("%s: %d calls of cost 1 left after the chaos, handlers having spent %v; want %d",
					u, left, spent, want)
			}
			retry = append(retry, u)
		}
		// A spend refusal's RetryAfter is true, for each user in turn.
		for _, u := range retry {
			// Earlier users' waits refilled some: spend it first.
			res, err := f.call(context.Background(), u, "work", "ok", false)
			for err == nil && !res.IsError {
				res, err = f.call(context.Background(), u, "work", "ok", false)
			}
			var de *mcpguard.DenialError
			if err != nil || !errors.As(res.GetError(), &de) || de.Code != mcpguard.CodeSpendLimitExceeded {
				t.Errorf("%s: %q; want a spend refusal", u, codeOf(t, res, err))
				continue
			}
			time.Sleep(de.RetryAfter)
			if res, err := f.call(context.Background(), u, "work", "ok", false); err != nil || res.IsError {
				t.Errorf("%s: retried after the %v the refusal said; refused %q", u, de.RetryAfter, codeOf(t, res, err))
			}
		}
		t.Logf("%d calls", calls.Load())
	})
}

package redisnonce_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/mcpguard/mcpguard/policy"
)

// scaleLimits are the caps the replicas of a scaleCluster share.
var scaleLimits = []limiter.Limit{
	{Kind: limiter.Rate, Scope: limiter.User, Tool: "read", Max: 5, Window: time.Hour},
	{Kind: limiter.Rate, Scope: limiter.User, Tool: "refund", Max: 8, Window: time.Hour},
	{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour},
	{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "slow", Max: 2},
	{Kind: limiter.Concurrency, Scope: limiter.Global, Tool: "slow", Max: 3},
}

// cutter dials Redis for one replica and can cut its connections (and
// refuse new ones) to play a replica whose link to Redis drops.
type cutter struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("link to redis cut")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

func (c *cutter) set(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for _, conn := range c.conns {
			conn.Close()
		}
		c.conns = nil
	}
}

// scaleReplica is one replica: its own Guard, server, Redis clients, limiter,
// signer and audit writer (and *sql.DB), as one process would have.
type scaleReplica struct {
	name  string
	g     *mcpguard.Guard
	srv   *mcp.Server
	sink  *audit.SQLSink
	db    *sql.DB
	link  *cutter
	calls atomic.Int64 // tools/call requests sent to it
}

type scaleCluster struct {
	redis    *testsvc.Redis
	pg       *testsvc.Postgres
	reps     []*scaleReplica
	subjects sync.Map // *mcp.ServerSession -> subject
	ran      sync.Map // tool -> *atomic.Int64: handler runs
	entered  chan string
	release  chan struct{}
}

func (c *scaleCluster) runs(tool string) *atomic.Int64 {
	v, _ := c.ran.LoadOrStore(tool, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// newScaleCluster starts Redis and PostgreSQL and n replicas built from the
// same Options, whose audit writers are made (and so migrate the schema)
// at the same time.
func newScaleCluster(t *testing.T, n int) *scaleCluster {
	t.Helper()
	c := &scaleCluster{
		redis:   testsvc.StartRedis(t),
		pg:      testsvc.StartPostgres(t),
		entered: make(chan string, 64),
		release: make(chan struct{}),
	}
	t.Cleanup(func() {
		select {
		case <-c.release:
		default:
			close(c.release)
		}
	})
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "refund", Class: policy.Write, Confirm: true},
			{Name: "charge", Class: policy.Write},
			{Name: "read", Class: policy.Read},
			{Name: "slow", Class: policy.Read},
		},
		WriteAllowlist: []string{"refund", "charge"},
	})
	if err != nil {
		t.Fatal(err)
	}
	amount := func(args map[string]any) (float64, error) {
		return args["amount"].(json.Number).Float64()
	}
	auth := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		if s, ok := c.subjects.Load(req.GetSession()); ok {
			return &mcpguard.Identity{Principal: &policy.Principal{Subject: s.(string)}}, nil
		}
		return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "who?")
	})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	sinks := make([]*audit.SQLSink, n)
	dbs := make([]*sql.DB, n)
	var wg sync.WaitGroup
	for i := range n {
		db, err := sql.Open("pgx", c.pg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(6)
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
		wg.Go(func() {
			s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
			if err != nil {
				t.Errorf("replica %d: NewSQL (migrating at the same time as the others): %v", i, err)
				return
			}
			sinks[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	secret := []byte("0123456789abcdef0123456789abcdef")
	for i := range n {
		r := &scaleReplica{name: string(rune('A' + i)), sink: sinks[i], db: dbs[i], link: &cutter{}}
		t.Cleanup(func() { r.sink.Close() })
		rdb := redis.NewClient(&redis.Options{Addr: c.redis.Addr, MaxRetries: -1, DialTimeout: time.Second,
			ContextTimeoutEnabled: true, Dialer: r.link.dial})
		t.Cleanup(func() { rdb.Close() })
		nonces := redisnonce.New(rdb, "scale:confirm:")
		signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: secret}}, &confirm.Options{Nonces: nonces})
		if err != nil {
			t.Fatal(err)
		}
		lim, err := limiter.New(scaleLimits, &limiter.Options{Store: redislimit.New(rdb, nil)})
		if err != nil {
			t.Fatal(err)
		}
		r.g, err = mcpguard.New(pol, auth, &mcpguard.Options{
			Audit:     r.sink,
			Limiter:   lim,
			Confirmer: signer,
			Logger:    quiet,
			Tools:     map[string]mcpguard.ToolOptions{"refund": {Cost: amount}, "charge": {Cost: amount}},
		})
		if err != nil {
			t.Fatal(err)
		}
		r.srv = mcp.NewServer(&mcp.Implementation{Name: "replica-" + r.name, Version: "1"}, nil)
		money := json.RawMessage(`{"type":"object","properties":{"order":{"type":"string","maxLength":32},"amount":{"type":"number","minimum":0}},"required":["order","amount"]}`)
		for _, tool := range []string{"refund", "charge"} {
			r.srv.AddTool(&mcp.Tool{Name: tool, InputSchema: money}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				c.runs(tool).Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
		}
		r.srv.AddTool(&mcp.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c.runs("read").Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
		r.srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object","properties":{"hold":{"type":"boolean"}}}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c.runs("slow").Add(1)
			if !strings.Contains(string(req.Params.Arguments), "true") {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick"}}}, nil
			}
			c.entered <- r.name
			defer func() { c.entered <- "left " + r.name }()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-c.release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil
			case <-time.After(10 * time.Second):
				// A test that failed before releasing it: its client's
				// Close waits for this handler, and the package for that.
				return nil, errors.New("held call never released")
			}
		})
		if err := r.g.Install(r.srv); err != nil {
			t.Fatal(err)
		}
		c.reps = append(c.reps, r)
	}
	return c
}

// scaleClient is one MCP client connected to one replica as subject.
type scaleClient struct {
	cs  *mcp.ClientSession
	rep *scaleReplica
}

func (c *scaleCluster) connect(t *testing.T, replica int, subject string) *scaleClient {
	t.Helper()
	r := c.reps[replica]
	ct, st := mcp.NewInMemoryTransports()
	ss, err := r.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.subjects.Store(ss, subject)
	cl := mcp.NewClient(&mcp.Implementation{Name: "client-" + subject, Version: "1"},
		&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}})
	cs, err := cl.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &scaleClient{cs: cs, rep: r}
}

// call sends one tools/call and returns the result and its refusal code
// ("" when allowed).
func (s *scaleClient) call(ctx context.Context, t *testing.T, p *mcp.CallToolParams) (*mcp.CallToolResult, string) {
	t.Helper()
	s.rep.calls.Add(1)
	res, err := s.cs.CallTool(ctx, p)
	if err != nil {
		return nil, "error: " + err.Error()
	}
	if !res.IsError {
		return res, ""
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &body) != nil || body.Error.Code == "" {
		return res, "tool error without a code"
	}
	return res, body.Error.Code
}

func refundParams(order string, amount float64) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{"order": order, "amount": amount}}
}

// ask sends the first round of a refund and returns its state.
func (s *scaleClient) ask(t *testing.T, order string, amount float64) string {
	t.Helper()
	res, code := s.call(context.Background(), t, refundParams(order, amount))
	if code != "" || res.RequestState == "" || res.InputRequests == nil {
		t.Fatalf("asking round on replica %s: code %q, state %q; want a confirmation request", s.rep.name, code, res.RequestState)
	}
	return res.RequestState
}

// answer sends the confirmed round of a refund with state and "accept".
func (s *scaleClient) answer(t *testing.T, order string, amount float64, state string) string {
	t.Helper()
	p := refundParams(order, amount)
	p.RequestState = state
	p.InputResponses = mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}
	_, code := s.call(context.Background(), t, p)
	return code
}

// TestReview24ScaleConfirmAcrossReplicas: one signed one-time confirmation
// between three replicas that share a signing key and a Redis nonce store.
func TestReview24ScaleConfirmAcrossReplicas(t *testing.T) {
	c := newScaleCluster(t, 3)
	ran := c.runs("refund")
	aliceA, aliceB, aliceC := c.connect(t, 0, "alice"), c.connect(t, 1, "alice"), c.connect(t, 2, "alice")
	malloryB := c.connect(t, 1, "mallory")

	t.Run("issued_on_A_redeemed_on_B_replayed_everywhere", func(t *testing.T) {
		ran.Store(0)
		state := aliceA.ask(t, "o-1", 5)
		if code := aliceB.answer(t, "o-1", 5, state); code != "" {
			t.Fatalf("confirmed round on replica B: %q; want success", code)
		}
		for _, cl := range []*scaleClient{aliceA, aliceB, aliceC} {
			if code := cl.answer(t, "o-1", 5, state); code != "CONFIRMATION_REQUIRED" {
				t.Errorf("replay on replica %s: %q; want CONFIRMATION_REQUIRED", cl.rep.name, code)
			}
		}
		if n := ran.Load(); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
	})

	t.Run("redeemed_on_all_replicas_at_once", func(t *testing.T) {
		ran.Store(0)
		state := aliceA.ask(t, "o-2", 5)
		var ok atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 12 {
			cl := []*scaleClient{aliceA, aliceB, aliceC}[i%3]
			wg.Go(func() {
				<-start
				switch code := cl.answer(t, "o-2", 5, state); code {
				case "":
					ok.Add(1)
				case "CONFIRMATION_REQUIRED":
				default:
					t.Errorf("replica %s: %q; want success or CONFIRMATION_REQUIRED", cl.rep.name, code)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 || ran.Load() != 1 {
			t.Errorf("12 copies of one confirmation on 3 replicas: %d succeeded, handler ran %d times; want 1 and 1", ok.Load(), ran.Load())
		}
	})

	t.Run("issued_for_alice_on_A_redeemed_by_mallory_on_B", func(t *testing.T) {
		ran.Store(0)
		state := aliceA.ask(t, "o-3", 5)
		if code := malloryB.answer(t, "o-3", 5, state); code != "CONFIRMATION_REQUIRED" {
			t.Errorf("mallory's round with alice's state on replica B: %q; want CONFIRMATION_REQUIRED", code)
		}
		if code := aliceC.answer(t, "o-3", 5, state); code != "" {
			t.Errorf("alice's own round on replica C after mallory's failed replay: %q; want success", code)
		}
		if n := ran.Load(); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
	})

	t.Run("other_arguments_on_B", func(t *testing.T) {
		ran.Store(0)
		state := aliceA.ask(t, "o-4", 5)
		if code := aliceB.answer(t, "o-4", 50, state); code != "CONFIRMATION_REQUIRED" {
			t.Errorf("a state for 5 redeemed for 50 on replica B: %q; want CONFIRMATION_REQUIRED", code)
		}
		if n := ran.Load(); n != 0 {
			t.Errorf("handler ran %d times, want 0", n)
		}
	})

	t.Run("asked_on_A_charged_once_on_B", func(t *testing.T) {
		// The round that asks counts the call; the confirmed round, on
		// another replica, spends its cost and counts no second call.
		erin := []*scaleClient{c.connect(t, 0, "erin"), c.connect(t, 1, "erin"), c.connect(t, 2, "erin")}
		cycle := func(i int, amount float64) string {
			order := fmt.Sprint("e-", i)
			res, code := erin[i%3].call(context.Background(), t, refundParams(order, amount))
			if code != "" {
				return "ask: " + code
			}
			if code := erin[(i+1)%3].answer(t, order, amount, res.RequestState); code != "" {
				return "confirm: " + code
			}
			return ""
		}
		for i := range 5 {
			if got := cycle(i, 19); got != "" {
				t.Fatalf("refund %d of 19: %s", i, got)
			}
		}
		if got := cycle(5, 6); got != "ask: SPEND_LIMIT_EXCEEDED" {
			t.Errorf("refund of 6 with 5 left of 100: %q; want the asking round refused, SPEND_LIMIT_EXCEEDED", got)
		}
		// The refused one counted no call: three more fit in 8.
		for i := 6; i < 9; i++ {
			if got := cycle(i, 1); got != "" {
				t.Errorf("refund %d of 1: %q; want success (8 calls per user)", i, got)
			}
		}
		if got := cycle(9, 0); got != "ask: RATE_LIMIT_EXCEEDED" {
			t.Errorf("ninth refund: %q; want RATE_LIMIT_EXCEEDED (8 calls per user, each counted once)", got)
		}
	})

	t.Run("dry_run_on_A_is_no_confirmation_on_B", func(t *testing.T) {
		ran.Store(0)
		p := refundParams("o-5", 5)
		p.Meta = mcp.Meta{dryrun.MetaKey: true}
		res, code := aliceA.call(context.Background(), t, p)
		if code != "" || ran.Load() != 0 {
			t.Fatalf("dry run on replica A: %q, handler ran %d times; want a simulated success", code, ran.Load())
		}
		if res.RequestState != "" {
			// Whatever the dry run sealed must not pass for a confirmation.
			if code := aliceB.answer(t, "o-5", 5, res.RequestState); code == "" || ran.Load() != 0 {
				t.Errorf("the dry run's state accepted as a confirmation on replica B: %q, handler ran %d", code, ran.Load())
			}
		}
		state := aliceB.ask(t, "o-5", 5)
		if code := aliceA.answer(t, "o-5", 5, state); code != "" || ran.Load() != 1 {
			t.Errorf("the real call confirmed after the dry run: %q, handler ran %d; want success once", code, ran.Load())
		}
	})
}

// TestReview24ScaleLimitsAcrossReplicas: rate, spend and in-flight caps
// hold for calls split over three replicas sharing one redislimit store.
func TestReview24ScaleLimitsAcrossReplicas(t *testing.T) {
	c := newScaleCluster(t, 3)
	clients := func(subject string) []*scaleClient {
		return []*scaleClient{c.connect(t, 0, subject), c.connect(t, 1, subject), c.connect(t, 2, subject)}
	}
	alice, bob, carol := clients("alice"), clients("bob"), clients("carol")
	burst := func(t *testing.T, cls []*scaleClient, n int, p func(i int) *mcp.CallToolParams) map[string]int {
		t.Helper()
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, code := cls[i%len(cls)].call(context.Background(), t, p(i))
				mu.Lock()
				got[code]++
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		return got
	}

	t.Run("rate", func(t *testing.T) {
		got := burst(t, alice, 15, func(int) *mcp.CallToolParams { return &mcp.CallToolParams{Name: "read", Arguments: map[string]any{}} })
		if got[""] != 5 || got["RATE_LIMIT_EXCEEDED"] != 10 {
			t.Errorf("15 reads at once over 3 replicas, 5 allowed per user: %v", got)
		}
	})

	t.Run("spend_and_dry_run", func(t *testing.T) {
		got := burst(t, bob, 10, func(i int) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"order": fmt.Sprint("c-", i), "amount": 15}}
		})
		if got[""] != 6 || got["SPEND_LIMIT_EXCEEDED"] != 4 {
			t.Fatalf("10 charges of 15 at once over 3 replicas, 100 per user: %v", got)
		}
		dry := func(cl *scaleClient, amount float64) string {
			p := &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"order": "d", "amount": amount}, Meta: mcp.Meta{dryrun.MetaKey: true}}
			_, code := cl.call(context.Background(), t, p)
			return code
		}
		before := c.runs("charge").Load()
		if code := dry(bob[0], 15); code != "SPEND_LIMIT_EXCEEDED" {
			t.Errorf("dry run of 15 on A with 10 left: %q; want SPEND_LIMIT_EXCEEDED", code)
		}
		if code := dry(bob[0], 10); code != "" {
			t.Errorf("dry run of 10 on A with 10 left: %q; want success", code)
		}
		_, code := bob[1].call(context.Background(), t, &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"order": "r", "amount": 10}})
		if code != "" {
			t.Errorf("real charge of 10 on B after the dry run on A: %q; want success", code)
		}
		if code := dry(bob[2], 1); code != "SPEND_LIMIT_EXCEEDED" {
			t.Errorf("dry run of 1 on C with nothing left: %q; want SPEND_LIMIT_EXCEEDED", code)
		}
		if n := c.runs("charge").Load() - before; n != 1 {
			t.Errorf("charge handler ran %d times for two dry runs and one real call; want 1", n)
		}
	})

	waitEntered := func(t *testing.T, n int) {
		t.Helper()
		for n > 0 {
			select {
			case s := <-c.entered:
				if !strings.HasPrefix(s, "left") {
					n--
				}
			case <-time.After(3 * time.Second):
				t.Fatal("held call did not start")
			}
		}
	}
	// The client writes into the params it sends: each call gets its own.
	hold := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"hold": true}}
	}
	quick := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"hold": false}}
	}
	// probe polls until cl's quick call is allowed.
	probe := func(t *testing.T, cl *scaleClient, what string) {
		t.Helper()
		deadline := time.Now().Add(4 * time.Second)
		for {
			_, code := cl.call(context.Background(), t, quick())
			if code == "" {
				return
			}
			if code != "CONCURRENCY_LIMIT_EXCEEDED" || time.Now().After(deadline) {
				t.Fatalf("%s: %q; want the slot given back", what, code)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	t.Run("in_flight_burst", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 12 {
			cl := c.connect(t, i%3, fmt.Sprint("dave-", i%6))
			wg.Go(func() {
				<-start
				_, code := cl.call(ctx, t, hold())
				if code != "CONCURRENCY_LIMIT_EXCEEDED" {
					code = "held"
				}
				mu.Lock()
				got[code]++
				mu.Unlock()
			})
		}
		close(start)
		waitEntered(t, 3)
		select {
		case s := <-c.entered:
			t.Errorf("a fourth call entered (%s) with 3 in flight globally", s)
		case <-time.After(200 * time.Millisecond):
		}
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			n := got["CONCURRENCY_LIMIT_EXCEEDED"]
			mu.Unlock()
			if n >= 9 || time.Now().After(deadline) {
				break
			}
		}
		cancel()
		wg.Wait()
		if got["held"] != 3 || got["CONCURRENCY_LIMIT_EXCEEDED"] != 9 {
			t.Errorf("12 held calls at once over 3 replicas, 3 in flight globally: %v", got)
		}
		for _, cl := range []*scaleClient{alice[0], bob[1], carol[2]} {
			probe(t, cl, "after the burst's calls were cancelled")
		}
		for len(c.entered) > 0 {
			<-c.entered
		}
	})

	t.Run("in_flight", func(t *testing.T) {
		ctxA, cancelA := context.WithCancel(context.Background())
		defer cancelA()
		var held sync.WaitGroup
		start := func(ctx context.Context, cl *scaleClient) {
			held.Go(func() { cl.call(ctx, t, hold()) })
		}
		start(ctxA, alice[0])
		start(context.Background(), alice[1])
		waitEntered(t, 2)
		if _, code := alice[2].call(context.Background(), t, quick()); code != "CONCURRENCY_LIMIT_EXCEEDED" {
			t.Errorf("alice's third call (on C) with two in flight on A and B: %q; want CONCURRENCY_LIMIT_EXCEEDED", code)
		}
		start(context.Background(), bob[2])
		waitEntered(t, 1)
		if _, code := carol[0].call(context.Background(), t, quick()); code != "CONCURRENCY_LIMIT_EXCEEDED" {
			t.Errorf("carol's call with three in flight globally: %q; want CONCURRENCY_LIMIT_EXCEEDED", code)
		}
		// Alice's client on A goes away: A's call ends, its place is given back.
		cancelA()
		probe(t, carol[1], "carol's call on B after alice's call on A was cancelled")
		// Alice's link from C to Redis drops while her call holds a place.
		start(context.Background(), alice[2])
		waitEntered(t, 1)
		c.reps[2].link.set(true)
		if _, code := alice[2].call(context.Background(), t, quick()); code != "RATE_LIMIT_EXCEEDED" {
			t.Errorf("a call on C with its Redis link cut: %q; want RATE_LIMIT_EXCEEDED (limiter unavailable, fail closed)", code)
		}
		state := carol[0].ask(t, "o-9", 1)
		if code := carol[2].answer(t, "o-9", 1, state); code == "" {
			t.Errorf("a confirmation redeemed on C with its Redis link cut: allowed; want a refusal")
		}
		close(c.release)
		held.Wait()
		c.reps[2].link.set(false)
		// The release that failed is sent again: every place comes back.
		for _, cl := range []*scaleClient{alice[0], alice[1], bob[0], carol[2]} {
			probe(t, cl, "after every held call ended")
		}
		if code := carol[1].answer(t, "o-9", 1, state); code != "" {
			t.Errorf("the confirmation refused on C during the cut, redeemed on B: %q; want success", code)
		}
	})
}

// TestReview24ScaleAuditAcrossReplicas: three replicas write one audit_log
// table on one PostgreSQL database. Replica C shuts down (waits for its
// calls, closes its writer) while A and B go on. Every call's outcome is
// recorded once, with a correlation id of its own, and every write's
// intent precedes its outcome under the same id.
func TestReview24ScaleAuditAcrossReplicas(t *testing.T) {
	c := newScaleCluster(t, 3)
	var wg sync.WaitGroup
	run := func(rep, n int) {
		for u := range 4 {
			sub := fmt.Sprintf("user-%d-%d", rep, u)
			cl := c.connect(t, rep, sub)
			wg.Go(func() {
				for i := range n {
					var p *mcp.CallToolParams
					switch i % 4 {
					case 0:
						p = &mcp.CallToolParams{Name: "read", Arguments: map[string]any{}}
					case 1:
						p = &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"order": fmt.Sprint(i), "amount": 3}}
					case 2:
						p = refundParams(fmt.Sprint(i), 1)
					default:
						p = &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}
					}
					cl.call(context.Background(), t, p)
				}
			})
		}
	}
	run(0, 60)
	run(1, 60)
	var cwg sync.WaitGroup
	c.reps[2].calls.Store(0)
	for u := range 4 {
		cl := c.connect(t, 2, fmt.Sprint("c-", u))
		cwg.Go(func() {
			for i := range 20 {
				cl.call(context.Background(), t, &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"order": fmt.Sprint(i), "amount": 1}})
			}
		})
	}
	cwg.Wait()
	if err := c.reps[2].g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.reps[2].sink.Close(); err != nil {
		t.Errorf("replica C's Close while A and B write: %v", err)
	}
	wg.Wait()
	var calls int64
	for _, r := range c.reps {
		if err := r.g.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r.name != "C" {
			if err := r.sink.Close(); err != nil {
				t.Errorf("replica %s's Close: %v", r.name, err)
			}
		}
		if st := r.sink.Stats(); st.Lost != 0 {
			t.Errorf("replica %s lost %d records", r.name, st.Lost)
		}
		calls += r.calls.Load()
	}
	db, err := sql.Open("pgx", c.pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT correlation_id, phase, id FROM audit_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	outcomes := map[string]int{}
	intents := map[string]bool{}
	var nOut int64
	for rows.Next() {
		var corr, phase string
		var id int64
		if err := rows.Scan(&corr, &phase, &id); err != nil {
			t.Fatal(err)
		}
		switch phase {
		case "intent":
			if intents[corr] || outcomes[corr] > 0 {
				t.Errorf("intent row %d: correlation id %s seen before", id, corr)
			}
			intents[corr] = true
		case "outcome":
			outcomes[corr]++
			nOut++
		default:
			t.Errorf("row %d: phase %q", id, phase)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if nOut != calls || int64(len(outcomes)) != calls {
		t.Errorf("%d calls over 3 replicas: %d outcome rows, %d distinct correlation ids; want %d of each", calls, nOut, len(outcomes), calls)
	}
	for corr := range intents {
		if outcomes[corr] != 1 {
			t.Errorf("intent %s has %d outcomes, want 1", corr, outcomes[corr])
		}
	}
	if len(intents) == 0 {
		t.Error("no intent rows: the writes were not recorded ahead")
	}
}

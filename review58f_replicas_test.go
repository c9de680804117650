package mcpguard_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
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
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rfTokens is the token table every replica verifies bearer tokens with.
const rfTokens = `{"tok-ann":{"sub":"ann","role":"support"},"tok-bob":{"sub":"bob","role":"support"}}`

// rfPolicyConfig is the replicas' policy; revoked gives refund a role no
// caller has (the way SetPolicy's doc says to revoke a tool).
func rfPolicyConfig(revoked bool) policy.Config {
	refundRoles := []string{"support"}
	if revoked {
		refundRoles = []string{"nobody"}
	}
	return policy.Config{
		Tools: []policy.ToolRule{
			{Name: "balance", Class: policy.Read, Roles: []string{"support"}},
			{Name: "refund", Class: policy.Write, Confirm: true, Cost: 10, Roles: refundRoles},
			{Name: "wizard", Class: policy.Read, Roles: []string{"support"}},
			{Name: "book", Class: policy.Write, Cost: 1, Roles: []string{"support"}},
			{Name: "slow", Class: policy.Read, Roles: []string{"support"}},
		},
		WriteAllowlist: []string{"refund", "book"},
	}
}

// rfShared is what the replicas share: Redis, PostgreSQL and counters of
// what the tools did.
type rfShared struct {
	redisAddr string
	pgDSN     string
	refunds   atomic.Int64
	books     atomic.Int64
	wizards   atomic.Int64
	slowIn    chan struct{}
	slowOut   chan struct{}
}

// rfReplica is one replica: its server, guard, sink and URL.
type rfReplica struct {
	srv  *mcp.Server
	g    *mcpguard.Guard
	sink *audit.SQLSink
	url  string
}

var rfObj = json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"additionalProperties":false}`)

func rfStartReplica(t *testing.T, sh *rfShared) *rfReplica {
	t.Helper()
	ctx := context.Background()
	// Each replica has its own clients, as a process of its own would.
	rdb := redis.NewClient(&redis.Options{Addr: sh.redisAddr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	store := redislimit.New(rdb, nil)
	if err := store.CheckServer(ctx); err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "balance", Max: 3, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "refund", Max: 20, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "slow", Max: 1},
	}, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	nonces := redisnonce.New(rdb, "rf:confirm:")
	if err := nonces.CheckServer(ctx); err != nil {
		t.Fatal(err)
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, &confirm.Options{Nonces: nonces})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", sh.pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sink, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := token.Parse([]byte(rfTokens))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(rfPolicyConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "replica", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	srv.AddTool(&mcp.Tool{Name: "balance", InputSchema: rfObj, Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("balance of " + mcpguard.PrincipalFromContext(ctx).Subject), nil
	})
	srv.AddTool(&mcp.Tool{Name: "refund", InputSchema: rfObj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sh.refunds.Add(1)
		return textResult("refunded"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "book", InputSchema: rfObj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sh.books.Add(1)
		return textResult("booked"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "wizard", InputSchema: rfObj, Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["ticket"].(*mcp.ElicitResult); ok && r.Action == "accept" && req.Params.RequestState == "wizard-step-2" {
			sh.wizards.Add(1)
			return textResult("wizard done"), nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"ticket": &mcp.ElicitParams{Mode: "form", Message: "ticket?", RequestedSchema: map[string]any{"type": "object"}}},
			RequestState:  "wizard-step-2",
		}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: rfObj, Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sh.slowIn <- struct{}{}
		<-sh.slowOut
		return textResult("slow done"), nil
	})
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{Audit: sink, Limiter: lim, Confirmer: signer, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(func() {
		hs.Close()
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g.Wait(wctx)
		sink.Close()
	})
	return &rfReplica{srv: srv, g: g, sink: sink, url: hs.URL}
}

// rfBalancer is a load balancer without stickiness in front of the
// replicas: each HTTP request goes to the replica route picks.
type rfBalancer struct {
	urls  []string
	token string
	route func() int
	mu    sync.Mutex
	hits  []int
}

func (b *rfBalancer) RoundTrip(r *http.Request) (*http.Response, error) {
	i := b.route()
	u, _ := url.Parse(b.urls[i])
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	r.Header.Set("Authorization", "Bearer "+b.token)
	b.mu.Lock()
	b.hits[i]++
	b.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// rfClient connects a go-sdk client, its multi round-trip left to the test.
func rfClient(t *testing.T, reps []*rfReplica, tok string, route func() int) (*mcp.ClientSession, *rfBalancer) {
	t.Helper()
	b := &rfBalancer{token: tok, route: route, hits: make([]int, len(reps))}
	for _, r := range reps {
		b.urls = append(b.urls, r.url)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "rf-client", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: elicitCaps()})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: reps[0].url, HTTPClient: &http.Client{Transport: b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, b
}

func rfSetup(t *testing.T) (*rfShared, []*rfReplica) {
	t.Helper()
	r := testsvc.StartRedis(t)
	pg := testsvc.StartPostgres(t)
	sh := &rfShared{redisAddr: r.Addr, pgDSN: pg.DSN, slowIn: make(chan struct{}), slowOut: make(chan struct{})}
	return sh, []*rfReplica{rfStartReplica(t, sh), rfStartReplica(t, sh)}
}

func rfCall(cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), p)
}

func rfCode(res *mcp.CallToolResult, err error) string {
	if d, ok := mcpguard.DenialOf(res, err); ok {
		return string(d.Code)
	}
	if err != nil {
		return "error:" + err.Error()
	}
	if res.IsError {
		return "isError"
	}
	return ""
}

// TestReview58fReplicasShareState: two replicas of one guarded server, each
// its own mcp.Server and Guard, served stateless behind a balancer without
// stickiness, sharing a Redis limiter, a signer of the same keys with a
// Redis nonce store, and one PostgreSQL audit table. Seen from real go-sdk
// clients: the caps hold over both; a confirmation asked on A is accepted
// once on B and never again on either; a handler's sealed state from A
// opens once on B; a dry run on A, then the real call on B; both replicas'
// records land in the one table, per subject; SetPolicy on A revokes a tool
// there only (each Guard keeps its own policy, as SetPolicy's doc says of a
// Guard per server).
func TestReview58fReplicasShareState(t *testing.T) {
	sh, reps := rfSetup(t)
	var pick atomic.Int64
	on := func(i int) { pick.Store(int64(i)) }
	cs, _ := rfClient(t, reps, "tok-ann", func() int { return int(pick.Load()) })
	want := func(what string, res *mcp.CallToolResult, err error, code string) {
		t.Helper()
		if got := rfCode(res, err); got != code {
			t.Errorf("%s: %q, want %q", what, got, code)
		}
	}
	call := func(i int, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
		on(i)
		return rfCall(cs, p)
	}
	noArgs := map[string]any{}

	// The rate: 3 balance calls per user and hour, over both replicas.
	for i := range 3 {
		res, err := call(i%2, &mcp.CallToolParams{Name: "balance", Arguments: noArgs})
		want("balance within the rate", res, err, "")
	}
	res, err := call(1, &mcp.CallToolParams{Name: "balance", Arguments: noArgs})
	want("4th balance, on B", res, err, "RATE_LIMIT_EXCEEDED")

	// In flight: one slow call per user, over both replicas.
	csA, _ := rfClient(t, reps, "tok-ann", func() int { return 0 })
	done := make(chan string)
	go func() {
		res, err := rfCall(csA, &mcp.CallToolParams{Name: "slow", Arguments: noArgs})
		done <- rfCode(res, err)
	}()
	<-sh.slowIn
	res, err = call(1, &mcp.CallToolParams{Name: "slow", Arguments: noArgs})
	want("slow on B while one runs on A", res, err, "CONCURRENCY_LIMIT_EXCEEDED")
	close(sh.slowOut)
	if got := <-done; got != "" {
		t.Errorf("slow on A: %q", got)
	}

	// A confirmation asked on A, accepted on B, replays refused on both.
	args := map[string]any{"amount": 5}
	ask, err := call(0, &mcp.CallToolParams{Name: "refund", Arguments: args})
	if err != nil || ask.RequestState == "" {
		t.Fatalf("refund on A: %v %s; want a confirmation request", err, mustJSON(ask))
	}
	answer := &mcp.CallToolParams{Name: "refund", Arguments: args, RequestState: ask.RequestState,
		InputResponses: mcp.InputResponseMap{"mcpguard.confirm": &mcp.ElicitResult{Action: "accept"}}}
	res, err = call(1, answer)
	want("accepted on B", res, err, "")
	for i := range 2 {
		res, err = call(i, answer)
		want("replayed", res, err, "CONFIRMATION_REQUIRED")
	}
	if n := sh.refunds.Load(); n != 1 {
		t.Errorf("refund ran %d times, want 1", n)
	}
	// The spend: 20 per user, a refund costs 10; the third is refused
	// before anyone is asked.
	ask, _ = call(1, &mcp.CallToolParams{Name: "refund", Arguments: args})
	answer.RequestState = ask.RequestState
	res, err = call(0, answer)
	want("second refund, asked on B, accepted on A", res, err, "")
	res, err = call(0, &mcp.CallToolParams{Name: "refund", Arguments: args})
	want("third refund", res, err, "SPEND_LIMIT_EXCEEDED")

	// A handler's sealed state from A opens once on B.
	w1, err := call(0, &mcp.CallToolParams{Name: "wizard", Arguments: noArgs})
	if err != nil || w1.RequestState == "" {
		t.Fatalf("wizard on A: %v %s", err, mustJSON(w1))
	}
	next := &mcp.CallToolParams{Name: "wizard", Arguments: noArgs, RequestState: w1.RequestState,
		InputResponses: mcp.InputResponseMap{"ticket": &mcp.ElicitResult{Action: "accept"}}}
	res, err = call(1, next)
	want("wizard's next round on B", res, err, "")
	res, err = call(0, next)
	want("wizard's next round again on A", res, err, "INVALID_ARGUMENTS")
	if n := sh.wizards.Load(); n != 1 {
		t.Errorf("wizard finished %d times, want 1", n)
	}

	// A dry run on A, then the real call on B.
	res, err = call(0, &mcp.CallToolParams{Name: "book", Arguments: map[string]any{"amount": 1}, Meta: mcp.Meta{dryrun.MetaKey: true}})
	want("dry run on A", res, err, "")
	if n := sh.books.Load(); n != 0 {
		t.Errorf("the dry run booked (%d)", n)
	}
	res, err = call(1, &mcp.CallToolParams{Name: "book", Arguments: map[string]any{"amount": 1}})
	want("book on B", res, err, "")

	// Both replicas' records, in the one table, per subject.
	for _, r := range reps {
		if err := r.sink.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := reps[1].sink.Query(context.Background(), audit.Filter{Subject: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range evs {
		if e.Subject != "ann" || e.SessionID != "" || e.CorrelationID == "" {
			t.Errorf("record %+v: want subject ann, no session (stateless), a correlation id", e)
		}
		seen[e.Tool+"/"+string(e.Phase)+"/"+e.Code]++
	}
	for k, n := range map[string]int{"balance/outcome/": 3, "balance/outcome/RATE_LIMIT_EXCEEDED": 1, "refund/intent/": 2, "refund/outcome/": 2,
		"wizard/outcome/INVALID_ARGUMENTS": 1, "book/outcome/": 2, "slow/outcome/CONCURRENCY_LIMIT_EXCEEDED": 1} {
		if seen[k] != n {
			t.Errorf("%d records %s, want %d (all: %v)", seen[k], k, n, seen)
		}
	}

	// SetPolicy on A revokes refund there; B, another Guard, keeps its
	// policy until it is told too.
	rev, err := policy.New(rfPolicyConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := reps[0].g.SetPolicy(rev); err != nil {
		t.Fatal(err)
	}
	csBob, _ := rfClient(t, reps, "tok-bob", func() int { return int(pick.Load()) })
	on(1)
	ask, err = rfCall(csBob, &mcp.CallToolParams{Name: "refund", Arguments: args})
	if err != nil || ask.RequestState == "" {
		t.Fatalf("refund on B after A's revocation: %v %s; want it still asked there", err, mustJSON(ask))
	}
	answer.RequestState = ask.RequestState
	on(0)
	if _, err := rfCall(csBob, answer); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("answer on revoked A: %v; want the unknown tool error", err)
	}
}

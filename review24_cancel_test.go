package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r24Fix is a guarded server whose tools block until the test lets them
// go, with a limiter of one call in flight per user and a spend cap that
// holds one write.
type r24Fix struct {
	t       *testing.T
	srv     *mcp.Server
	g       *mcpguard.Guard
	sink    *memSink
	lim     *limiter.Limiter
	store   *r24Store
	started chan string   // a handler started (its tool's name)
	release chan struct{} // lets a blocked handler go on
	ended   chan string   // a handler returned: "tool: ctx error"
}

// r24Store is the memory store, which can be made to wait for the
// caller's context before it decides (a store too slow to answer).
type r24Store struct {
	*limiter.MemoryStore
	mu    sync.Mutex
	stall bool
	inAsk chan struct{}
}

func (s *r24Store) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	s.mu.Lock()
	stall := s.stall && !b.Release && !b.Refund
	s.mu.Unlock()
	if stall {
		s.inAsk <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	return s.MemoryStore.Apply(ctx, now, b)
}

func newR24(t *testing.T, opts *mcpguard.Options) *r24Fix {
	t.Helper()
	f := &r24Fix{t: t, sink: &memSink{}, started: make(chan string, 8), release: make(chan struct{}), ended: make(chan string, 8)}
	f.store = &r24Store{MemoryStore: limiter.NewMemoryStore(), inAsk: make(chan struct{}, 8)}
	var err error
	f.lim, err = limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 6, Window: time.Hour},
	}, &limiter.Options{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "r24", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	tell := func(ctx context.Context, req *mcp.CallToolRequest, what string) {
		//lint:ignore SA1019 a log message from a handler, deprecated or not
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: what})
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: what})
		}
	}
	block := func(name string, honour bool) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tell(ctx, req, name+" started")
			f.started <- name
			if honour {
				select {
				case <-ctx.Done():
				case <-f.release:
				}
			} else {
				<-f.release
			}
			f.ended <- fmt.Sprintf("%s: %v", name, ctx.Err())
			if honour && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return textResult(name + " done"), nil
		}
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	f.srv.AddTool(&mcp.Tool{Name: "slow_read", InputSchema: obj, Annotations: ro}, block("slow_read", true))
	f.srv.AddTool(&mcp.Tool{Name: "slow_write", InputSchema: obj}, block("slow_write", false))
	f.srv.AddTool(&mcp.Tool{Name: "confirm_write", InputSchema: obj}, block("confirm_write", false))
	f.srv.AddTool(&mcp.Tool{Name: "admin_read", InputSchema: obj, Annotations: ro}, block("admin_read", true))
	f.srv.AddTool(&mcp.Tool{Name: "quick", InputSchema: obj, Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tell(ctx, req, "quick")
		return textResult("ok"), nil
	})
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "slow_read", Class: policy.Read, Cost: 1},
			{Name: "slow_write", Class: policy.Write, Cost: 5},
			{Name: "confirm_write", Class: policy.Write, Cost: 5, Confirm: true},
			{Name: "admin_read", Class: policy.Read},
			{Name: "quick", Class: policy.Read},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"slow_write", "confirm_write"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var o mcpguard.Options
	if opts != nil {
		o = *opts
	}
	if o.Audit == nil {
		o.Audit = f.sink
	}
	o.Limiter, o.Logger, o.Confirmer = f.lim, quiet, testSigner(t, nil)
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return bob, nil })
	f.g, err = mcpguard.New(pol, authn, &o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.g.Install(f.srv); err != nil {
		t.Fatal(err)
	}
	return f
}

// r24Client records what the server told the client besides answers.
type r24Client struct {
	mu    sync.Mutex
	notes []string
	asked chan struct{} // an elicitation reached the client, which waits for its context
	gone  chan struct{} // closed when the test ends: an elicitation still waiting gives up
}

func (c *r24Client) add(s string) {
	c.mu.Lock()
	c.notes = append(c.notes, s)
	c.mu.Unlock()
}

func (c *r24Client) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.notes...)
}

func (c *r24Client) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.add(fmt.Sprintf("progress %v: %s", r.Params.ProgressToken, r.Params.Message))
		},
		//lint:ignore SA1019 log messages from a handler, deprecated or not
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.add(fmt.Sprintf("log: %v", r.Params.Data))
		},
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.asked <- struct{}{}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-c.gone:
				return nil, errors.New("the test ended")
			}
		},
	}
}

// r24Transports are the ways a client reaches the server.
var r24Transports = []string{"memory", "memory_2025-11-25", "http", "http_stateless"}

// connect opens a client session of the kind named, and a way to drop
// its transport (closing the session: the client going away).
func (f *r24Fix) connect(kind string, rc *r24Client) *mcp.ClientSession {
	f.t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "r24-client", Version: "1"}, rc.options())
	var ct mcp.Transport
	var copts *mcp.ClientSessionOptions
	switch kind {
	case "memory", "memory_2025-11-25":
		var st mcp.Transport
		ct, st = mcp.NewInMemoryTransports()
		ss, err := f.srv.Connect(ctx, st, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		f.t.Cleanup(func() { ss.Close() })
		if kind != "memory" {
			copts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
		}
	case "http", "http_stateless":
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, &mcp.StreamableHTTPOptions{Stateless: kind == "http_stateless", PropagateRequestCancellation: true})
		// The session is bound to bob, its user: the guard asks an older
		// client to confirm only on such a session (review25e).
		bobToken := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: "bob"}, nil
		}
		hs := httptest.NewServer(auth.RequireBearerToken(bobToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h))
		f.t.Cleanup(hs.Close)
		ct = &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearerRT{"bob-token"}}}
	}
	cs, err := c.Connect(ctx, ct, copts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cs.Close() })
	if ir := cs.InitializeResult(); ir != nil && ir.ProtocolVersion < "2026-07-28" {
		//lint:ignore SA1019 log messages from a handler, deprecated or not
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			f.t.Fatal(err)
		}
	}
	return cs
}

// wait waits for the guard's calls to end.
func (f *r24Fix) wait() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.g.Wait(ctx); err != nil {
		f.t.Fatalf("Guard.Wait: %v", err)
	}
}

// records returns the audit records of tool.
func (f *r24Fix) records(tool string) []audit.Event {
	var out []audit.Event
	for _, e := range f.sink.all() {
		if e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}

func r24Describe(evs []audit.Event) string {
	s := ""
	for _, e := range evs {
		s += fmt.Sprintf("[%s allowed=%v code=%q cost=%v detail=%q] ", e.Phase, e.Allowed, e.Code, e.Cost, e.Detail)
	}
	return s
}

// r24Call starts a call of name (with progress token tok, if not "") that
// the test cancels, and returns its cancel and the client's error.
func r24Call(cs *mcp.ClientSession, name, tok string) (context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
		if tok != "" {
			p.SetProgressToken(tok)
		}
		res, err := cs.CallTool(ctx, p)
		if err == nil {
			err = fmt.Errorf("answered %s", mustJSON(res))
		}
		done <- err
	}()
	return cancel, done
}

// callCode calls name and returns its answer's code ("" for a success).
func r24Code(t *testing.T, cs *mcp.ClientSession, name string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return errorCode(t, res)
}

// checkGone checks that the client's call ended with its own cancellation.
func r24ClientCancelled(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("client's cancelled call: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("client's cancelled call did not return")
	}
}

func (f *r24Fix) ended1() string {
	f.t.Helper()
	select {
	case e := <-f.ended:
		return e
	case <-time.After(5 * time.Second):
		f.t.Fatal("handler did not return")
	}
	return ""
}

// TestReview24CancelledRead: a client that cancels a read while its
// handler runs (notifications/cancelled, or its HTTP request ending) gets
// no answer; the handler sees the cancellation; the call leaves one
// outcome record, refused, which says the client went away (not that the
// tool failed), with the charge the call keeps (its handler ran); its
// in-flight slot is given back.
func TestReview24CancelledRead(t *testing.T) {
	for _, kind := range r24Transports {
		t.Run(kind, func(t *testing.T) {
			f := newR24(t, nil)
			cs := f.connect(kind, &r24Client{})
			cancel, done := r24Call(cs, "slow_read", "")
			<-f.started
			cancel()
			r24ClientCancelled(t, done)
			if got, want := f.ended1(), "slow_read: context canceled"; got != want {
				t.Errorf("handler ended %q, want %q", got, want)
			}
			f.wait()
			evs := f.records("slow_read")
			if len(evs) != 1 || evs[0].Phase != audit.PhaseOutcome || evs[0].Allowed || evs[0].Cost != 1 ||
				!strings.Contains(evs[0].Detail, "client went away") {
				t.Errorf("records %s; want one outcome, refused, cost 1, detail saying the client went away", r24Describe(evs))
			}
			if code := r24Code(t, cs, "quick"); code != "" {
				t.Errorf("a call after the cancelled one: %s; want its slot given back", code)
			}
		})
	}
}

// TestReview24CancelledWrite: a write whose client goes away while its
// handler runs is not cancelled: it runs to completion, holding its
// in-flight slot until then, and is recorded (intent, then outcome
// allowed) and charged once.
func TestReview24CancelledWrite(t *testing.T) {
	for _, kind := range r24Transports {
		t.Run(kind, func(t *testing.T) {
			f := newR24(t, nil)
			cs := f.connect(kind, &r24Client{})
			cancel, done := r24Call(cs, "slow_write", "")
			<-f.started
			cancel()
			r24ClientCancelled(t, done)
			if code := r24Code(t, cs, "quick"); code != "CONCURRENCY_LIMIT_EXCEEDED" {
				t.Errorf("a call while the write runs: %q; want CONCURRENCY_LIMIT_EXCEEDED", code)
			}
			close(f.release)
			if got, want := f.ended1(), "slow_write: <nil>"; got != want {
				t.Errorf("handler ended %q, want %q", got, want)
			}
			f.wait()
			evs := f.records("slow_write")
			if len(evs) != 2 || evs[0].Phase != audit.PhaseIntent || !evs[1].Allowed || evs[1].Cost != 5 {
				t.Errorf("records %s; want an intent and an allowed outcome of cost 5", r24Describe(evs))
			}
			if code := r24Code(t, cs, "quick"); code != "" {
				t.Errorf("a call after the write: %q; want its slot given back", code)
			}
			if code := r24Code(t, cs, "slow_write"); code != "SPEND_LIMIT_EXCEEDED" {
				t.Errorf("a second write: %q; want SPEND_LIMIT_EXCEEDED (the first was charged)", code)
			}
		})
	}
}

// TestReview24CancelledWhileLimiterDecides: a client that goes away while
// the limiter's store decides is refused, recorded as the client's
// leaving, charged nothing and holds no slot; its handler never runs and
// its write gets no intent.
func TestReview24CancelledWhileLimiterDecides(t *testing.T) {
	for _, kind := range r24Transports {
		t.Run(kind, func(t *testing.T) {
			f := newR24(t, nil)
			cs := f.connect(kind, &r24Client{})
			f.store.mu.Lock()
			f.store.stall = true
			f.store.mu.Unlock()
			cancel, done := r24Call(cs, "slow_write", "")
			<-f.store.inAsk
			f.store.mu.Lock()
			f.store.stall = false
			f.store.mu.Unlock()
			cancel()
			r24ClientCancelled(t, done)
			f.wait()
			evs := f.records("slow_write")
			if len(evs) != 1 || evs[0].Allowed || evs[0].Cost != 0 || !strings.Contains(evs[0].Detail, "client went away") {
				t.Errorf("records %s; want one refused outcome of cost 0 saying the client went away", r24Describe(evs))
			}
			select {
			case s := <-f.started:
				t.Errorf("handler %s ran", s)
			default:
			}
			close(f.release)
			if code := r24Code(t, cs, "slow_write"); code != "" {
				t.Errorf("the write again: %q; want it admitted (nothing charged, no slot held)", code)
			}
		})
	}
}

// TestReview24CancelledWhileConfirmationAsked: an older client (asked to
// confirm by an elicitation inside the call) that cancels the call while
// its human has not answered is refused CONFIRMATION_REQUIRED, once, and
// charged nothing; the handler never runs.
func TestReview24CancelledWhileConfirmationAsked(t *testing.T) {
	for _, kind := range []string{"memory_2025-11-25", "http"} {
		t.Run(kind, func(t *testing.T) {
			f := newR24(t, nil)
			rc := &r24Client{asked: make(chan struct{}, 1), gone: make(chan struct{})}
			cs := f.connect(kind, rc)
			t.Cleanup(func() { close(rc.gone) }) // before the session closes
			cancel, done := r24Call(cs, "confirm_write", "")
			select {
			case <-rc.asked:
			case <-time.After(5 * time.Second):
				t.Fatal("the client was not asked to confirm")
			}
			cancel()
			r24ClientCancelled(t, done)
			f.wait()
			evs := f.records("confirm_write")
			if len(evs) != 1 || evs[0].Allowed || evs[0].Code != "CONFIRMATION_REQUIRED" || evs[0].Cost != 0 {
				t.Errorf("records %s; want one CONFIRMATION_REQUIRED outcome of cost 0", r24Describe(evs))
			}
			select {
			case s := <-f.started:
				t.Errorf("handler %s ran", s)
			default:
			}
			close(f.release)
			if code := r24Code(t, cs, "slow_write"); code != "" {
				t.Errorf("a write after it: %q; want it admitted (nothing charged, no slot held)", code)
			}
		})
	}
}

// r24SlowSink holds each outcome record until the test lets it go.
type r24SlowSink struct {
	memSink
	in, release chan struct{}
}

func (s *r24SlowSink) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseOutcome {
		s.in <- struct{}{}
		<-s.release
	}
	return s.memSink.Write(ctx, e)
}

// TestReview24CancelledWhileAuditWrites: a client that goes away while
// the outcome record is written does not stop it: the record is written
// once, as allowed, and Guard.Wait waits for it.
func TestReview24CancelledWhileAuditWrites(t *testing.T) {
	for _, kind := range r24Transports {
		t.Run(kind, func(t *testing.T) {
			sink := &r24SlowSink{in: make(chan struct{}, 1), release: make(chan struct{})}
			f := newR24(t, &mcpguard.Options{Audit: sink})
			cs := f.connect(kind, &r24Client{})
			cancel, done := r24Call(cs, "quick", "")
			<-sink.in
			cancel()
			r24ClientCancelled(t, done)
			ctx, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
			if err := f.g.Wait(ctx); err == nil {
				t.Error("Guard.Wait returned while the outcome record was being written")
			}
			stop()
			close(sink.release)
			f.wait()
			evs := sink.all()
			if len(evs) != 1 || !evs[0].Allowed || evs[0].Tool != "quick" {
				t.Errorf("records %s; want one allowed outcome", r24Describe(evs))
			}
		})
	}
}

// TestReview24Progress: progress notifications (with the client's token)
// and log messages a handler sends reach its client; a call the guard
// refuses (a hidden tool, a cap) sends none, and a hidden tool's answer is
// the go-sdk's own for an unknown one.
func TestReview24Progress(t *testing.T) {
	for _, kind := range r24Transports {
		t.Run(kind, func(t *testing.T) {
			f := newR24(t, nil)
			rc := &r24Client{}
			cs := f.connect(kind, rc)
			// A level was set (connect): log messages are sent. (On
			// 2026-07-28 the level is a request's, and this one's has none.)
			ir := cs.InitializeResult()
			logs := ir != nil && ir.ProtocolVersion < "2026-07-28"
			has := func(s string) func() bool {
				return func() bool { return slices.Contains(rc.get(), s) }
			}
			call := func(name, tok string) (*mcp.CallToolResult, error) {
				p := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
				p.SetProgressToken(tok)
				return cs.CallTool(context.Background(), p)
			}
			if _, err := call("quick", "t1"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, has("progress t1: quick"))
			if logs {
				waitFor(t, has("log: quick"))
			}
			// Refused calls: a hidden tool, and one over the in-flight cap.
			_, herr := call("admin_read", "hidden")
			_, uerr := call("no_such_tool", "unknown")
			if herr == nil || uerr == nil || strings.ReplaceAll(herr.Error(), "admin_read", "x") != strings.ReplaceAll(uerr.Error(), "no_such_tool", "x") {
				t.Errorf("hidden tool: %v; unknown tool: %v; want the same answer", herr, uerr)
			}
			cancel, done := r24Call(cs, "slow_read", "slow")
			<-f.started
			waitFor(t, has("progress slow: slow_read started"))
			res, err := call("slow_read", "capped")
			if code := errorCode(t, res); err != nil || code != "CONCURRENCY_LIMIT_EXCEEDED" {
				t.Errorf("second slow_read: %v %q; want CONCURRENCY_LIMIT_EXCEEDED", err, code)
			}
			cancel()
			r24ClientCancelled(t, done)
			f.ended1()
			f.wait() // its slot given back
			// A last call whose progress comes after any of theirs.
			if _, err := call("quick", "t2"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, has("progress t2: quick"))
			for _, n := range rc.get() {
				if strings.Contains(n, "hidden") || strings.Contains(n, "unknown") || strings.Contains(n, "capped") || strings.Contains(n, "admin") {
					t.Errorf("a refused call sent %q", n)
				}
			}
		})
	}
}

// TestReview24NoGoroutineLeak: the cancellations above leave no goroutine
// behind once their sessions and servers are closed.
func TestReview24NoGoroutineLeak(t *testing.T) {
	run := func() {
		for _, test := range []func(*testing.T){TestReview24CancelledRead, TestReview24CancelledWrite, TestReview24CancelledWhileLimiterDecides,
			TestReview24CancelledWhileConfirmationAsked, TestReview24CancelledWhileAuditWrites, TestReview24Progress} {
			t.Run("", test)
		}
	}
	run() // warm up: HTTP keep-alives, the clock of the limiter, and such
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	for range 3 {
		run()
	}
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

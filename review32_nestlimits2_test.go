package mcpguard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nl2Store is a limiter store whose reservations do what mode says:
// "hang" waits for the caller's context to end and fails with its error (a
// Redis server that does not answer); "fail" fails at once (nothing
// listens); "owntimeout" fails at once with a timeout of its own (a
// store's own bound on a request, shorter than the caller's); "garbage"
// ignores the context, answers after the outer call's deadline has passed,
// and answers outside the Batch contract (a broken store, not a slow one).
// Releases and abandons succeed, and are counted.
type nl2Store struct {
	mode     string
	reserves atomic.Int64
	abandons atomic.Int64
	releases atomic.Int64
}

// LeasesSlots makes the store's slots leases, which a failed reservation
// abandons.
func (*nl2Store) LeasesSlots() bool { return true }

func (s *nl2Store) Apply(ctx context.Context, _ time.Time, b *limiter.Batch) error {
	switch {
	case b.Abandon:
		s.abandons.Add(1)
		return nil
	case b.Release:
		s.releases.Add(1)
		return nil
	case b.Refund:
		return errors.New("nl2Store: no refunds")
	}
	s.reserves.Add(1)
	switch s.mode {
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	case "fail":
		return errors.New("connect: connection refused")
	case "owntimeout":
		return fmt.Errorf("store's own timeout: %w", context.DeadlineExceeded)
	case "garbage":
		time.Sleep(ndDeadline + 100*time.Millisecond)
		b.Denied = len(b.Checks) + 5
		return nil
	}
	b.Denied = -1
	return nil
}

// nl2SlowLog is a log handler that takes twice the outer call's deadline
// to write an Error record (a handler that ships its records away).
type nl2SlowLog struct{}

func (nl2SlowLog) Enabled(context.Context, slog.Level) bool { return true }
func (h nl2SlowLog) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h nl2SlowLog) WithGroup(string) slog.Handler          { return h }

func (nl2SlowLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		time.Sleep(2 * ndDeadline)
	}
	return nil
}

// nl2Rig: the read lookup_and_refund (Timeout ndDeadline) calls inner (the
// write trigger_refund, cost 5, or the read lookup_refund) in-process with
// its context; the inner tools are limited by a limiter on store (in-flight
// cap 1 per user, spend cap 100 an hour on trigger_refund).
type nl2Rig struct {
	srv      *mcp.Server
	g        *mcpguard.Guard
	sink     *memSink
	runs     atomic.Int64
	innerGot atomic.Value
}

type nl2Opts struct {
	inner     string
	confirmed bool // the inner tool needs a confirmation
	dryRun    bool // the inner write is a dry run
	limitStep bool // the inner handler is guarded by the stand-alone Limit, not by the Guard
	logger    *slog.Logger
}

func nl2NewRig(t *testing.T, store limiter.Store, o nl2Opts) *nl2Rig {
	t.Helper()
	rules := []policy.ToolRule{
		{Name: "lookup_and_refund", Class: policy.Read},
		{Name: "trigger_refund", Class: policy.Write, Cost: 5, Confirm: o.confirmed},
		{Name: "lookup_refund", Class: policy.Read, Confirm: o.confirmed},
	}
	p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"trigger_refund"}})
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "trigger_refund", Max: 1},
		{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "lookup_refund", Max: 1},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "trigger_refund", Max: 100, Window: time.Hour},
	}, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	logger := o.logger
	if logger == nil {
		logger = quiet
	}
	r := &nl2Rig{sink: &memSink{}}
	tools := map[string]mcpguard.ToolOptions{"lookup_and_refund": {Timeout: ndDeadline}}
	if o.dryRun {
		tools["trigger_refund"] = mcpguard.ToolOptions{DryRun: true}
	}
	opts := &mcpguard.Options{Audit: r.sink, Logger: logger, Limiter: lim, Tools: tools}
	if o.confirmed {
		opts.Confirmer = testSigner(t, nil)
	}
	if o.limitStep {
		opts.Limiter = nil // the outer call is not limited; the inner one by the step alone
	}
	g, err := mcpguard.New(p, fixed(bob), opts)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"type": "object"}
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r.runs.Add(1)
		return textResult("done"), nil
	}
	var h mcp.ToolHandler
	if o.limitStep {
		step, err := mcpguard.Limit(lim, p, &mcpguard.Options{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		h = step(handler)
	} else {
		innerTool := &mcp.Tool{Name: o.inner, InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: o.inner == "lookup_refund"}}
		if h, err = g.Wrap(innerTool, handler); err != nil {
			t.Fatal(err)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "nest2", Version: "1"}, nil)
	tool := &mcp.Tool{Name: "lookup_and_refund", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	if err := g.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := nestInnerCall(ctx, h, req, o.inner, `{}`)
		r.innerGot.Store(ndRead(res, err))
		return res, err
	}); err != nil {
		t.Fatal(err)
	}
	r.srv, r.g = srv, g
	return r
}

// run calls the outer tool once on a client of protocol version v (an
// older client accepts any confirmation) and returns the inner call's
// answer and records (phase/allowed/dry run/code/cost/detail).
func (r *nl2Rig) run(t *testing.T, inner, v string) (ndAnswer, string) {
	t.Helper()
	cs := connectVersion(t, r.srv, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}, v)
	if _, err := call(t, cs, "lookup_and_refund", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := r.g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var recs []string
	for _, e := range r.sink.all() {
		if e.Tool == inner {
			recs = append(recs, fmt.Sprint(e.Phase, "/", e.Allowed, "/", e.DryRun, "/", e.Code, "/", e.Cost, "/", e.Detail))
		}
	}
	ig, _ := r.innerGot.Load().(ndAnswer)
	return ig, fmt.Sprint(recs)
}

const nl2TimedOutRec = "UPSTREAM_UNAVAILABLE/0/the call's deadline passed before the tool ran; the tool was not run"

// TestReview32NestLimits2StoreFailsBeforeDeadlineSlowLog: the limiter's
// store fails at once (refused, or by a timeout of its own, shorter than
// the caller's), well before the outer call's deadline, but the Guard's
// logger takes longer than the deadline to write the limiter's failure.
// The store failed before the deadline: the call keeps its refusal
// (RATE_LIMIT_EXCEEDED, "the rate limiter is unavailable"), as the Wrap
// doc says; at step 8 and at the confirmation's peek ("confirmed", on an
// older client) alike. Before, the deadline was looked at after the log
// line: the call was told it timed out, and invited to retry at once.
func TestReview32NestLimits2StoreFailsBeforeDeadlineSlowLog(t *testing.T) {
	for _, tc := range []struct {
		mode, inner string
		confirmed   bool
	}{
		{"fail", "trigger_refund", false}, {"fail", "lookup_refund", false},
		{"owntimeout", "trigger_refund", false}, {"owntimeout", "lookup_refund", false},
		{"owntimeout", "trigger_refund", true}, {"owntimeout", "lookup_refund", true},
	} {
		t.Run(fmt.Sprint(tc.mode, "/", tc.inner, "/confirmed=", tc.confirmed), func(t *testing.T) {
			slow := slog.New(nl2SlowLog{})
			r := nl2NewRig(t, &nl2Store{mode: tc.mode}, nl2Opts{inner: tc.inner, confirmed: tc.confirmed, logger: slow})
			ig, recs := r.run(t, tc.inner, "2025-11-25")
			want := ndAnswer{"RATE_LIMIT_EXCEEDED", "the rate limiter is unavailable; try again shortly", true}
			if ig != want || r.runs.Load() != 0 {
				t.Errorf("the inner call's answer: %+v, run %d times; want %+v, not run", ig, r.runs.Load(), want)
			}
			if !strings.Contains(recs, "/RATE_LIMIT_EXCEEDED/0/") {
				t.Errorf("the inner call's records: %s", recs)
			}
		})
	}
}

// TestReview32NestLimits2GarbageAfterDeadline: a store that ignores the
// caller's context answers after the deadline, outside the Batch contract.
// The store answered, and its answer is its own fault, not the deadline's:
// RATE_LIMIT_EXCEEDED, "the rate limiter is unavailable", not a timeout.
func TestReview32NestLimits2GarbageAfterDeadline(t *testing.T) {
	r := nl2NewRig(t, &nl2Store{mode: "garbage"}, nl2Opts{inner: "trigger_refund"})
	ig, _ := r.run(t, "trigger_refund", "")
	want := ndAnswer{"RATE_LIMIT_EXCEEDED", "the rate limiter is unavailable; try again shortly", true}
	if ig != want || r.runs.Load() != 0 {
		t.Errorf("the inner call's answer: %+v, run %d times; want %+v, not run", ig, r.runs.Load(), want)
	}
}

// TestReview32NestLimits2Hang pins every path of a nested call whose store
// hangs until the outer deadline: timed out before it ran, retryable, not
// run, its record an outcome with cost 0 (nothing was charged: the cost 5
// of trigger_refund is not recorded) and the dry-run flag of a dry run;
// the reservation abandoned (its slot freed), nothing released (no slot
// was held). The paths: a write and a read at step 8; a dry run (whose
// cost is peeked); the confirmation's peek on an older client and on a
// 2026-07-28 client (which is asked by the multi round-trip).
func TestReview32NestLimits2Hang(t *testing.T) {
	for _, tc := range []struct {
		name, inner, v    string
		confirmed, dryRun bool
		dry               string
	}{
		{name: "write", inner: "trigger_refund"},
		{name: "read", inner: "lookup_refund"},
		{name: "dryrun", inner: "trigger_refund", dryRun: true},
		{name: "confirm/older", inner: "trigger_refund", v: "2025-11-25", confirmed: true},
		{name: "confirm/mrtr", inner: "trigger_refund", v: "2026-07-28", confirmed: true},
		{name: "confirm/older/read", inner: "lookup_refund", v: "2025-11-25", confirmed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &nl2Store{mode: "hang"}
			r := nl2NewRig(t, st, nl2Opts{inner: tc.inner, confirmed: tc.confirmed, dryRun: tc.dryRun})
			ig, recs := r.run(t, tc.inner, tc.v)
			if ig.Code != "UPSTREAM_UNAVAILABLE" || !strings.HasPrefix(ig.Message, ndTimedOut) || !ig.Retryable || r.runs.Load() != 0 {
				t.Errorf("the inner call's answer: %+v, run %d times; want a timeout before it ran", ig, r.runs.Load())
			}
			want := fmt.Sprintf("[outcome/false/%v/%s]", tc.dryRun, nl2TimedOutRec)
			if recs != want {
				t.Errorf("the inner call's records: %s\nwant %s", recs, want)
			}
			if st.reserves.Load() != 1 || st.releases.Load() != 0 {
				t.Errorf("reservations %d, releases %d; want 1, 0", st.reserves.Load(), st.releases.Load())
			}
			for deadline := time.Now().Add(2 * time.Second); st.abandons.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if st.abandons.Load() != 1 {
				t.Errorf("abandons %d; want 1 (the place a late reservation takes is freed)", st.abandons.Load())
			}
		})
	}
}

// TestReview32NestLimits2LimitStep pins the stand-alone Limit under a
// nested call whose store hangs until the outer deadline: refused
// RATE_LIMIT_EXCEEDED, "the rate limiter is unavailable", as its doc says
// (unlike the Guard, which says timed out), the handler not run.
func TestReview32NestLimits2LimitStep(t *testing.T) {
	r := nl2NewRig(t, &nl2Store{mode: "hang"}, nl2Opts{inner: "trigger_refund", limitStep: true})
	ig, _ := r.run(t, "trigger_refund", "")
	want := ndAnswer{"RATE_LIMIT_EXCEEDED", "the rate limiter is unavailable; try again shortly", true}
	if ig != want || r.runs.Load() != 0 {
		t.Errorf("the inner call's answer: %+v, run %d times; want %+v, not run", ig, r.runs.Load(), want)
	}
}

// TestReview32NestLimits2TopLevelDeadline pins a call made with a context
// that has a deadline but is not of a guarded call's handler (the Wrap
// handler called directly, or under a server middleware that sets a
// deadline): the guard has no outer call to time out within, and the
// limiter refused a caller whose context ended, as one that went away:
// RATE_LIMIT_EXCEEDED, recorded so.
func TestReview32NestLimits2TopLevelDeadline(t *testing.T) {
	r := nl2NewRig(t, &nl2Store{mode: "hang"}, nl2Opts{inner: "trigger_refund"})
	h, err := r.g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.runs.Add(1)
			return textResult("done"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ndDeadline)
	defer cancel()
	got := ndRead(h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "trigger_refund", Arguments: []byte(`{}`)}}))
	want := ndAnswer{"RATE_LIMIT_EXCEEDED", "the rate limiter is unavailable; try again shortly", true}
	if got != want || r.runs.Load() != 0 {
		t.Errorf("answer %+v, run %d times; want %+v, not run", got, r.runs.Load(), want)
	}
	var recs []string
	for _, e := range r.sink.all() {
		recs = append(recs, fmt.Sprint(e.Phase, "/", e.Code, "/", e.Cost, "/", e.Detail))
	}
	if got, want := fmt.Sprint(recs), "[outcome/RATE_LIMIT_EXCEEDED/0/the client went away (the call's context ended) before the limiter decided]"; got != want {
		t.Errorf("records %s\nwant %s", got, want)
	}
}

package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/internal/testlog"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61dAuditStepSessionKeyPanic: the stand-alone Audit middleware
// asks Options.SessionKey for the session_id of its record when it writes
// it, outside any recover. A SessionKey that panics (its bug) left the
// call without an outcome record, and went on up to the Recover outside,
// which answered a tool that ran and succeeded INTERNAL "the tool failed
// unexpectedly" (without a Recover, it ended the go-sdk server's process).
// In a Guard the same SessionKey is asked inside the pipeline, whose
// recover records the call.
func TestReview61dAuditStepSessionKeyPanic(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auditStep, err := mcpguard.Audit(sink, &mcpguard.Options{
		Logger:     log,
		SessionKey: func(*mcp.CallToolRequest, *mcpguard.Identity) string { panic("review61d: SessionKey's bug") },
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	ran := 0
	h := mcpguard.Chain(mcpguard.Recover(log), auditStep, mcpguard.Authenticate(auth))(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	res, err := h(context.Background(), r61cCall("r"))
	if ran != 1 {
		t.Fatalf("the tool ran %d times", ran)
	}
	if err != nil || res == nil || res.IsError {
		t.Errorf("the tool ran and succeeded, but its answer is %q (err %v)", r61cCode(res), err)
	}
	if n := len(sink.all()); n != 1 {
		t.Errorf("%d outcome records of the call, want 1", n)
	}
}

// r61dReleasePanics is a lease store over a MemoryStore whose Apply
// panics on the releases it is told to (a custom store's bug).
type r61dReleasePanics struct {
	mem    *limiter.MemoryStore
	panics atomic.Bool
}

func (s *r61dReleasePanics) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if b.Release && s.panics.Load() {
		panic("review61d: the store's bug")
	}
	return s.mem.Apply(ctx, now, b)
}

func (s *r61dReleasePanics) LeasesSlots() bool { return true }

// TestReview61dLimiterReleasePanic: the Guard releases a call's in-flight
// slot in a deferred call that runs before its own recover. A custom
// limiter.Store whose Apply panics on that release (its bug) turned a read
// that ran and succeeded into INTERNAL "the tool failed unexpectedly",
// recorded as a tool that panicked (detail "panic"); the limiter's own
// background abandon treats a store's panic as the store's failure, logs
// it and goes on. A release that fails with an error is retried in the
// background and does not change the call's answer.
func TestReview61dLimiterReleasePanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	st := &r61dReleasePanics{mem: limiter.NewMemoryStore()}
	st.panics.Store(true)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, &limiter.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	r, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("the store's panic escaped the guard: %v", v)
			}
		}()
		res, err := r(context.Background(), r61cCall("r"))
		if ran != 1 {
			t.Fatalf("the tool ran %d times", ran)
		}
		if err != nil || res == nil || res.IsError {
			t.Errorf("the read ran and succeeded, but its answer is %q (err %v): the limiter's release changed it", r61cCode(res), err)
		}
	}()
	for _, e := range sink.all() {
		if !e.Allowed || e.Detail == "panic" {
			t.Errorf("the read that succeeded is recorded %+v", e)
		}
	}
	if l := logged.String(); !strings.Contains(l, "panicked") || !strings.Contains(l, "goroutine") {
		t.Errorf("the log does not say, with its stack, that the store panicked:\n%s", l)
	}
}

// r61dReservePanics is a lease store over a MemoryStore that panics once
// after carrying out a reservation (a custom store's bug: a client that
// panics reading the answer of a script that ran).
type r61dReservePanics struct {
	mem    *limiter.MemoryStore
	panics atomic.Bool
}

func (s *r61dReservePanics) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	err := s.mem.Apply(ctx, now, b)
	if !b.Release && s.panics.CompareAndSwap(true, false) {
		panic("review61d: the store's bug")
	}
	return err
}

func (s *r61dReservePanics) LeasesSlots() bool { return true }

// TestReview61dLimiterReservePanic: a custom limiter.Store whose Apply
// panics on a reservation (its bug) may have carried it out, as one that
// fails with an error may: the limiter abandons the lease of a failed
// reservation, so that no slot is held by a call that never got a
// decision. A panic went past the limiter to the Guard's recover, which
// answered the call as a tool that panicked, and nothing abandoned the
// lease: the user's in-flight slot was held for good, and every later call
// was refused CONCURRENCY_LIMIT_EXCEEDED.
func TestReview61dLimiterReservePanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	st := &r61dReservePanics{mem: limiter.NewMemoryStore()}
	st.panics.Store(true)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, &limiter.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r(context.Background(), r61cCall("r"))
	if err != nil || res == nil || !res.IsError {
		t.Fatalf("the call whose reservation panicked: %v %v", res, err)
	}
	if got := r61cCode(res); got != string(mcpguard.CodeRateLimitExceeded) {
		t.Errorf("the call whose limiter's store panicked was refused %q, want RATE_LIMIT_EXCEEDED (the limiter failed closed)", got)
	}
	// The abandon runs in the background: give it a moment.
	deadline := time.Now().Add(2 * time.Second)
	for {
		res, err = r(context.Background(), r61cCall("r"))
		if err == nil && res != nil && !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a later call, the store well again: %q (err %v); the slot of the call whose reservation panicked is held for good", r61cCode(res), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l := logged.String(); !strings.Contains(l, "panicked") || !strings.Contains(l, "goroutine") {
		t.Errorf("the log does not say, with its stack, that the store panicked:\n%s", l)
	}
}

// r61dPanicHandler is a slog.Handler whose every Handle panics (an
// operator's log handler's bug: a sink behind it closed, say).
type r61dPanicHandler struct{}

func (r61dPanicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (r61dPanicHandler) Handle(context.Context, slog.Record) error {
	panic("review61d: the log handler's bug")
}
func (h r61dPanicHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h r61dPanicHandler) WithGroup(string) slog.Handler      { return h }

// TestReview61dLoggerPanic: Options.Logger's handler is the operator's
// code, which the Guard calls on the call's goroutine. A handler that
// panics there (logging a tool's ordinary failure) was recovered by the
// pipeline as a panic of the tool's, whose own log line panicked again in
// the deferred recover: the panic went on up to the go-sdk, which
// recovers none, and ended the server's process, the call without an
// answer or an outcome record. The gateway contains a log handler's panic
// (raised on the request's goroutine, where net/http recovers it).
func TestReview61dLoggerPanic(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: slog.New(r61dPanicHandler{})})
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("review61d: the tool's ordinary failure")
		})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("the log handler's panic escaped the guard (it ends a go-sdk server's process): %v", v)
			}
		}()
		res, err := r(context.Background(), r61cCall("r"))
		if err != nil || r61cCode(res) != string(mcpguard.CodeInternal) {
			t.Errorf("the call whose tool failed: %q (err %v), want INTERNAL", r61cCode(res), err)
		}
	}()
	if n := len(sink.all()); n != 1 {
		t.Errorf("%d outcome records, want 1", n)
	}
}

// TestReview61dNonceStorePanic: a confirm.NonceStore is the operator's
// code (a custom store over their database). One that fails is the
// server's fault: the call is refused UPSTREAM_UNAVAILABLE, retryable
// after a second, its tool not run and its state left for the retry (see
// Options.Confirmer). One that panicked (its bug) reached the pipeline's
// recover, which answered the next round of a multi round-trip call as a
// tool that panicked: INTERNAL "the tool failed unexpectedly", not
// retryable, recorded with detail "panic" though no tool ran.
func TestReview61dNonceStorePanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k", Secret: []byte("0123456789abcdef0123456789abcdef")}}, &confirm.Options{
		Nonces: confirm.NonceStoreFunc(func(context.Context, string, time.Time, time.Time) (bool, error) {
			panic("review61d: the nonce store's bug")
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Confirmer: signer, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	r, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			if req.Params.RequestState == "" {
				return &mcp.CallToolResult{RequestState: "inner", InputRequests: mcp.InputRequestMap{}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r(context.Background(), r61cCall("r"))
	if err != nil || res == nil || res.IsError || res.RequestState == "" {
		t.Fatalf("first round: %+v %v", res, err)
	}
	next := r61cCall("r")
	next.Params.RequestState = res.RequestState
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("the nonce store's panic escaped the guard: %v", v)
			}
		}()
		res, err = r(context.Background(), next)
	}()
	if ran != 1 {
		t.Errorf("the handler ran %d times, want once (the next round's state could not be used)", ran)
	}
	if got := r61cCode(res); err != nil || got != string(mcpguard.CodeUpstreamUnavailable) {
		t.Errorf("the next round whose nonce store panicked was refused %q (err %v), want UPSTREAM_UNAVAILABLE as for a store that fails", got, err)
	}
	evs := sink.all()
	if last := evs[len(evs)-1]; last.Detail == "panic" {
		t.Errorf("recorded as a tool that panicked: %+v", last)
	}
	if l := logged.String(); !strings.Contains(l, "panicked") || !strings.Contains(l, "goroutine") {
		t.Errorf("the log does not say, with its stack, that the store panicked:\n%s", l)
	}
}

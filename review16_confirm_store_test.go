package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// redisSigner returns a signer whose nonces are kept in the Redis at
// addr, under prefix, with a short timeout.
func redisSigner(t *testing.T, addr, prefix string, secret string) *confirm.Signer {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	st := redisnonce.New(rdb, prefix)
	st.Timeout = 300 * time.Millisecond
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte(secret)}}, &confirm.Options{Nonces: st})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// denialOf returns the refusal carried by a tool-error result.
func denialOf(t *testing.T, res *mcp.CallToolResult, err error) *mcpguard.DenialError {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	var de *mcpguard.DenialError
	if !errors.As(res.GetError(), &de) {
		t.Fatalf("result %s carries no refusal", mustJSON(res))
	}
	return de
}

// TestConfirmationStoreDownIsSaidSo: when the nonce store (Redis) cannot
// be reached, the confirmation is refused, fail closed, but the refusal
// says what happened. It used to tell the caller that the confirmation was
// "missing, expired, already used or for another call" and to call again
// to be asked: the human would be asked again and again for nothing while
// the store was down. It is UPSTREAM_UNAVAILABLE and retryable (it was
// CONFIRMATION_REQUIRED, which is not, until the 58th session). The state
// was not used up by the refused round, so once the store is back the same
// answer is accepted, once.
func TestConfirmationStoreDownIsSaidSo(t *testing.T) {
	r := testsvc.StartRedis(t)
	sink := &memSink{}
	h, ask, s := askWipe(t, redisSigner(t, r.Addr, "review16:", "0123456789abcdef0123456789abcdef"), sink)

	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	res, err := confirmRound(h, "wipe", `{}`, ask.RequestState, "accept")
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	de := denialOf(t, res, err)
	if de.Code != mcpguard.CodeUpstreamUnavailable || !de.Retryable() || strings.Contains(de.Message, "already used") || !strings.Contains(de.Message, "unavailable") {
		t.Errorf("confirmation with the nonce store down: %s %q (retryable %v); want UPSTREAM_UNAVAILABLE, retryable, saying the store is unavailable, not that the confirmation was used", de.Code, de.Message, de.Retryable())
	}
	if s.ran != 0 {
		t.Fatalf("handler ran %d times with the nonce store down, want 0", s.ran)
	}
	evs := sink.all()
	if last := evs[len(evs)-1]; last.Code != "UPSTREAM_UNAVAILABLE" || !strings.Contains(last.Detail, confirm.ErrStore.Error()) {
		t.Errorf("record of the refusal: %q %q; want UPSTREAM_UNAVAILABLE with a detail naming the store failure", last.Code, last.Detail)
	}

	for i, want := range []string{"", "CONFIRMATION_REQUIRED"} {
		res, err := confirmRound(h, "wipe", `{}`, ask.RequestState, "accept")
		if got := codeOf(t, res, err); got != want {
			t.Errorf("round %d after the store came back: %q, want %q", i+1, got, want)
		}
	}
	if s.ran != 1 {
		t.Errorf("handler ran %d times, want 1", s.ran)
	}
}

// TestConfirmationStoreDownOlderClient: on protocol 2025-11-25 the human
// answers inside the call and the state is used up after the limits; with
// the store down the call is refused saying so, and the tool does not run.
func TestConfirmationStoreDownOlderClient(t *testing.T) {
	r := testsvc.StartRedis(t)
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Confirmer: redisSigner(t, r.Addr, "review16-old:", "0123456789abcdef0123456789abcdef")})
	paused := false
	cs := h.connect(bob, clientOpts{version: "2025-11-25", elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		// The human answers; meanwhile the store went away.
		if err := r.Pause(); err != nil {
			return nil, err
		}
		paused = true
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
	if paused {
		if err := r.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if !paused {
		t.Fatalf("the human was not asked: %s", mustJSON(res))
	}
	var body struct {
		Error struct {
			Code, Message string
			Retryable     bool
		} `json:"error"`
	}
	b := mustJSON(res.StructuredContent)
	if err := json.Unmarshal([]byte(b), &body); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if body.Error.Code != "UPSTREAM_UNAVAILABLE" || !body.Error.Retryable || strings.Contains(body.Error.Message, "already used") || !strings.Contains(body.Error.Message, "unavailable") {
		t.Errorf("accepted confirmation with the nonce store down: %s; want UPSTREAM_UNAVAILABLE, retryable, saying the store is unavailable", b)
	}
	if n := h.down.calls.Load(); n != 0 {
		t.Errorf("tool ran %d times, want 0", n)
	}
}

// TestSealedStateStoreDownIsSaidSo: the next round of a handler's own multi
// round-trip is sealed with the Confirmer's keys and nonce store; with the
// store down it is refused saying so, not as a state that is expired or
// used, and the same round is accepted once the store is back.
func TestSealedStateStoreDownIsSaidSo(t *testing.T) {
	r := testsvc.StartRedis(t)
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "ask", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{
		Confirmer: redisSigner(t, r.Addr, "review16-mrtr:", "0123456789abcdef0123456789abcdef"),
		Logger:    quiet, Audit: &memSink{},
	})
	if err != nil {
		t.Fatal(err)
	}
	var done int
	h, err := g.Wrap(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{"why": &mcp.ElicitParams{Mode: "form", Message: "why?",
						RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}},
					RequestState: "mine",
				}, nil
			}
			if req.Params.RequestState != "mine" {
				return textResult("not my state"), nil
			}
			done++
			return textResult("done"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	first, err := h(context.Background(), req("ask", `{}`))
	if err != nil || first.RequestState == "" {
		t.Fatalf("first round: %v %s", err, mustJSON(first))
	}
	next := func() (*mcp.CallToolResult, error) {
		r := req("ask", `{}`)
		r.Params.RequestState = first.RequestState
		r.Params.InputResponses = mcp.InputResponseMap{"why": &mcp.ElicitResult{Action: "accept"}}
		return h(context.Background(), r)
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	res, err := next()
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	de := denialOf(t, res, err)
	if de.Code != mcpguard.CodeUpstreamUnavailable || !de.Retryable() || strings.Contains(de.Message, "already used") || !strings.Contains(de.Message, "unavailable") {
		t.Errorf("next round with the nonce store down: %s %q; want UPSTREAM_UNAVAILABLE, retryable, saying the store is unavailable", de.Code, de.Message)
	}
	if done != 0 {
		t.Fatalf("handler finished %d times with the store down, want 0", done)
	}
	for i, want := range []string{"", "INVALID_ARGUMENTS"} {
		res, err := next()
		if got := codeOf(t, res, err); got != want {
			t.Errorf("next round #%d after the store came back: %q, want %q", i+1, got, want)
		}
	}
	if done != 1 {
		t.Errorf("handler finished %d times, want 1", done)
	}
}

// TestUnansweredConfirmationEndsAtExpiry: on protocol 2025-11-25 the guard
// asks the human inside the call and waits for the answer. An answer after
// the state's expiry is refused anyway, so the wait ends at the expiry: a
// client that never answers used to hold the call (its goroutine and
// memory) for as long as it kept the session open, and could pile up such
// calls, each counted once against the call rate and holding no in-flight
// slot.
func TestUnansweredConfirmationEndsAtExpiry(t *testing.T) {
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Confirmer: testSigner(t, &confirm.Options{TTL: time.Second})})
	release := make(chan struct{})
	answer := sync.OnceFunc(func() { close(release) })
	defer answer()
	asked := make(chan struct{}, 1)
	cs := h.connect(bob, clientOpts{version: "2025-11-25", elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select { // the human never answers
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
	}})
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db-1"}})
		done <- outcome{res, err}
	}()
	<-asked
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatal(o.err)
		}
		if got := errorCode(t, o.res); got != "CONFIRMATION_REQUIRED" {
			t.Errorf("unanswered confirmation: %s, want CONFIRMATION_REQUIRED", mustJSON(o.res))
		}
	case <-time.After(10 * time.Second):
		answer() // the human answers at last: let the call end
		<-done
		t.Fatalf("the call still waited for an answer 10s after a 1s confirmation was asked")
	}
	if n := h.down.calls.Load(); n != 0 {
		t.Errorf("tool ran %d times", n)
	}
	evs := h.sink.all()
	if last := evs[len(evs)-1]; last.Code != "CONFIRMATION_REQUIRED" || !strings.Contains(last.Detail, "expired") {
		t.Errorf("record: %q %q; want CONFIRMATION_REQUIRED with a detail saying no answer came before the expiry", last.Code, last.Detail)
	}
}

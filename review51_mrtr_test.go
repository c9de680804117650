package mcpguard_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r51Retry calls asknote again with state and the user's answer.
func r51Retry(t *testing.T, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "asknote", Arguments: map[string]any{"target": "db-1"}, RequestState: state,
		InputResponses: mcp.InputResponseMap{mrtrAskKey: &mcp.ElicitResult{Action: "accept"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// r51LastOutcome is the last outcome record in sink.
func r51LastOutcome(t *testing.T, sink *memSink) audit.Event {
	t.Helper()
	evs := sink.all()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Phase == audit.PhaseOutcome {
			return evs[i]
		}
	}
	t.Fatalf("no outcome record in %+v", evs)
	return audit.Event{}
}

// TestReview51SealedStateMalformed: a request state that begins with the
// guard's prefix but is not shaped as a sealed one (nothing after the
// prefix, a flag alone, a flag the guard never writes, no '~' after the
// flag, no second '~') is refused as malformed, before any signature is
// checked and without a panic, and the handler never runs.
func TestReview51SealedStateMalformed(t *testing.T) {
	sink := &memSink{}
	cs, runs := mrtrServer(t, mcpguard.Options{Audit: sink}, "", false)
	res, err := call(t, cs, "asknote", map[string]any{"target": "db-1"})
	if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "mcpguard.mrtr1-~") {
		t.Fatalf("first round: %v %s", err, mustJSON(res))
	}
	signed, _, _ := strings.Cut(strings.TrimPrefix(res.RequestState, "mcpguard.mrtr1-~"), "~")
	for name, state := range map[string]string{
		"prefix only":      "mcpguard.mrtr1",
		"flag only":        "mcpguard.mrtr1-",
		"unknown flag":     "mcpguard.mrtr1x~" + signed + "~handler-own-state",
		"no tilde":         "mcpguard.mrtr1-" + signed + "~handler-own-state",
		"no second tilde":  "mcpguard.mrtr1-~" + signed,
		"tilde for a flag": "mcpguard.mrtr1~~" + signed + "~handler-own-state",
	} {
		res := r51Retry(t, cs, state)
		if got := errorCode(t, res); got != "INVALID_ARGUMENTS" || runs.Load() != 0 {
			t.Errorf("%s: code %q, handler completed %d times; want INVALID_ARGUMENTS and no run", name, got, runs.Load())
		}
		if e := r51LastOutcome(t, sink); e.Detail != "sealed request state: malformed sealed state" {
			t.Errorf("%s: outcome detail %q, want the sealed state's malformation", name, e.Detail)
		}
	}
}

// r51Checker is a nonce store whose Used fails while down is set.
type r51Checker struct {
	*confirm.MemoryNonceStore
	down atomic.Bool
}

func (c *r51Checker) Used(ctx context.Context, nonce string, now, expires time.Time) (bool, error) {
	if c.down.Load() {
		return false, errors.New("store down")
	}
	return c.MemoryNonceStore.Used(ctx, nonce, now, expires)
}

// TestReview51SealedStateStoreDown: a retry whose sealed state cannot be
// checked, the nonce store down, is refused as the server's fault, "try
// again shortly", UPSTREAM_UNAVAILABLE and retryable, not as a state
// expired or used; once the store is back the same state opens.
func TestReview51SealedStateStoreDown(t *testing.T) {
	store := &r51Checker{MemoryNonceStore: confirm.NewMemoryNonceStore()}
	cs, runs := mrtrServer(t, mcpguard.Options{Confirmer: testSigner(t, &confirm.Options{Nonces: store})}, "", false)
	res, err := call(t, cs, "asknote", map[string]any{"target": "db-1"})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first round: %v %s", err, mustJSON(res))
	}
	store.down.Store(true)
	got := r51Retry(t, cs, res.RequestState)
	if errorCode(t, got) != "UPSTREAM_UNAVAILABLE" || !strings.Contains(resText(got), "state store is unavailable") || !strings.Contains(resText(got), `"retryable":true`) || runs.Load() != 0 {
		t.Errorf("retry, store down: %s, handler completed %d times; want the store's unavailability", mustJSON(got), runs.Load())
	}
	store.down.Store(false)
	if got := r51Retry(t, cs, res.RequestState); got.IsError || runs.Load() != 1 {
		t.Errorf("retry, store back: %s, handler completed %d times", mustJSON(got), runs.Load())
	}
	// A state used already is refused as such, not as the store's fault.
	got = r51Retry(t, cs, res.RequestState)
	if errorCode(t, got) != "INVALID_ARGUMENTS" || !strings.Contains(resText(got), "expired, already used") {
		t.Errorf("replayed retry: %s; want expired or used", mustJSON(got))
	}
}

// r51FailingRand fails every read.
type r51FailingRand struct{}

func (r51FailingRand) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

// TestReview51SealFails: a handler's request for more input whose state
// the guard cannot seal (here its signer's random source fails) is not
// passed on unsealed: the call fails as the server's, INTERNAL, and its
// record says why.
func TestReview51SealFails(t *testing.T) {
	sink := &memSink{}
	cs, _ := mrtrServer(t, mcpguard.Options{Audit: sink, Confirmer: testSigner(t, &confirm.Options{Rand: r51FailingRand{}})}, "", false)
	res, err := call(t, cs, "asknote", map[string]any{"target": "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	if errorCode(t, res) != "INTERNAL" || res.NeedsInput() || res.RequestState != "" {
		t.Errorf("first round: %s; want INTERNAL, no input requests and no state", mustJSON(res))
	}
	if e := r51LastOutcome(t, sink); !strings.HasPrefix(e.Detail, "sealing the request state: ") || !strings.Contains(e.Detail, "no entropy") {
		t.Errorf("outcome detail %q, want the sealing's failure", e.Detail)
	}
}

// TestReview51DryRunStateOnRealCall: the sealed state of a dry run sent
// with a real call is refused as such, before the handler is asked
// anything (its record names why), whether the tool needs confirmation or
// costs; the dry run's own next round still opens it.
func TestReview51DryRunStateOnRealCall(t *testing.T) {
	for _, tool := range []string{"zzwipe", "zzspend"} {
		cs, writes, sink := dryRunAwareMRTRServer(t, nil)
		res := dryRunThenReal(t, cs, tool)
		if errorCode(t, res) != "INVALID_ARGUMENTS" || res.NeedsInput() || writes.Load() != 0 {
			t.Errorf("%s: real round with a dry run's state: %s, %d writes; want INVALID_ARGUMENTS", tool, mustJSON(res), writes.Load())
		}
		if e := r51LastOutcome(t, sink); e.Detail != "sealed request state: the state of a dry run, on a call that is not one" {
			t.Errorf("%s: outcome detail %q, want the dry run's state refused", tool, e.Detail)
		}
		args := map[string]any{"target": "db-1"}
		first, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{dryrun.MetaKey: true}})
		if err != nil || !first.NeedsInput() {
			t.Fatalf("%s: dry run's first round: %v %s", tool, err, mustJSON(first))
		}
		next, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: tool, Arguments: args, RequestState: first.RequestState, Meta: mcp.Meta{dryrun.MetaKey: true},
			InputResponses: mcp.InputResponseMap{sealAskKey: &mcp.ElicitResult{Action: "accept"}},
		})
		if err != nil || next.IsError || resText(next) != "would write" || writes.Load() != 0 {
			t.Errorf("%s: dry run's next round: %v %s, %d writes; want its preview", tool, err, mustJSON(next), writes.Load())
		}
	}
}

// TestReview51RetryRecord: the round that ends a multi round-trip call is
// recorded as the logical call's next round, with no cost of its own (the
// first round was charged the call's), and its result, which asks nothing
// more, carries no request state: the guard seals only a state the
// handler set.
func TestReview51RetryRecord(t *testing.T) {
	sink := &memSink{}
	cs, runs := mrtrServer(t, mcpguard.Options{Audit: sink}, "", false)
	first, err := call(t, cs, "asknote", map[string]any{"target": "db-1"})
	if err != nil || !first.NeedsInput() {
		t.Fatalf("first round: %v %s", err, mustJSON(first))
	}
	if e := r51LastOutcome(t, sink); e.Cost != 1 {
		t.Errorf("first round's record: cost %v, want the tool's 1", e.Cost)
	}
	res := r51Retry(t, cs, first.RequestState)
	if res.IsError || runs.Load() != 1 || res.RequestState != "" || res.NeedsInput() {
		t.Fatalf("next round: %s, handler completed %d times; want its result, no state", mustJSON(res), runs.Load())
	}
	if e := r51LastOutcome(t, sink); e.Cost != 0 || e.Detail != "next round of a multi round-trip call" {
		t.Errorf("next round's record: cost %v detail %q, want 0 and the next round", e.Cost, e.Detail)
	}
}

package mcpguard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStandaloneConfirmReplicasShareSealedStates: two replicas of a
// server whose tools sit behind the stand-alone Confirm, each built with a
// signer of the same keys and one nonce store, as Options.Confirmer's doc
// has replicas do. A confirmed call whose handler asks for more input (the
// multi round-trip) may send its next round to the other replica: the
// sealed state must open there, as it does between two Guards sharing a
// Confirmer. Sent to both at once, many times, it still runs once.
func TestStandaloneConfirmReplicasShareSealedStates(t *testing.T) {
	p := stepPolicy(t)
	store := confirm.NewMemoryNonceStore()
	var a asker
	replica := func() mcp.ToolHandler {
		s := testSigner(t, &confirm.Options{Nonces: store})
		return mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), must(t)(mcpguard.Confirm(s, p, &mcpguard.Options{Logger: quiet})))(a.handle)
	}
	hA, hB := replica(), replica()
	args := `{"target":"db-1"}`
	confirmed := func(t *testing.T) *mcp.CallToolResult {
		t.Helper()
		ask, err := hA(context.Background(), req("wipe", args))
		if err != nil || ask.RequestState == "" {
			t.Fatalf("asking round on replica A: %v %s", err, mustJSON(ask))
		}
		handlerAsks, err := confirmRound(hA, "wipe", args, ask.RequestState, "accept")
		if err != nil || handlerAsks.InputRequests == nil {
			t.Fatalf("confirmed round on replica A: %v %s; want the handler's own input request", err, mustJSON(handlerAsks))
		}
		return handlerAsks
	}

	t.Run("next_round_on_the_other_replica", func(t *testing.T) {
		a.ran.Store(0)
		handlerAsks := confirmed(t)
		res, err := zzNextRound(hB, "wipe", args, handlerAsks, nil)
		if got := codeOf(t, res, err); got != "" || a.ran.Load() != 1 {
			t.Fatalf("the handler's next round on replica B (same keys, same nonce store): %q, handler finished %d times; want it to finish once", got, a.ran.Load())
		}
		res, err = zzNextRound(hA, "wipe", args, handlerAsks, nil)
		if got := codeOf(t, res, err); got != "INVALID_ARGUMENTS" || a.ran.Load() != 1 {
			t.Errorf("the same next round again on replica A: %q, handler finished %d times; want INVALID_ARGUMENTS, still once", got, a.ran.Load())
		}
	})

	t.Run("sent_to_both_at_once", func(t *testing.T) {
		a.ran.Store(0)
		handlerAsks := confirmed(t)
		const n = 16
		codes := make([]string, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			h := hA
			if i%2 == 1 {
				h = hB
			}
			wg.Go(func() {
				<-start
				res, err := zzNextRound(h, "wipe", args, handlerAsks, nil)
				codes[i] = codeOf(t, res, err)
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, c := range codes {
			switch c {
			case "":
				ok++
			case "INVALID_ARGUMENTS":
			default:
				t.Errorf("round %d: %q; want success or INVALID_ARGUMENTS", i, c)
			}
		}
		if ok != 1 || a.ran.Load() != 1 {
			t.Errorf("%d copies of one next round on two replicas: %d succeeded, handler finished %d times; want exactly one", n, ok, a.ran.Load())
		}
	})
}

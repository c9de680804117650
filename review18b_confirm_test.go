package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStandaloneLimitReplicasSealWithOptsConfirmer: Confirm seals a
// handler's request for more input with its own signer, but a Limit in the
// same chain seals its own layer with opts.Confirmer, as the steps' doc now
// says: replicas that give only Confirm their shared signer have the next
// round refused by the other replica's Limit (INVALID_ARGUMENTS); given to
// Limit's opts too, the next round runs there, once.
func TestStandaloneLimitReplicasSealWithOptsConfirmer(t *testing.T) {
	p := stepPolicy(t)
	store := confirm.NewMemoryNonceStore()
	args := `{"target":"db-1"}`
	for _, tc := range []struct {
		name     string
		share    bool // Limit's opts.Confirmer is the shared signer
		want     string
		wantRuns int64
	}{
		{"limit_without_confirmer", false, "INVALID_ARGUMENTS", 0},
		{"limit_with_shared_confirmer", true, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a asker
			replica := func() mcp.ToolHandler {
				s := testSigner(t, &confirm.Options{Nonces: store})
				lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				lo := &mcpguard.Options{Logger: quiet}
				if tc.share {
					lo.Confirmer = s
				}
				return mcpguard.Chain(mcpguard.Authenticate(fixed(bob)),
					must(t)(mcpguard.Confirm(s, p, &mcpguard.Options{Logger: quiet})),
					must(t)(mcpguard.Limit(lim, p, lo)))(a.handle)
			}
			hA, hB := replica(), replica()
			ask, err := hA(context.Background(), req("wipe", args))
			if err != nil || ask.RequestState == "" {
				t.Fatalf("asking round on replica A: %v %s", err, mustJSON(ask))
			}
			handlerAsks, err := confirmRound(hA, "wipe", args, ask.RequestState, "accept")
			if err != nil || handlerAsks.InputRequests == nil {
				t.Fatalf("confirmed round on replica A: %v %s; want the handler's own input request", err, mustJSON(handlerAsks))
			}
			res, err := zzNextRound(hB, "wipe", args, handlerAsks, nil)
			if got := codeOf(t, res, err); got != tc.want || a.ran.Load() != tc.wantRuns {
				t.Errorf("the handler's next round on replica B: %q, handler finished %d times; want %q, %d", got, a.ran.Load(), tc.want, tc.wantRuns)
			}
		})
	}
}

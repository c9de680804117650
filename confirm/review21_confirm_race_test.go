package confirm

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOneStateOneUseUnderRace races 8 goroutines on each of 300 states
// with the memory store, half through Verify and half through Check, Used
// and Consume, each reading its own clock up to 30 s off the issuer's
// (replicas of one process disagree that much at most): exactly one call
// is accepted per state, and every other one is told the state was used.
func TestOneStateOneUseUnderRace(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	ctx := context.Background()
	for i := range 300 {
		base := t0.Add(time.Duration(i) * time.Second)
		st := issue(t, s, base, alice)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted int
			others   []error
		)
		for g := range 8 {
			now := base.Add(time.Duration(rand.Int64N(int64(60*time.Second))) - 30*time.Second)
			wg.Go(func() {
				var err error
				if g%2 == 0 {
					err = s.Verify(ctx, now, st, alice)
				} else {
					var tk Ticket
					if tk, err = s.Check(now, st, alice); err == nil {
						if err = tk.Used(ctx, now); err == nil {
							err = tk.Consume(ctx, now)
						}
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					accepted++
				} else {
					others = append(others, err)
				}
			})
		}
		wg.Wait()
		if accepted != 1 {
			t.Fatalf("state %d accepted %d times by 8 racing calls, want once (others: %v)", i, accepted, others)
		}
		for _, err := range others {
			if !errors.Is(err, ErrReplayed) {
				t.Fatalf("state %d: a losing call = %v, want ErrReplayed", i, err)
			}
		}
	}
}

// TestClaimsCompareAsBytes: a state is for its claims' exact bytes. A
// subject or tool that is the same to a reader (NFC and NFD, fullwidth,
// letter case, a zero-width or NUL suffix) and the hash in capitals are
// other claims: refused ErrMismatch, and the owner's state stays usable.
func TestClaimsCompareAsBytes(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	ctx := context.Background()
	own := Claims{Subject: "jos\u00e9", Tool: "refund", ArgsSHA256: alice.ArgsSHA256}
	st := issue(t, s, t0, own)
	others := []Claims{
		{Subject: "jose\u0301", Tool: own.Tool, ArgsSHA256: own.ArgsSHA256},
		{Subject: "JOS\u00c9", Tool: own.Tool, ArgsSHA256: own.ArgsSHA256},
		{Subject: own.Subject + "\u200b", Tool: own.Tool, ArgsSHA256: own.ArgsSHA256},
		{Subject: own.Subject + "\x00", Tool: own.Tool, ArgsSHA256: own.ArgsSHA256},
		{Subject: own.Subject, Tool: "\uff52efund", ArgsSHA256: own.ArgsSHA256},
		{Subject: own.Subject, Tool: "Refund", ArgsSHA256: own.ArgsSHA256},
		{Subject: own.Subject + "refund", Tool: "", ArgsSHA256: own.ArgsSHA256},
		{Subject: own.Subject, Tool: own.Tool, ArgsSHA256: strings.ToUpper(own.ArgsSHA256)},
	}
	for _, c := range others {
		if err := s.Verify(ctx, t0, st, c); !errors.Is(err, ErrMismatch) {
			t.Errorf("Verify for %+q = %v, want ErrMismatch", c, err)
		}
	}
	if err := s.Verify(ctx, t0, st, own); err != nil {
		t.Errorf("the owner's Verify after the others = %v, want nil", err)
	}
}

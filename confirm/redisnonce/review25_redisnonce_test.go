package redisnonce_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/noncetest"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview25KeyLivesByRedisClock: a replica whose clock runs 3 minutes
// ahead consumes a state that expires 30 s later on its clock. Its key
// lived for those 30 s plus Grace of Redis's time, while a replica with a
// right clock counts the state valid for 3 m 30 s: for two minutes it
// would have accepted the state again. The key must live until the
// state's expiry plus Grace on Redis's clock, as the package doc says,
// whatever the consuming replica's clock reads.
func TestReview25KeyLivesByRedisClock(t *testing.T) {
	r := testsvc.StartRedis(t)
	rdb := newClient(t, r.Addr)
	s := patient(redisnonce.New(rdb, "ahead:"))
	ctx := context.Background()
	real := time.Now()
	expires := real.Add(3*time.Minute + 30*time.Second)
	n := noncetest.Nonce()
	if first, err := s.Consume(ctx, n, real.Add(3*time.Minute), expires); err != nil || !first {
		t.Fatalf("Consume on the clock ahead = %v, %v; want true, nil", first, err)
	}
	pttl, err := rdb.PTTL(ctx, "ahead:"+n).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Until(expires) + redisnonce.Grace - 5*time.Second; pttl < want {
		t.Errorf("the key lives %v more; the state is valid %v more on a right clock (want the key to live at least %v)", pttl, time.Until(expires), want)
	}
}

// TestReview25FarBehindNeverReplays: a replica whose clock runs 10
// minutes behind still counts as valid a state that expired 2 minutes ago
// on Redis's clock. The key of its nonce, if a replica used it, lived
// until its expiry plus Grace and is gone: Redis cannot tell whether it
// was used, so the nonce must not be first (the memory store likewise
// refuses what it may have forgotten). It was, and the state ran again.
// A replica behind by less than Grace still sees the key (TestSkewWithinGrace).
func TestReview25FarBehindNeverReplays(t *testing.T) {
	r := testsvc.StartRedis(t)
	s := patient(redisnonce.New(newClient(t, r.Addr), "behind:"))
	ctx := context.Background()
	real := time.Now()
	behind, expires := real.Add(-10*time.Minute), real.Add(-2*time.Minute)
	n := noncetest.Nonce()
	if used, err := s.Used(ctx, n, behind, expires); err != nil || !used {
		t.Errorf("Used past expiry plus Grace on Redis's clock = %v, %v; want true, nil", used, err)
	}
	if first, err := s.Consume(ctx, n, behind, expires); err != nil || first {
		t.Errorf("Consume past expiry plus Grace on Redis's clock = %v, %v; want false, nil", first, err)
	}

	// The same through a Signer on that replica: the state checks on its
	// clock, but may have been used, and is refused.
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	signer, err := confirm.NewSigner(keys, &confirm.Options{Nonces: s})
	if err != nil {
		t.Fatal(err)
	}
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	st, err := signer.Issue(real.Add(-4*time.Minute), c) // expires 2 minutes ago
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signer.Check(behind, st, c); err != nil {
		t.Fatalf("Check on the clock behind: %v", err)
	}
	if err := signer.Verify(ctx, behind, st, c); !errors.Is(err, confirm.ErrReplayed) {
		t.Errorf("Verify on the clock behind, 2 minutes after expiry on Redis's = %v, want ErrReplayed", err)
	}
}

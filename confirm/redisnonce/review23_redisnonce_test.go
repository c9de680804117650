package redisnonce_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview23HugeTTL: with the longest TTL a Signer takes
// (math.MaxInt64, about 292 years), the key's time to live, the state's
// remaining validity plus Grace, overflowed time.Duration into a negative
// PX: Redis refused every write, and every confirmation was refused as
// "nonce store unavailable" (the memory store accepts it). The state now
// verifies once, and its key lives.
func TestReview23HugeTTL(t *testing.T) {
	r := testsvc.StartRedis(t)
	client := newClient(t, r.Addr)
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	s, err := confirm.NewSigner(keys, &confirm.Options{TTL: math.MaxInt64, Nonces: patient(redisnonce.New(client, "huge:"))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	now := time.Now()
	st, err := s.Issue(now, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(ctx, now, st, c); err != nil {
		t.Fatalf("Verify of a state with a TTL of math.MaxInt64: %v", err)
	}
	if err := s.Verify(ctx, now.Add(time.Hour), st, c); !errors.Is(err, confirm.ErrReplayed) {
		t.Errorf("second Verify = %v, want ErrReplayed", err)
	}
	ks, err := client.Keys(ctx, "huge:*").Result()
	if err != nil || len(ks) != 1 {
		t.Fatalf("keys = %v, %v; want one", ks, err)
	}
	// In milliseconds: go-redis's PTTL would overflow a time.Duration too.
	if ms, err := client.Do(ctx, "PTTL", ks[0]).Int64(); err != nil || ms < 290*365*24*3600*1000 {
		t.Errorf("PTTL = %d ms, %v; want about 292 years", ms, err)
	}
	// The store alone, with the farthest expiry a Signer's state can hold.
	st2 := patient(redisnonce.New(client, "huge:"))
	far := time.Unix(1<<62, 0)
	for i, want := range []bool{true, false} {
		if first, err := st2.Consume(ctx, "far", now, far); err != nil || first != want {
			t.Errorf("Consume #%d with expiry 2^62 s = %v, %v; want %v, nil", i+1, first, err, want)
		}
	}
}

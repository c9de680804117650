package noncetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
)

// Run runs the conformance checks as subtests. newStore is called once per
// subtest and returns a store to check; nonces are random, so stores may
// share state between subtests. The checks pass the real clock as now,
// since stores such as Redis expire keys on the server's clock.
func Run(t *testing.T, newStore func(t *testing.T) confirm.NonceStore) {
	t.Helper()
	ctx := context.Background()
	t.Run("first_use_only_once", func(t *testing.T) {
		s := newStore(t)
		now := time.Now()
		n := Nonce()
		for i, want := range []bool{true, false, false} {
			first, err := s.Consume(ctx, n, now, now.Add(time.Minute))
			if err != nil {
				t.Fatalf("Consume #%d: %v", i+1, err)
			}
			if first != want {
				t.Errorf("Consume #%d = %v, want %v", i+1, first, want)
			}
		}
	})
	t.Run("nonces_independent", func(t *testing.T) {
		s := newStore(t)
		now := time.Now()
		for i := range 3 {
			first, err := s.Consume(ctx, Nonce(), now, now.Add(time.Minute))
			if err != nil || !first {
				t.Errorf("Consume of fresh nonce #%d = %v, %v; want true, nil", i+1, first, err)
			}
		}
	})
	t.Run("expired_never_first", func(t *testing.T) {
		s := newStore(t)
		now := time.Now()
		for _, exp := range []time.Time{now, now.Add(-time.Second)} {
			first, err := s.Consume(ctx, Nonce(), now, exp)
			if err != nil {
				t.Fatalf("Consume(expires=%v): %v", exp.Sub(now), err)
			}
			if first {
				t.Errorf("Consume(expires=now%+v) = true, want false", exp.Sub(now))
			}
		}
	})
	t.Run("remembers_until_expiry", func(t *testing.T) {
		s := newStore(t)
		now := time.Now()
		n := Nonce()
		if first, err := s.Consume(ctx, n, now, now.Add(time.Minute)); err != nil || !first {
			t.Fatalf("Consume = %v, %v; want true, nil", first, err)
		}
		later := now.Add(59 * time.Second)
		if first, err := s.Consume(ctx, n, later, now.Add(time.Minute)); err != nil || first {
			t.Errorf("Consume 59s later = %v, %v; want false, nil", first, err)
		}
	})
	t.Run("concurrent_exactly_once", func(t *testing.T) {
		s := newStore(t)
		now := time.Now()
		n := Nonce()
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			firsts int
		)
		for range 16 {
			wg.Go(func() {
				first, err := s.Consume(ctx, n, now, now.Add(time.Minute))
				if err != nil {
					t.Errorf("Consume: %v", err)
				}
				if first {
					mu.Lock()
					firsts++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if firsts != 1 {
			t.Errorf("16 concurrent Consume calls: %d first, want 1", firsts)
		}
	})
}

// Nonce returns a fresh random nonce in the form [confirm.Signer] uses (32
// hex characters).
func Nonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

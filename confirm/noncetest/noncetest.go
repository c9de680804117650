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
// since stores such as Redis expire keys on the server's clock. The checks
// of Used run for a store that implements [confirm.NonceChecker] and are
// skipped for one that does not.
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
	runUsed(t, newStore)
}

// runUsed checks a [confirm.NonceChecker]'s Used.
func runUsed(t *testing.T, newStore func(t *testing.T) confirm.NonceStore) {
	t.Helper()
	ctx := context.Background()
	checker := func(t *testing.T) confirm.NonceChecker {
		t.Helper()
		c, ok := newStore(t).(confirm.NonceChecker)
		if !ok {
			t.Skip("the store does not implement confirm.NonceChecker")
		}
		return c
	}
	t.Run("used_records_nothing", func(t *testing.T) {
		s := checker(t)
		now := time.Now()
		n := Nonce()
		exp := now.Add(time.Minute)
		for i := range 2 {
			if used, err := s.Used(ctx, n, now, exp); err != nil || used {
				t.Fatalf("Used #%d of a fresh nonce = %v, %v; want false, nil", i+1, used, err)
			}
		}
		if first, err := s.Consume(ctx, n, now, exp); err != nil || !first {
			t.Errorf("Consume after Used = %v, %v; want true, nil", first, err)
		}
	})
	t.Run("used_after_consume", func(t *testing.T) {
		s := checker(t)
		now := time.Now()
		n, other := Nonce(), Nonce()
		exp := now.Add(time.Minute)
		if first, err := s.Consume(ctx, n, now, exp); err != nil || !first {
			t.Fatalf("Consume = %v, %v; want true, nil", first, err)
		}
		for _, at := range []time.Duration{0, 59 * time.Second} {
			if used, err := s.Used(ctx, n, now.Add(at), exp); err != nil || !used {
				t.Errorf("Used %v after Consume = %v, %v; want true, nil", at, used, err)
			}
		}
		if used, err := s.Used(ctx, other, now, exp); err != nil || used {
			t.Errorf("Used of another nonce = %v, %v; want false, nil", used, err)
		}
	})
	t.Run("used_when_expired", func(t *testing.T) {
		s := checker(t)
		now := time.Now()
		for _, exp := range []time.Time{now, now.Add(-time.Second)} {
			used, err := s.Used(ctx, Nonce(), now, exp)
			if err != nil {
				t.Fatalf("Used(expires=now%+v): %v", exp.Sub(now), err)
			}
			if !used {
				t.Errorf("Used(expires=now%+v) = false, want true", exp.Sub(now))
			}
		}
	})
	t.Run("used_agrees_with_concurrent_consume", func(t *testing.T) {
		s := checker(t)
		now := time.Now()
		n := Nonce()
		exp := now.Add(time.Minute)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := s.Used(ctx, n, now, exp); err != nil {
					t.Errorf("Used: %v", err)
				}
			})
		}
		first, err := s.Consume(ctx, n, now, exp)
		wg.Wait()
		if err != nil || !first {
			t.Fatalf("Consume alongside Used = %v, %v; want true, nil", first, err)
		}
		if used, err := s.Used(ctx, n, now, exp); err != nil || !used {
			t.Errorf("Used after Consume = %v, %v; want true, nil", used, err)
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

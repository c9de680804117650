package redisnonce_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/noncetest"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConformance(t *testing.T) {
	r := testsvc.StartRedis(t)
	noncetest.Run(t, func(t *testing.T) confirm.NonceStore {
		return patient(redisnonce.New(newClient(t, r.Addr), "test:"))
	})
}

// TestTwoReplicas: two clients are two replicas sharing one Redis; each
// nonce is first exactly once between them, even when they race.
func TestTwoReplicas(t *testing.T) {
	r := testsvc.StartRedis(t)
	a := patient(redisnonce.New(newClient(t, r.Addr), "shop:"))
	b := patient(redisnonce.New(newClient(t, r.Addr), "shop:"))
	ctx := context.Background()
	for range 20 {
		n := noncetest.Nonce()
		now := time.Now()
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			firsts int
		)
		for _, s := range []*redisnonce.Store{a, b, a, b} {
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
			t.Fatalf("nonce %s first on %d replicas, want 1", n, firsts)
		}
	}
}

// TestSignerReplicas: a state verified on one replica is a replay on the
// other.
func TestSignerReplicas(t *testing.T) {
	r := testsvc.StartRedis(t)
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	newReplica := func() *confirm.Signer {
		s, err := confirm.NewSigner(keys, &confirm.Options{Nonces: patient(redisnonce.New(newClient(t, r.Addr), "shop:"))})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := newReplica(), newReplica()
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	now := time.Now()
	st, err := a.Issue(now, c)
	if err != nil {
		t.Fatal(err)
	}
	// A foreign caller on replica b fails without burning the nonce.
	if err := b.Verify(context.Background(), now, st, confirm.Claims{Subject: "mallory", Tool: c.Tool, ArgsSHA256: c.ArgsSHA256}); !errors.Is(err, confirm.ErrMismatch) {
		t.Fatalf("foreign Verify on b = %v, want ErrMismatch", err)
	}
	if err := b.Verify(context.Background(), now, st, c); err != nil {
		t.Fatalf("Verify on b = %v, want nil", err)
	}
	if err := a.Verify(context.Background(), now, st, c); !errors.Is(err, confirm.ErrReplayed) {
		t.Fatalf("Verify on a after b = %v, want ErrReplayed", err)
	}
}

// TestTTL checks the key's lifetime on the server without waiting for it:
// the confirmation's remaining validity plus Grace.
func TestTTL(t *testing.T) {
	r := testsvc.StartRedis(t)
	c := newClient(t, r.Addr)
	s := patient(redisnonce.New(c, "ttl:"))
	ctx := context.Background()
	now := time.Now()
	n := noncetest.Nonce()
	if first, err := s.Consume(ctx, n, now, now.Add(90*time.Second)); err != nil || !first {
		t.Fatalf("Consume = %v, %v", first, err)
	}
	pttl, err := c.PTTL(ctx, "ttl:"+n).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Up to 2ms over: the expiry is rounded up to a millisecond, and the
	// server's clock, which the lifetime is reckoned on, down.
	want := 90*time.Second + redisnonce.Grace
	if pttl > want+2*time.Millisecond || pttl < want-5*time.Second {
		t.Errorf("PTTL = %v, want about %v", pttl, want)
	}
	// An expired nonce is never written.
	expired := noncetest.Nonce()
	if first, err := s.Consume(ctx, expired, now, now.Add(-time.Second)); err != nil || first {
		t.Fatalf("Consume(expired) = %v, %v; want false, nil", first, err)
	}
	if n, err := c.Exists(ctx, "ttl:"+expired).Result(); err != nil || n != 0 {
		t.Errorf("expired nonce key exists=%d err=%v; want 0, nil", n, err)
	}
}

func TestPrefixesIsolate(t *testing.T) {
	r := testsvc.StartRedis(t)
	c := newClient(t, r.Addr)
	ctx := context.Background()
	now := time.Now()
	n := noncetest.Nonce()
	for _, prefix := range []string{"a:", "b:"} {
		if first, err := patient(redisnonce.New(c, prefix)).Consume(ctx, n, now, now.Add(time.Minute)); err != nil || !first {
			t.Errorf("Consume under %q = %v, %v; want true, nil", prefix, first, err)
		}
	}
}

// TestUnavailable: a stopped or hung Redis refuses the confirmation with
// ErrStore, the hung one within the Timeout.
func TestUnavailable(t *testing.T) {
	r := testsvc.StartRedis(t)
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	s, err := confirm.NewSigner(keys, &confirm.Options{Nonces: redisnonce.New(newClient(t, r.Addr), "x:")})
	if err != nil {
		t.Fatal(err)
	}
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	now := time.Now()

	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Issue(now, c)
	start := time.Now()
	err = s.Verify(context.Background(), now, st, c)
	if took := time.Since(start); took > redisnonce.DefaultTimeout+time.Second {
		t.Errorf("Verify against a hung Redis took %v, want about %v", took, redisnonce.DefaultTimeout)
	}
	if !errors.Is(err, confirm.ErrStore) {
		t.Errorf("Verify against a hung Redis = %v, want ErrStore", err)
	}
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}

	r.Stop()
	st, _ = s.Issue(now, c)
	if err := s.Verify(context.Background(), now, st, c); !errors.Is(err, confirm.ErrStore) {
		t.Errorf("Verify against a stopped Redis = %v, want ErrStore", err)
	}
}

// patient gives a store a timeout long enough for a loaded CI machine, for
// the tests that are not about timeouts.
func patient(s *redisnonce.Store) *redisnonce.Store {
	s.Timeout = 10 * time.Second
	return s
}

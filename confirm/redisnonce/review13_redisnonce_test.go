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

// TestNoClientRefuses: a Store without a client (the zero Store, New with
// a nil client, or a nil *redis.Client) refuses every confirmation with an
// error. It used to panic inside the goroutine that waits for Redis, where
// no recover of the caller's can reach: the whole server process died at
// the first confirmation.
func TestNoClientRefuses(t *testing.T) {
	now := time.Now()
	stores := map[string]*redisnonce.Store{
		"zero":             {},
		"nil_interface":    redisnonce.New(nil, "x:"),
		"nil_redis_client": redisnonce.New((*redis.Client)(nil), "x:"),
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			if first, err := s.Consume(context.Background(), noncetest.Nonce(), now, now.Add(time.Minute)); err == nil || first {
				t.Errorf("Consume = %v, %v; want false and an error", first, err)
			}
			if _, err := s.Used(context.Background(), noncetest.Nonce(), now, now.Add(time.Minute)); err == nil {
				t.Errorf("Used = nil error, want an error")
			}
		})
	}
	var nilStore *redisnonce.Store
	if first, err := nilStore.Consume(context.Background(), noncetest.Nonce(), now, now.Add(time.Minute)); err == nil || first {
		t.Errorf("nil *Store: Consume = %v, %v; want false and an error", first, err)
	}

	// Through the signer: refused as a store failure, not a crash.
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	sg, err := confirm.NewSigner(keys, &confirm.Options{Nonces: &redisnonce.Store{}})
	if err != nil {
		t.Fatal(err)
	}
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	st, err := sg.Issue(now, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := sg.Verify(context.Background(), now, st, c); !errors.Is(err, confirm.ErrStore) {
		t.Errorf("Verify with a client-less store = %v, want ErrStore", err)
	}
}

// TestTwoProcessesAtTheEdge: two replicas (two clients, two pools) race to
// consume the same nonce a millisecond before it expires; exactly one
// wins, and afterwards both see it as used until the key is gone.
func TestTwoProcessesAtTheEdge(t *testing.T) {
	r := testsvc.StartRedis(t)
	a := patient(redisnonce.New(newClient(t, r.Addr), "edge:"))
	b := patient(redisnonce.New(newClient(t, r.Addr), "edge:"))
	ctx := context.Background()
	for range 20 {
		n := noncetest.Nonce()
		now := time.Now()
		exp := now.Add(time.Millisecond)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			firsts int
		)
		for _, s := range []*redisnonce.Store{a, b, a, b} {
			wg.Go(func() {
				first, err := s.Consume(ctx, n, now, exp)
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
			t.Fatalf("nonce first on %d of 4 racing calls, want 1", firsts)
		}
		for _, s := range []*redisnonce.Store{a, b} {
			if used, err := s.Used(ctx, n, now, exp); err != nil || !used {
				t.Errorf("Used after the race = %v, %v; want true, nil", used, err)
			}
			// At and past its expiry, a nonce is never first, whatever Redis holds.
			if first, err := s.Consume(ctx, n, exp, exp); err != nil || first {
				t.Errorf("Consume at expiry = %v, %v; want false, nil", first, err)
			}
		}
	}
}

// TestFullRedisFailsClosed: under maxmemory-policy noeviction (what the
// package doc asks for), a Redis out of memory refuses the nonce's write,
// and the confirmation is refused rather than accepted unrecorded.
func TestFullRedisFailsClosed(t *testing.T) {
	r := testsvc.StartRedis(t)
	c := newClient(t, r.Addr)
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	sg, err := confirm.NewSigner(keys, &confirm.Options{Nonces: patient(redisnonce.New(c, "full:"))})
	if err != nil {
		t.Fatal(err)
	}
	cl := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	now := time.Now()
	st, err := sg.Issue(now, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := sg.Verify(ctx, now, st, cl); !errors.Is(err, confirm.ErrStore) {
		t.Errorf("Verify against a full Redis = %v, want ErrStore", err)
	}
}

package redisnonce_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestDeploymentsShareRedisAndPrefix: two deployments with their own
// HMAC keys (here even the same key id) keep their nonces in one Redis
// under the same prefix. A state of one is refused by the other without
// using it up, and each accepts its own states once.
func TestDeploymentsShareRedisAndPrefix(t *testing.T) {
	r := testsvc.StartRedis(t)
	deployment := func(secret string) *confirm.Signer {
		s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte(secret)}},
			&confirm.Options{Nonces: patient(redisnonce.New(newClient(t, r.Addr), "mcpguard:confirm:"))})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	shop, admin := deployment("shop-shop-shop-shop-shop-shop-shop!"), deployment("admin-admin-admin-admin-admin-adm!")
	ctx := context.Background()
	now := time.Now()
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	st, err := shop.Issue(now, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Verify(ctx, now, st, c); !errors.Is(err, confirm.ErrBadSignature) {
		t.Errorf("the other deployment's Verify = %v, want ErrBadSignature", err)
	}
	if err := shop.Verify(ctx, now, st, c); err != nil {
		t.Errorf("own Verify after the other deployment's = %v, want nil", err)
	}
	if err := shop.Verify(ctx, now, st, c); !errors.Is(err, confirm.ErrReplayed) {
		t.Errorf("second Verify = %v, want ErrReplayed", err)
	}
	st, err = admin.Issue(now, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Verify(ctx, now, st, c); err != nil {
		t.Errorf("the other deployment's own state = %v, want nil", err)
	}
}

// TestSkewWithinGrace: a replica whose clock runs ahead consumes a state
// (its key then lives for less real time); a replica whose clock is right
// still counts the state as used until the state expires on its clock,
// as long as the two clocks differ by no more than Grace. The key's
// remaining life is read from Redis rather than waited for.
func TestSkewWithinGrace(t *testing.T) {
	r := testsvc.StartRedis(t)
	rdb := newClient(t, r.Addr)
	s := patient(redisnonce.New(rdb, "skew:"))
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, &confirm.Options{Nonces: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	for _, skew := range []time.Duration{0, redisnonce.Grace / 2, redisnonce.Grace - time.Second} {
		now := time.Now()
		st, err := signer.Issue(now, c) // issued on the right clock
		if err != nil {
			t.Fatal(err)
		}
		before, _ := rdb.Keys(ctx, "skew:*").Result()
		if err := signer.Verify(ctx, now.Add(skew), st, c); err != nil { // used on the clock ahead
			t.Fatalf("skew %v: Verify = %v", skew, err)
		}
		after, err := rdb.Keys(ctx, "skew:*").Result()
		if err != nil || len(after) != len(before)+1 {
			t.Fatalf("skew %v: keys %v then %v (%v); want one more", skew, before, after, err)
		}
		key := newest(before, after)
		pttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		// The state expires at now+TTL, rounded down to the second, on the
		// right clock: the key must outlive that.
		left := time.Until(time.Unix(now.Add(signer.TTL()).Unix(), 0))
		if pttl < left {
			t.Errorf("skew %v: the key lives %v more, the state %v more on the right clock: a replay there would be accepted", skew, pttl, left)
		}
		if err := signer.Verify(ctx, now, st, c); !errors.Is(err, confirm.ErrReplayed) {
			t.Errorf("skew %v: replay on the right clock = %v, want ErrReplayed", skew, err)
		}
	}
}

// newest returns the key in after that is not in before.
func newest(before, after []string) string {
	seen := make(map[string]bool, len(before))
	for _, k := range before {
		seen[k] = true
	}
	for _, k := range after {
		if !seen[k] {
			return k
		}
	}
	return ""
}

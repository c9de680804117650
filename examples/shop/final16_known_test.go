package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/redis/go-redis/v9"
)

// pttlCalls returns how many PTTL commands the Redis server has run.
func pttlCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_pttl:calls=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return 0
}

// TestFinal16KnownSessionNoRoundTripPerCall: with --redis, the memory of
// sessions seen valid asked Redis (PTTL) on every request of every
// session, a round trip more per call on top of the limiters'. A replica
// now keeps what it wrote or read there, so a session in use costs a
// round trip only once half of knownTTL has passed since it was written;
// the other replica still learns it from Redis, once; and a session one
// replica drops is not known to a replica that never held it.
func TestFinal16KnownSessionNoRoundTripPerCall(t *testing.T) {
	ctx := context.Background()
	rd := testsvc.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rd.Addr})
	t.Cleanup(func() { rdb.Close() })
	now := time.Now()
	a := newKnownSessions(rdb, knownTTL, knownMax)
	b := newKnownSessions(rdb, knownTTL, knownMax)
	a.add(ctx, "ada", now)
	before := pttlCalls(t, rdb)
	for i := range 5 {
		if known, stale := a.has(ctx, "ada", now.Add(time.Duration(i)*time.Minute)); !known || stale {
			t.Fatalf("replica a, +%dm: has(ada) = %v, %v; want true, false", i, known, stale)
		}
	}
	if n := pttlCalls(t, rdb) - before; n != 0 {
		t.Errorf("5 checks of a session replica a wrote asked Redis %d times (PTTL), want 0", n)
	}
	before = pttlCalls(t, rdb)
	for i := range 5 {
		if known, stale := b.has(ctx, "ada", now.Add(time.Duration(i)*time.Minute)); !known || stale {
			t.Fatalf("replica b, +%dm: has(ada) = %v, %v; want true, false", i, known, stale)
		}
	}
	if n := pttlCalls(t, rdb) - before; n != 1 {
		t.Errorf("5 checks on replica b of a session replica a wrote asked Redis %d times (PTTL), want 1", n)
	}
	// Half of the TTL on: stale, and asked again (another replica may
	// have written it since).
	before = pttlCalls(t, rdb)
	if known, stale := a.has(ctx, "ada", now.Add(knownTTL/2)); !known {
		t.Errorf("replica a, half the TTL on: has(ada) = %v, %v; want known", known, stale)
	}
	if n := pttlCalls(t, rdb) - before; n != 1 {
		t.Errorf("a check half the TTL on asked Redis %d times, want 1", n)
	}
	// Dropped on b: gone from Redis, so a third replica does not know it.
	b.drop(ctx, "ada")
	c := newKnownSessions(rdb, knownTTL, knownMax)
	if known, _ := c.has(ctx, "ada", now); known {
		t.Error("replica c knows a session replica b dropped")
	}
	if known, _ := b.has(ctx, "ada", now); known {
		t.Error("replica b knows a session it dropped")
	}
}

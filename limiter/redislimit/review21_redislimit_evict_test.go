package redislimit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestCheckServerWantsNoEviction: a Redis that may evict keys under memory
// pressure forgets spent budgets and slots in flight; CheckServer refuses
// every maxmemory-policy but noeviction, a Ring of several shards, and a
// client it cannot ask.
func TestCheckServerWantsNoEviction(t *testing.T) {
	srv := testsvc.StartRedis(t)
	direct := newClient(t, srv.Addr)
	ctx := context.Background()
	s := redislimit.New(newClient(t, srv.Addr), nil)
	t.Cleanup(func() { direct.ConfigSet(ctx, "maxmemory-policy", "noeviction") })
	for _, p := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		if err := direct.ConfigSet(ctx, "maxmemory-policy", p).Err(); err != nil {
			t.Fatal(err)
		}
		err := s.CheckServer(ctx)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.HasPrefix(err.Error(), "redislimit: ") {
			t.Errorf("CheckServer under maxmemory-policy %s = %v, want an error naming it", p, err)
		}
	}
	if err := direct.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckServer(ctx); err != nil {
		t.Errorf("CheckServer under noeviction = %v, want nil", err)
	}

	// A Scripter that is not a client: the policy cannot be read.
	only := struct{ redis.Scripter }{newClient(t, srv.Addr)}
	if err := redislimit.New(only, nil).CheckServer(ctx); err == nil {
		t.Error("CheckServer through a bare Scripter = nil, want an error")
	}
	if err := redislimit.New(nil, nil).CheckServer(ctx); err == nil {
		t.Error("CheckServer without a client = nil, want an error")
	}
	var nilClient *redis.Client
	if err := redislimit.New(nilClient, nil).CheckServer(ctx); err == nil {
		t.Error("CheckServer with a nil *redis.Client = nil, want an error")
	}

	other := testsvc.StartRedis(t)
	two := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr, "b": other.Addr}})
	t.Cleanup(func() { two.Close() })
	if err := redislimit.New(two, nil).CheckServer(ctx); err == nil || !strings.Contains(err.Error(), "Ring of 2 shards") {
		t.Errorf("CheckServer of a Ring of two shards = %v, want an error", err)
	}
	one := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr}})
	t.Cleanup(func() { one.Close() })
	if err := redislimit.New(one, nil).CheckServer(ctx); err != nil {
		t.Errorf("CheckServer of a Ring of one noeviction shard = %v, want nil", err)
	}
}

package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview21RedisThatEvictsRefused: a Redis whose maxmemory-policy may
// evict keys would forget used confirmations, spent budgets and slots in
// flight under memory pressure; the shop does not start on one, and says
// why. On noeviction it starts.
func TestReview21RedisThatEvictsRefused(t *testing.T) {
	rd := testsvc.StartRedis(t)
	direct := redis.NewClient(&redis.Options{Addr: rd.Addr})
	t.Cleanup(func() { direct.Close() })
	ctx := context.Background()
	if err := direct.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	onRedis(rd.Addr, nil)(&cfg)
	st, err := startStack(cfg, httpOptions{}, io.Discard, nil, nil)
	if err == nil {
		st.stop()
		t.Fatal("the shop started on a Redis with maxmemory-policy volatile-lru")
	}
	if msg := err.Error(); !strings.Contains(msg, "--redis") || !strings.Contains(msg, `"volatile-lru"`) || !strings.Contains(msg, "noeviction") {
		t.Errorf("error = %q, want it to name --redis, the policy and noeviction", msg)
	}
	if err := direct.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	newStack(t, onRedis(rd.Addr, nil), nil)
}

package main

import (
	"io"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview21RedisThatEvictsRefused: a Redis whose maxmemory-policy may
// evict keys would forget spent budgets under memory pressure; the server
// does not start on one (exit 1) and says why.
func TestReview21RedisThatEvictsRefused(t *testing.T) {
	r := testsvc.StartRedis(t)
	direct := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { direct.Close() })
	if err := direct.ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir(), "--redis", r.Addr}, io.Discard, stderr)
	if msg := stderr.String(); code != 1 || !strings.Contains(msg, "--redis") || !strings.Contains(msg, `"allkeys-lru"`) || !strings.Contains(msg, "noeviction") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming --redis, the policy and noeviction", code, msg)
	}
}

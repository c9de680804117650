package redisevict_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/redisevict"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview38NoClient pins that Check refuses a nil client with its own
// error rather than passing it: a store built without a client must not
// read as one whose Redis keeps its keys.
func TestReview38NoClient(t *testing.T) {
	if err := redisevict.Check(context.Background(), nil, "used nonces"); err == nil || !strings.Contains(err.Error(), "no Redis client") {
		t.Errorf("Check(nil) = %v, want an error saying there is no Redis client", err)
	}
}

// TestReview38Cluster pins Check on a Redis Cluster (one node, all slots):
// a master with noeviction passes; one whose maxmemory-policy evicts is
// refused, the error naming the master and the policy, as a single
// server's would be; a cluster no master of which answers is refused as
// unreadable. A cluster that evicts loses spent budgets and used nonces,
// so letting it pass fails open.
func TestReview38Cluster(t *testing.T) {
	ctx := context.Background()
	addr := testsvc.StartRedisCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { c.Close() })
	if err := redisevict.Check(ctx, c, "used nonces"); err != nil {
		t.Fatalf("Check(cluster with noeviction) = %v, want nil", err)
	}
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	// The node's address as the cluster gives it: a one-node cluster
	// announces no IP, so go-redis has ":port" for it.
	_, port, _ := strings.Cut(addr, ":")
	err := redisevict.Check(ctx, c, "used nonces")
	if err == nil || !strings.Contains(err.Error(), "master ") || !strings.Contains(err.Error(), ":"+port+": ") || !strings.Contains(err.Error(), `"allkeys-lru"`) ||
		!strings.Contains(err.Error(), "used nonces") {
		t.Errorf("Check(cluster with allkeys-lru) = %v, want an error naming the master (port %s), the policy and the keys", err, port)
	}

	closed := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	closed.Close()
	if err := redisevict.Check(ctx, closed, "used nonces"); err == nil || !strings.Contains(err.Error(), "cannot read the cluster's masters") {
		t.Errorf("Check(closed cluster client) = %v, want an error saying the masters cannot be read", err)
	}
}

package redisevict_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/redisevict"
)

// hungServer listens on 127.0.0.1, accepts connections and never answers.
func hungServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestReview21bCheckHungServer: a server that never answers INFO ends
// Check with ctx, on a client without ContextTimeoutEnabled too (go-redis
// then waits up to its ReadTimeout, 3 s by default, and more on retries).
func TestReview21bCheckHungServer(t *testing.T) {
	addr := hungServer(t)
	for _, tt := range []struct {
		name   string
		client any
	}{
		{"client", redis.NewClient(&redis.Options{Addr: addr})},
		{"cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { tt.client.(interface{ Close() error }).Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := redisevict.Check(ctx, tt.client, "keys")
			if d := time.Since(start); err == nil || d > 2500*time.Millisecond {
				t.Fatalf("Check of a hung server = %v after %v; want an error soon after the context's 200ms (not after the 3s ReadTimeout)", err, d)
			}
		})
	}
	// A context already done ends it at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	start := time.Now()
	if err := redisevict.Check(ctx, c, "keys"); err == nil || time.Since(start) > time.Second {
		t.Fatalf("Check with a cancelled context = %v after %v", err, time.Since(start))
	}
}

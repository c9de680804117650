package redislimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/redis/go-redis/v9"
)

// Every replica of a server builds its limiter on the same Redis; they then
// share the limits exactly. (This example needs a Redis server, so it is
// compiled but not run; TestReplicasShareLimitsExactly runs the same against
// a real one.)
func Example() {
	client := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		MaxRetries:            -1,   // a retried decision after a lost reply would take rate and spend twice
		ContextTimeoutEnabled: true, // no script sent after its caller was answered
	})
	defer client.Close()
	store := redislimit.New(client, &redislimit.Options{Lease: 10 * time.Minute})
	// Not serving on a Redis that may evict the budgets (maxmemory-policy
	// other than noeviction) or that cannot be reached.
	if err := store.CheckServer(context.Background()); err != nil {
		panic(err)
	}
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 32},
	}, &limiter.Options{
		Store:         store,
		FailOpenReads: true, // reads go on when Redis is down; writes are denied
	})
	if err != nil {
		panic(err)
	}
	d := l.AllowAt(context.Background(), time.Now(), limiter.Request{Session: "s", User: "ann", Tool: "search", Calls: 1})
	defer l.Release(d)
	if d.Err != nil {
		fmt.Println("limiter degraded:", d.Err)
	}
	fmt.Println("allowed:", d.Allowed)
}

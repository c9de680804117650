package redislimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/redis/go-redis/v9"
)

// TestReview25bNoClientFailsClosed: a Store without a usable client
// (New(nil, ...), or a nil *redis.Client, as a configuration path that
// never set the client leaves it; the zero Store) refuses every batch with
// an error, so
// that the limiter fails as configured (closed by default), as
// [redislimit.Store.CheckServer] already does. The script ran on its own
// goroutine, where the client's nil dereference panicked beyond any
// recover of the caller's: the first tool call ended the process.
func TestReview25bNoClientFailsClosed(t *testing.T) {
	ctx := context.Background()
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute}
	opts := &redislimit.Options{Timeout: time.Second}
	for _, tc := range []struct {
		name  string
		store *redislimit.Store
	}{
		{"nil_interface", redislimit.New(nil, opts)},
		{"nil_client", redislimit.New((*redis.Client)(nil), opts)},
		{"nil_cluster_client", redislimit.New((*redis.ClusterClient)(nil), opts)},
		{"zero_store", &redislimit.Store{}},
		{"nil_store", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.store
			l, err := limiter.New([]limiter.Limit{lim}, &limiter.Options{Store: s})
			if err != nil {
				t.Fatal(err)
			}
			d := l.AllowAt(ctx, time.Now(), limiter.Request{Session: "s", Calls: 1})
			if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
				t.Errorf("AllowAt: allowed %v, err %v; want denied with an error that unwraps to ErrStoreUnavailable", d.Allowed, d.Err)
			}
			for _, b := range []*limiter.Batch{
				{Release: true, Lease: 1, Checks: []limiter.Check{{ID: "c", Kind: limiter.Concurrency, Max: 1, N: 1}}},
				{Refund: true, Lease: 2, Checks: []limiter.Check{{ID: lim.ID(), Kind: limiter.Rate, Max: 5, Window: time.Minute, N: 1}}},
			} {
				if err := s.Apply(ctx, time.Now(), b); err == nil {
					t.Errorf("Apply(%+v) with no client: nil error", b)
				}
			}
		})
	}
}

package main

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview22bLargestCapsOnRedis: the largest --rate and --max-in-flight
// (2147483647) on --redis build a shop whose calls, listings and session
// checks pass: the per-user rate, the global in-flight cap, and the session
// and stranger checks at twice the rate are all limits the Redis store's
// script takes.
func TestReview22bLargestCapsOnRedis(t *testing.T) {
	rd := testsvc.StartRedis(t)
	st := newStack(t, onRedis(rd.Addr, func(c *config) { c.rate, c.inFlight = maxCap, maxCap }), nil)
	ada := connect(t, st, sessionCustomer, nil)
	for range 3 {
		ok(t, ada, "list_categories", map[string]any{})
	}
	if _, err := ada.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("tools/list with the largest caps on Redis: %v", err)
	}
}

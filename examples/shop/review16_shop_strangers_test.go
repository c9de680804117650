package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// listTools lists the tools as session and returns the error, if any.
func listTools(t *testing.T, st *stack, session string) error {
	t.Helper()
	_, err := connect(t, st, session, nil).ListTools(context.Background(), nil)
	return err
}

// TestReview16UnknownSessionsCapped: each session's requests are capped
// (120 a minute) before its check reaches the gateway, but the cap is keyed
// by the session, so a caller with no session at all sent a new made-up
// one with each request, and each went to the gateway as GET
// /api/auth/me: 30 requests, 30 checks, without limit, against the one
// gateway that sees every MCP user from one address. Checks of sessions
// the gateway refused now share one budget over the whole server, twice
// the rate a minute (2 here): past it a session not seen valid lately is
// refused before its check leaves, RATE_LIMIT_EXCEEDED with the wait. A
// check the gateway accepts gives its unit back, so the four real
// sessions pass however many there are, and a session seen valid is never
// held back by the budget, so the signed-in keep working while strangers
// are turned away.
func TestReview16UnknownSessionsCapped(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := newStack(t, func(c *config) { c.rate, c.now = 1, func() time.Time { return now } }, nil)
	for _, s := range []string{sessionCustomer, sessionCustomer2, sessionAdmin, sessionSuper} {
		if err := listTools(t, st, s); err != nil {
			t.Fatalf("tools/list as %s: %v", s, err)
		}
	}
	before := st.gw.count("GET", "/api/auth/me")
	var refused []string
	for i := range 30 {
		err := listTools(t, st, fmt.Sprintf("sess-made-up-%d", i))
		if err == nil {
			t.Fatalf("tools/list with a made-up session: allowed")
		}
		if strings.Contains(err.Error(), "RATE_LIMIT_EXCEEDED") || strings.Contains(err.Error(), "too many") {
			refused = append(refused, err.Error())
		}
	}
	if n := st.gw.count("GET", "/api/auth/me") - before; n > 2 {
		t.Errorf("30 requests with made-up sessions sent %d session checks to the gateway, want at most 2", n)
	}
	if len(refused) < 28 {
		t.Errorf("%d of 30 made-up sessions refused as too many, want 28", len(refused))
	}
	before = st.gw.count("GET", "/api/auth/me")
	if err := listTools(t, st, sessionCustomer); err != nil {
		t.Errorf("ada, seen valid, during the flood: %v", err)
	}
	if n := st.gw.count("GET", "/api/auth/me") - before; n != 1 {
		t.Errorf("ada's listing sent %d session checks, want 1 (checked on every request, no cache)", n)
	}
	st.gw.revoke(sessionCustomer2)
	if err := listTools(t, st, sessionCustomer2); err == nil || !strings.Contains(err.Error(), "invalid, expired or revoked") {
		t.Errorf("bo, revoked: %v, want refused as revoked", err)
	}
	now = now.Add(time.Minute)
	st.gw.mu.Lock()
	st.gw.sessions["sess-new"] = "u-1002"
	st.gw.mu.Unlock()
	if err := listTools(t, st, "sess-new"); err != nil {
		t.Errorf("a new valid session a minute later: %v", err)
	}
}

// TestReview16UnknownSessionsSharedOnRedis: with --redis the budget of
// refused session checks holds over every replica, and so does the memory
// of sessions seen valid: ada, accepted on replica a, is not held back on
// replica b while strangers are.
func TestReview16UnknownSessionsSharedOnRedis(t *testing.T) {
	rd := testsvc.StartRedis(t)
	mod := onRedis(rd.Addr, func(c *config) { c.rate = 1 })
	a, b := newStack(t, mod, nil), newStack(t, mod, nil)
	if err := listTools(t, a, sessionCustomer); err != nil {
		t.Fatalf("ada on replica a: %v", err)
	}
	_ = listTools(t, a, "sess-made-up-a1")
	_ = listTools(t, a, "sess-made-up-a2")
	before := b.gw.count("GET", "/api/auth/me")
	err := listTools(t, b, "sess-made-up-b1")
	if err == nil || !strings.Contains(err.Error(), "too many") {
		t.Errorf("a third made-up session, on replica b: %v, want refused as too many", err)
	}
	if n := b.gw.count("GET", "/api/auth/me") - before; n != 0 {
		t.Errorf("replica b sent %d session checks past the shared budget", n)
	}
	if err := listTools(t, b, sessionCustomer); err != nil {
		t.Errorf("ada on replica b: %v", err)
	}
}

// TestReview16KnownSessionsBounded: the memory of sessions seen valid holds
// at most max of them, forgetting the oldest first, and none past ttl.
func TestReview16KnownSessionsBounded(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	k := newKnownSessions(nil, time.Minute, 2)
	k.add(ctx, "a", t0)
	k.add(ctx, "b", t0.Add(time.Second))
	k.add(ctx, "c", t0.Add(2*time.Second))
	for _, tc := range []struct {
		key  string
		at   time.Time
		want bool
	}{
		{"a", t0.Add(3 * time.Second), false}, // the oldest, forgotten for c
		{"b", t0.Add(3 * time.Second), true},
		{"c", t0.Add(3 * time.Second), true},
		{"c", t0.Add(62 * time.Second), false}, // past ttl
	} {
		if got, _ := k.has(ctx, tc.key, tc.at); got != tc.want {
			t.Errorf("has(%q, +%v) = %v, want %v", tc.key, tc.at.Sub(t0), got, tc.want)
		}
	}
	k.drop(ctx, "b")
	if known, _ := k.has(ctx, "b", t0.Add(3*time.Second)); known {
		t.Error("has(b) after drop(b) = true")
	}
	if n := len(k.seen); n > 2 {
		t.Errorf("%d sessions remembered, want at most 2", n)
	}
	var none *knownSessions
	none.add(ctx, "a", t0)
	if known, _ := none.has(ctx, "a", t0); known {
		t.Error("a nil knownSessions knows a session")
	}
}

// TestSignedInKeepWorkingPastTheMemory: a session in use is remembered as
// valid for as long as it is used, not only for knownTTL from its first
// check: 30 minutes later, during a flood of made-up sessions, it still
// passes (found by a review: the memory was written only at the first
// check).
func TestSignedInKeepWorkingPastTheMemory(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := newStack(t, func(c *config) { c.rate, c.now = 1, func() time.Time { return now } }, nil)
	for i := 0; i < 30; i++ {
		if err := listTools(t, st, sessionCustomer); err != nil {
			t.Fatalf("minute %d: %v", i, err)
		}
		now = now.Add(time.Minute)
	}
	for i := range 5 {
		_ = listTools(t, st, fmt.Sprintf("sess-made-up-%d", i))
	}
	if err := listTools(t, st, sessionCustomer); err != nil {
		t.Errorf("a session in use for 30 minutes, during a flood: %v", err)
	}
}

package main

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// knownSessions remembers, by key (sessionKey, never the session), the
// sessions the gateway accepted, for ttl from a check that found each
// valid (a check writes it again once half of ttl has passed, so a
// session in use stays known), so that they never wait on the budget of
// refused session checks (sessionAuth.strangers). In memory it keeps at
// most max of them (the oldest go first); with a Redis client it keeps
// them there, one key each that expires after ttl, shared by every
// replica on that Redis, so that a session valid on one is known to all,
// and each replica keeps in memory too (max of them) what it wrote or
// read there, so that a session in use costs no round trip until half of
// ttl has passed since it was written. A session it forgets, or that
// Redis cannot tell about in time (250 ms), is only checked against that
// budget, and gives its unit back when valid. A nil *knownSessions knows
// nothing. It is safe for concurrent use.
type knownSessions struct {
	rdb *redis.Client // nil: in memory only
	ttl time.Duration
	max int

	mu   sync.Mutex
	seen map[string]time.Time // when each was written (on Redis, as its expiry tells)
}

// redisKnownPrefix prefixes the Redis keys of the sessions seen valid.
const redisKnownPrefix = "roboshop:known:"

// redisKnownTimeout bounds each Redis call of a knownSessions.
const redisKnownTimeout = 250 * time.Millisecond

func newKnownSessions(rdb *redis.Client, ttl time.Duration, max int) *knownSessions {
	return &knownSessions{rdb: rdb, ttl: ttl, max: max, seen: map[string]time.Time{}}
}

// has reports whether the session of key was seen valid within ttl, and
// whether that memory is stale: half of ttl or more has passed since it
// was written, and a check that finds the session valid again should
// write it again (add). On Redis it asks Redis (PTTL, one round trip) only
// when this replica's memory does not hold the session written less than
// half of ttl ago: a session another replica dropped meanwhile is then
// taken as known here, and so is checked with the gateway without the
// budget, once (a refusal drops it here too).
func (k *knownSessions) has(ctx context.Context, key string, now time.Time) (known, stale bool) {
	if k == nil {
		return false, false
	}
	k.mu.Lock()
	t, ok := k.seen[key]
	k.mu.Unlock()
	if ok && now.Sub(t) < k.ttl/2 {
		return true, false
	}
	if k.rdb == nil {
		if !ok || now.Sub(t) >= k.ttl {
			return false, false
		}
		return true, true
	}
	ctx, cancel := context.WithTimeout(ctx, redisKnownTimeout)
	defer cancel()
	left, err := k.rdb.PTTL(ctx, redisKnownPrefix+key).Result()
	if err != nil || left <= 0 { // -2: no such key; -1: no expiry (not ours)
		return false, false
	}
	k.remember(key, now.Add(left-k.ttl), now)
	return true, left <= k.ttl/2
}

// add remembers that the session of key was seen valid at now.
func (k *knownSessions) add(ctx context.Context, key string, now time.Time) {
	if k == nil {
		return
	}
	if k.rdb != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisKnownTimeout)
		defer cancel()
		if k.rdb.Set(ctx, redisKnownPrefix+key, "1", k.ttl).Err() != nil {
			return // not on Redis: not here either, or the replicas disagree for longer
		}
	}
	k.remember(key, now, now)
}

// remember notes in memory that the session of key was written at t,
// forgetting those past ttl at now and then the oldest, to keep at most
// max.
func (k *knownSessions) remember(key string, t, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.seen[key]; !ok && len(k.seen) >= k.max {
		oldest := ""
		for s, t := range k.seen {
			if now.Sub(t) >= k.ttl {
				delete(k.seen, s)
			} else if oldest == "" || t.Before(k.seen[oldest]) {
				oldest = s
			}
		}
		if len(k.seen) >= k.max {
			delete(k.seen, oldest)
		}
	}
	k.seen[key] = t
}

// drop forgets the session of key: the gateway refused it.
func (k *knownSessions) drop(ctx context.Context, key string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	delete(k.seen, key)
	k.mu.Unlock()
	if k.rdb != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisKnownTimeout)
		defer cancel()
		_ = k.rdb.Del(ctx, redisKnownPrefix+key).Err()
	}
}

// Package redisnonce is a Redis-backed
// [github.com/mcpguard/mcpguard/confirm.NonceStore], so that several server
// replicas accept each confirmation once between them and nonces survive a
// restart of any one replica.
//
// Each nonce is one key, written by a short Lua script that does a SET NX
// PX ttl: one round trip, atomic on the Redis server. The value written is
// random and the call's own, so a command that go-redis sends again after
// losing the reply recognises its own write and is not taken for a replay;
// and a call that returns an error (so the confirmation is refused) then
// deletes its own write if it reached Redis, so that the client's retry
// with the same state is accepted rather than told the state was used. The
// key lives until the confirmation's expiry plus [Grace] on the Redis
// server's clock (TIME), which all replicas share, and a nonce whose
// expiry plus Grace has passed on that clock is never first: whatever
// their clocks read, replicas accept a confirmation once between them (one
// whose clock lags by more than Grace is refused its late states). So the
// store needs Redis 5 or later: earlier versions refuse a script that
// writes after reading TIME, and every confirmation is then refused. Keys
// are prefixed, so one Redis can serve several deployments. A Redis user
// with an ACL needs EVAL (and, inside the scripts, TIME, GET, EXISTS, SET
// and DEL) on those keys; without them every confirmation is refused.
// [Store.CheckServer] needs INFO too.
//
// A nonce is remembered only as long as its key: a Redis that evicts keys
// under memory pressure (any maxmemory-policy but noeviction, the
// volatile-* ones included, since every nonce key has a TTL), that loses
// a write in a failover to a replica that had not received it, or that
// restarts without having persisted it (no appendonly; RDB snapshots keep
// only the writes before the last one), or that is flushed (FLUSHALL,
// FLUSHDB) may accept a confirmation twice.
// Use noeviction, under which a full Redis refuses the write and the
// confirmation fails closed, and call [Store.CheckServer] at start-up: it
// refuses any other policy (and a Ring of several shards), so that a
// misconfigured Redis stops the deployment rather than forgets nonces.
// For the same reason, give [New] a single server, a failover client or a
// cluster, not a *redis.Ring of several shards: a Ring moves the keys of a
// shard it finds down to the others, where the nonces it held are unknown.
package redisnonce

// Package redisnonce is a Redis-backed
// [github.com/mcpguard/mcpguard/confirm.NonceStore], so that several server
// replicas accept each confirmation once between them and nonces survive a
// restart of any one replica.
//
// Each nonce is one key, written with SET key 1 PX ttl NX: one round trip,
// atomic on the Redis server. The key lives until the confirmation's expiry
// plus [Grace], which covers clock skew between replicas. Keys are prefixed,
// so one Redis can serve several deployments.
//
// A nonce is remembered only as long as its key: a Redis that evicts keys
// under memory pressure (any maxmemory-policy but noeviction, the
// volatile-* ones included, since every nonce key has a TTL) or that loses
// a write in a failover to a replica that had not received it may accept a
// confirmation twice. Use noeviction, under which a full Redis refuses the
// write and the confirmation fails closed. For the same reason, give [New]
// a single server, a failover client or a cluster, not a *redis.Ring of
// several shards: a Ring moves the keys of a shard it finds down to the
// others, where the nonces it held are unknown.
package redisnonce

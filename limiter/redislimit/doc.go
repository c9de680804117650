// Package redislimit is a [limiter.Store] on Redis, for limits shared by
// many replicas of a server.
//
// Every decision is one Lua script, run with EVALSHA in one round trip
// (two the first time after Redis has lost its script cache, by a restart
// or SCRIPT FLUSH: NOSCRIPT, then EVAL, the decision still made once): it
// reads the time from the Redis server (TIME), evaluates every limit of the
// call, and writes only if all of them allow it. Replicas therefore share
// one clock and one state, and decide exactly as one in-memory limiter
// would, with a resolution of one microsecond. The store needs Redis 5 or
// later: earlier versions refuse a script that writes after reading TIME,
// and every decision then fails.
//
// Rate and spend state is one key per limit and bucket key holding the GCRA
// theoretical arrival time, expiring when the bucket is full again, so idle
// keys vanish by themselves. The key names the limit by [limiter.Limit.ID] (kind,
// scope, window and tool, not Max), so replicas must run the same limits:
// a replica whose limit has another window keeps budgets of its own (a
// caller whose calls alternate gets both), and one with another Max reads
// the shared state against its own cap. In-flight slots are leases: members of a sorted
// set scored by their expiry. Releasing a slot removes its lease; a release
// that cannot reach Redis is sent again in the background for about 13
// seconds; a replica that crashes with calls in flight loses them only until
// the leases expire ([Options].Lease), after which the slots are free again.
// Set Lease above the longest a tool call may run.
//
// The state is only as durable as Redis keeps it: a Redis that restarts
// without persistence, or that evicts keys under memory pressure (every key
// of the store has an expiry, so volatile-* policies evict them too; use
// noeviction), forgets spent budgets and the slots of calls in flight, and
// admits their worth again. Call [Store.CheckServer] at start-up and do
// not serve when it fails: it refuses a Redis whose maxmemory-policy is
// not noeviction (it runs INFO, so a Redis user with an ACL needs that
// command) and a *redis.Ring of several shards, which moves the keys of a
// shard it finds down to the others. A key under the prefix that holds
// something the store never writes (another type, a value that is not a
// time) makes every decision and refund that reads it fail with an error,
// changing nothing (the limiter then fails closed, unless told to fail
// open).
//
// Every call to Redis is bounded by [Options].Timeout (250ms by default),
// whatever the client's own timeouts. When Redis cannot be reached in time,
// [Store.Apply] returns an error and the [limiter.Limiter] applies its
// fail-open or fail-closed policy (a call whose own context ended first is
// denied either way). A decision that timed out may still have
// been applied by Redis: the limiter then abandons its lease in the
// background, which frees its in-flight slots within seconds (or, should the
// reservation arrive later, makes it take nothing); what it took from rate
// and spend stays taken. An acquire that the client retries after a lost
// reply is carried out once when the decision holds an in-flight slot;
// without one, its rate and spend are taken twice, so a client for the
// limiter is best set not to retry (MaxRetries -1 in go-redis), and to
// honour contexts (ContextTimeoutEnabled): without that, go-redis may send
// a decision's script after its caller was answered (once a hung Redis
// came back and finished a new connection's handshake), and it is carried
// out then.
//
// The store refunds ([limiter.RefundStore]): [limiter.Limiter.Refund] is one
// script round trip, at the server's time, that moves each rate and spend
// bucket back by what the decision took, never past full (a bucket the
// refund fills is deleted). A refund that times out may still be applied
// by Redis later; the limiter reports it failed. A refund that the client
// retries after a lost reply is carried out once: the script marks each
// refund done (a key under the prefix, kept five minutes).
//
// The store peeks ([limiter.PeekStore]): the cost of a dry run is checked
// in the decision's one script, at the same instant as its other limits,
// and nothing is written for it.
//
// On Redis Cluster, all keys of one decision must live in one slot: the
// default key prefix carries the hash tag {mcpguard-limiter} for that.
package redislimit

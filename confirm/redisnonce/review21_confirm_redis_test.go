package redisnonce_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// flakyRelay is a TCP relay in front of a real redis-server that cuts a
// connection at random: a command it cuts may reach Redis or not, and its
// reply is lost either way. Every cut leaves a write that may or may not
// have happened, which the store must never take for a use of its own
// when someone else's, nor give back when someone ran.
type flakyRelay struct {
	ln     net.Listener
	target string
	// oneIn: one command in oneIn is cut (0: none).
	oneIn atomic.Int32
	cuts  atomic.Int32
	wg    sync.WaitGroup
}

func newFlakyRelay(t *testing.T, target string) *flakyRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &flakyRelay{ln: ln, target: target}
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Go(func() { r.relay(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); r.wg.Wait() })
	return r
}

func (r *flakyRelay) relay(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	defer s.Close()
	// cut: 1 = drop the command's reply (the command went through),
	// set by the reading side.
	var cut atomic.Bool
	r.wg.Go(func() {
		defer s.Close()
		defer c.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if k := r.oneIn.Load(); k > 0 && bytes.Contains(buf[:n], []byte("EVAL")) && rand.IntN(int(k)) == 0 {
					r.cuts.Add(1)
					if rand.IntN(2) == 0 {
						return // cut before Redis saw it
					}
					cut.Store(true) // Redis runs it; the reply is lost
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if cut.Load() {
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestNoStateRunsTwiceThroughFailures races many verifications of each
// state from two replicas (one client with go-redis's default retries,
// one with none) through a relay that cuts one Redis command in three,
// before or after Redis ran it. A caller told "store unavailable" tries
// again, as the refusal invites. Whatever the interleaving of lost
// replies, retries and the store's give-back of its own writes, each state
// is accepted at most once, and no error carries a key or a value the
// store wrote.
func TestNoStateRunsTwiceThroughFailures(t *testing.T) {
	srv := testsvc.StartRedis(t)
	relay := newFlakyRelay(t, srv.Addr)
	direct := newClient(t, srv.Addr)
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	replica := func(maxRetries int) *confirm.Signer {
		c := redis.NewClient(&redis.Options{Addr: relay.ln.Addr().String(), MaxRetries: maxRetries,
			DialTimeout: 5 * time.Second, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 5 * time.Millisecond})
		t.Cleanup(func() { c.Close() })
		st := redisnonce.New(c, "flaky:")
		st.Timeout = 2 * time.Second
		s, err := confirm.NewSigner(keys, &confirm.Options{Nonces: st})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := replica(0), replica(-1)
	relay.oneIn.Store(3)
	ctx := context.Background()
	cl := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}

	const states, callers = 60, 6
	var (
		mu       sync.Mutex
		errs     []string
		accepted []string // the states accepted, whose nonces must stay used
	)
	for i := range states {
		now := time.Now()
		st, err := a.Issue(now, cl)
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int32
		var wg sync.WaitGroup
		for g := range callers {
			s := a
			if g%2 == 1 {
				s = b
			}
			wg.Go(func() {
				for range 20 {
					err := s.Verify(ctx, time.Now(), st, cl)
					if err == nil {
						ran.Add(1)
						return
					}
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					if !errors.Is(err, confirm.ErrStore) {
						return
					}
				}
			})
		}
		wg.Wait()
		if n := ran.Load(); n > 1 {
			t.Fatalf("state %d accepted %d times through lost replies and retries, want at most 1", i, n)
		} else if n == 1 {
			accepted = append(accepted, st)
		}
	}
	if relay.cuts.Load() == 0 {
		t.Fatal("the relay cut nothing: the test tested nothing")
	}
	// Every accepted state stays used, once the give-backs of the last
	// errors are done; and no error text holds a nonce key or a value the
	// store wrote.
	relay.oneIn.Store(0)
	time.Sleep(200 * time.Millisecond)
	for i, st := range accepted {
		if err := b.Verify(ctx, time.Now(), st, cl); !errors.Is(err, confirm.ErrReplayed) {
			t.Errorf("accepted state %d sent again after the failures = %v, want ErrReplayed", i, err)
		}
	}
	ks, err := direct.Keys(ctx, "flaky:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, k := range ks {
		v, err := direct.Get(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, k, strings.TrimPrefix(k, "flaky:"), v)
	}
	for _, e := range errs {
		for _, s := range secrets {
			if strings.Contains(e, s) {
				t.Fatalf("error %q holds %q, a nonce key or the store's own value", e, s)
			}
		}
	}
	t.Logf("%d states, %d accepted, %d cuts, %d refusals, %d keys", states, len(accepted), relay.cuts.Load(), len(errs), len(ks))
}

// TestGiveBackNeverFreesAUsedState: a state accepted once, then sent again
// through a connection that loses the reply (the store is told nothing, so
// it gives back the write it may have made), must stay used: the give-back
// deletes only the failed call's own value, never the value of the call
// that ran.
func TestGiveBackNeverFreesAUsedState(t *testing.T) {
	srv := testsvc.StartRedis(t)
	d := newReplyDropper(t, srv.Addr, []byte("giveback:"))
	direct := newClient(t, srv.Addr)
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	good := patient(redisnonce.New(newClient(t, srv.Addr), "giveback:"))
	bc := redis.NewClient(&redis.Options{Addr: d.ln.Addr().String(), MaxRetries: -1})
	t.Cleanup(func() { bc.Close() })
	bad := patient(redisnonce.New(bc, "giveback:"))
	sa, _ := confirm.NewSigner(keys, &confirm.Options{Nonces: good})
	sb, _ := confirm.NewSigner(keys, &confirm.Options{Nonces: bad})
	ctx := context.Background()
	cl := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	for i := range 20 {
		now := time.Now()
		st, err := sa.Issue(now, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := sa.Verify(ctx, now, st, cl); err != nil {
			t.Fatalf("first use: %v", err)
		}
		ks, _ := direct.Keys(ctx, "giveback:*").Result()
		d.armed.Store(true)
		err = sb.Verify(ctx, now, st, cl)
		if !errors.Is(err, confirm.ErrStore) && !errors.Is(err, confirm.ErrReplayed) {
			t.Fatalf("replay through a lost reply = %v, want ErrStore or ErrReplayed", err)
		}
		// Wait for the give-back's script to have run: one more EVAL
		// through a fresh connection, after which the key must stand.
		time.Sleep(50 * time.Millisecond)
		for _, k := range ks {
			if n, err := direct.Exists(ctx, k).Result(); err != nil || n != 1 {
				t.Fatalf("round %d: after a failed replay the used nonce's key %s exists = %d, %v: the give-back freed a used state", i, k, n, err)
			}
		}
		if err := sa.Verify(ctx, now, st, cl); !errors.Is(err, confirm.ErrReplayed) {
			t.Fatalf("round %d: replay after the failed one = %v, want ErrReplayed", i, err)
		}
	}
}

// TestFullRedisRefusesThenAcceptsOnce: under maxmemory-policy noeviction, which the
// package doc recommends, a Redis out of memory refuses the nonce write:
// the confirmation is refused as "store unavailable" and does not run;
// once memory is freed the same state is accepted once.
func TestFullRedisRefusesThenAcceptsOnce(t *testing.T) {
	srv := testsvc.StartRedis(t)
	direct := newClient(t, srv.Addr)
	ctx := context.Background()
	s := patient(redisnonce.New(newClient(t, srv.Addr), "full:"))
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	sg, _ := confirm.NewSigner(keys, &confirm.Options{Nonces: s})
	cl := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	now := time.Now()
	st, err := sg.Issue(now, cl)
	if err != nil {
		t.Fatal(err)
	}
	used, err := direct.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	var mem int64
	for _, l := range strings.Split(used, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			fmt.Sscan(v, &mem)
		}
	}
	if err := direct.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := direct.ConfigSet(ctx, "maxmemory", fmt.Sprint(mem+1<<20)).Err(); err != nil {
		t.Fatal(err)
	}
	junk := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		if err := direct.Set(ctx, fmt.Sprintf("junk:%d", i), junk, 0).Err(); err != nil {
			if !strings.Contains(err.Error(), "OOM") {
				t.Fatal(err)
			}
			break
		}
	}
	if err := sg.Verify(ctx, now, st, cl); !errors.Is(err, confirm.ErrStore) {
		t.Fatalf("Verify on a full Redis = %v, want ErrStore (fail closed)", err)
	}
	if err := direct.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := sg.Verify(ctx, now, st, cl); err != nil {
		t.Fatalf("Verify once memory is freed = %v, want nil (the refused call used nothing)", err)
	}
	if err := sg.Verify(ctx, now, st, cl); !errors.Is(err, confirm.ErrReplayed) {
		t.Fatalf("replay = %v, want ErrReplayed", err)
	}
}

// TestCheckServerWantsNoEviction: a Redis that may evict keys forgets used
// nonces, and their states are accepted again; CheckServer is the
// fail-closed option a deployment runs at start-up. It accepts only
// maxmemory-policy noeviction, and fails closed when it cannot tell (a
// user whose ACL refuses INFO, no client).
func TestCheckServerWantsNoEviction(t *testing.T) {
	srv := testsvc.StartRedis(t)
	direct := newClient(t, srv.Addr)
	ctx := context.Background()
	s := redisnonce.New(newClient(t, srv.Addr), "policy:")
	for _, p := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		if err := direct.ConfigSet(ctx, "maxmemory-policy", p).Err(); err != nil {
			t.Fatal(err)
		}
		err := s.CheckServer(ctx)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("CheckServer under maxmemory-policy %s = %v, want an error naming it", p, err)
		}
	}
	if err := direct.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckServer(ctx); err != nil {
		t.Errorf("CheckServer under noeviction = %v, want nil", err)
	}
	// A user who may run the scripts but not INFO: cannot tell, so an error.
	if err := direct.Do(ctx, "ACL", "SETUSER", "nonces", "on", ">pw", "~policy:*", "+eval", "+exists").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "nonces", Password: "pw", MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	if err := redisnonce.New(c, "policy:").CheckServer(ctx); err == nil {
		t.Error("CheckServer for a user refused INFO = nil, want an error")
	}
	if err := redisnonce.New(nil, "policy:").CheckServer(ctx); err == nil {
		t.Error("CheckServer without a client = nil, want an error")
	}
	var nilStore *redisnonce.Store
	if err := nilStore.CheckServer(ctx); err == nil {
		t.Error("CheckServer of a nil Store = nil, want an error")
	}
}

// TestCheckServerRefusesRingOfShards: a Ring of several shards moves a
// down shard's keys to the others, where used nonces are unknown;
// CheckServer refuses it. A Ring of one shard is checked as a server.
func TestCheckServerRefusesRingOfShards(t *testing.T) {
	a, b := testsvc.StartRedis(t), testsvc.StartRedis(t)
	ctx := context.Background()
	two := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}})
	t.Cleanup(func() { two.Close() })
	if err := redisnonce.New(two, "ring:").CheckServer(ctx); err == nil {
		t.Error("CheckServer of a Ring of two shards = nil, want an error")
	}
	one := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr}})
	t.Cleanup(func() { one.Close() })
	if err := redisnonce.New(one, "ring:").CheckServer(ctx); err != nil {
		t.Errorf("CheckServer of a Ring of one noeviction shard = %v, want nil", err)
	}
}

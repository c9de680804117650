package redisnonce_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/noncetest"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// replyDropper is a TCP relay in front of a real redis-server that, once
// armed, lets the next command naming marker reach Redis and then cuts the
// connection instead of relaying Redis's reply: the write happened, and
// the client never learns it.
type replyDropper struct {
	ln      net.Listener
	target  string
	marker  []byte
	armed   atomic.Bool
	dropped atomic.Int32
	wg      sync.WaitGroup
}

func newReplyDropper(t *testing.T, target string, marker []byte) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &replyDropper{ln: ln, target: target, marker: marker}
	d.wg.Go(d.serve)
	t.Cleanup(func() { ln.Close(); d.wg.Wait() })
	return d
}

func (d *replyDropper) serve() {
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		d.wg.Go(func() { d.relay(c) })
	}
}

func (d *replyDropper) relay(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", d.target)
	if err != nil {
		return
	}
	defer s.Close()
	// cut is set when a command naming marker went to Redis while armed:
	// Redis's next reply on this connection is dropped with the connection.
	var cut atomic.Bool
	d.wg.Go(func() {
		defer s.Close()
		defer c.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if bytes.Contains(buf[:n], d.marker) && d.armed.CompareAndSwap(true, false) {
					cut.Store(true)
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
				d.dropped.Add(1)
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

// TestLostReplyIsNotAReplay: a Consume whose write reached Redis but whose
// reply was lost (the connection dropped in between) is retried by
// go-redis, as its default options do. That retry must not be told that
// the nonce was used by someone: this very Consume is its only use, and the
// confirmation must pass, once.
func TestLostReplyIsNotAReplay(t *testing.T) {
	r := testsvc.StartRedis(t)
	d := newReplyDropper(t, r.Addr, []byte("lost:"))
	// go-redis's defaults: MaxRetries 3, a dropped connection is retried.
	c := redis.NewClient(&redis.Options{Addr: d.ln.Addr().String(), DialTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	s := patient(redisnonce.New(c, "lost:"))
	ctx := context.Background()
	now := time.Now()

	n := noncetest.Nonce()
	d.armed.Store(true)
	first, err := s.Consume(ctx, n, now, now.Add(time.Minute))
	if d.dropped.Load() != 1 {
		t.Fatalf("the relay dropped %d replies, want 1 (the test did not cut the reply)", d.dropped.Load())
	}
	if err == nil && !first {
		t.Errorf("Consume of a fresh nonce whose first reply was lost = false, nil: " +
			"the retry was told the nonce was used already, but this call was its only use")
	}
	// Whatever it answered, the nonce is used now, for everyone.
	if again, err := s.Consume(ctx, n, now, now.Add(time.Minute)); err != nil || again {
		t.Errorf("second Consume = %v, %v; want false, nil", again, err)
	}

	// Through the signer: the one and only use of a state is accepted.
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	sg, err := confirm.NewSigner(keys, &confirm.Options{Nonces: s})
	if err != nil {
		t.Fatal(err)
	}
	cl := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	st, err := sg.Issue(now, cl)
	if err != nil {
		t.Fatal(err)
	}
	d.armed.Store(true)
	if err := sg.Verify(ctx, now, st, cl); err != nil {
		t.Errorf("Verify of a state used once, whose store reply was lost and retried = %v, want nil", err)
	}
	if err := sg.Verify(ctx, now, st, cl); !errors.Is(err, confirm.ErrReplayed) {
		t.Errorf("replay = %v, want ErrReplayed", err)
	}
}

// TestLostReplyRetryIsToldTheTruth: without go-redis retries (MaxRetries
// -1), a Consume whose write reached Redis but whose reply was lost returns
// an error, so the confirmation is refused as "store unavailable, try
// again" and the tool does not run. The client's retry with the same state
// must then be accepted, once: nobody used the confirmation. It used to be
// told "already used", and the human was asked again for nothing.
func TestLostReplyRetryIsToldTheTruth(t *testing.T) {
	r := testsvc.StartRedis(t)
	d := newReplyDropper(t, r.Addr, []byte("lost:"))
	c := redis.NewClient(&redis.Options{Addr: d.ln.Addr().String(), MaxRetries: -1, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	direct := newClient(t, r.Addr)
	s := patient(redisnonce.New(c, "lost:"))
	ctx := context.Background()
	now := time.Now()
	keys := []confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	sg, err := confirm.NewSigner(keys, &confirm.Options{Nonces: s})
	if err != nil {
		t.Fatal(err)
	}
	cl := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	st, err := sg.Issue(now, cl)
	if err != nil {
		t.Fatal(err)
	}
	d.armed.Store(true)
	if err := sg.Verify(ctx, now, st, cl); !errors.Is(err, confirm.ErrStore) {
		t.Fatalf("Verify whose store reply was lost = %v, want ErrStore", err)
	}
	if d.dropped.Load() != 1 {
		t.Fatalf("the relay dropped %d replies, want 1", d.dropped.Load())
	}
	// The store gives back what it may have written, in the background:
	// wait until no nonce key is left (at most 5 s).
	for deadline := time.Now().Add(5 * time.Second); ; {
		keys, err := direct.Keys(ctx, "lost:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5s after the refused Consume, Redis still holds %v: the state is burnt", keys)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sg.Verify(ctx, now, st, cl); err != nil {
		t.Errorf("the retry after \"store unavailable\" = %v, want nil (nobody used the state)", err)
	}
	if err := sg.Verify(ctx, now, st, cl); !errors.Is(err, confirm.ErrReplayed) {
		t.Errorf("replay after the accepted retry = %v, want ErrReplayed", err)
	}
}

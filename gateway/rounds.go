package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"sync"
	"time"
)

// Multi round-trips (protocol 2026-07-28, SEP-2322): a downstream that
// needs more input for a tools/call (a guarded one asks its user to
// confirm a write) answers it with a result of resultType
// "input_required" and a requestState, and the client sends the same call
// again with the answers and that requestState. The two rounds are one
// logical call: the round that asked was charged by the limiter, so the
// next round, which carries a requestState the downstream gave that
// caller for that tool and arguments, is charged no call and no cost (as
// the library's Limit outside its Confirm charges it). A requestState is
// taken once; one the gateway did not see (given to another caller, made
// up, forgotten) is charged as any call.

const (
	// roundsTTL is how long a requestState the downstream gave is
	// remembered: a human may take a while to answer.
	roundsTTL = 15 * time.Minute
	// maxRounds bounds the requestStates remembered; past it the oldest
	// is forgotten (its next round is charged as a call).
	maxRounds = 8192
	// maxTapBytes bounds the answer the gateway keeps a copy of to find
	// an input_required result in; a longer answer is not read (its next
	// round is charged).
	maxTapBytes = 64 << 10
)

// roundKey is a next round's key: the SHA-256 of the caller, the tool,
// the call's raw arguments, the requestState, and the class and price of
// the call under the policy of its first round: a next round that the
// policy (SetPolicy) made a write, or priced otherwise, since is another
// call, charged as one.
type roundKey [sha256.Size]byte

func newRoundKey(subject, tool string, args []byte, state, class string, price float64) roundKey {
	h := sha256.New()
	var n [8]byte
	for _, s := range [...][]byte{[]byte(subject), []byte(tool), args, []byte(state), []byte(class)} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write(s)
	}
	binary.LittleEndian.PutUint64(n[:], math.Float64bits(price))
	h.Write(n[:])
	var k roundKey
	h.Sum(k[:0])
	return k
}

// rounds remembers the next rounds the downstream asked for.
type rounds struct {
	mu    sync.Mutex
	until map[roundKey]roundEntry
	// order holds the keys remembered, oldest first, each with the seq of
	// its entry then: the entry of a key taken, or remembered again since,
	// is not the one its place in order stands for.
	order []roundPlace
	seq   uint64
}

// A roundEntry is a next round remembered: valid until until; seq is its
// place in [rounds].order.
type roundEntry struct {
	until time.Time
	seq   uint64
}

// A takenRound is a next round taken from [rounds], for restore.
type takenRound struct {
	key   roundKey
	entry roundEntry
}

type roundPlace struct {
	key roundKey
	seq uint64
}

// remember notes a next round of key, valid until now + roundsTTL.
func (r *rounds) remember(k roundKey, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.until == nil {
		r.until = make(map[roundKey]roundEntry)
	}
	for len(r.order) > 0 && (len(r.until) >= maxRounds || len(r.order) >= 2*maxRounds) {
		// The oldest first: forgotten, or taken already.
		if p := r.order[0]; r.until[p.key].seq == p.seq {
			delete(r.until, p.key)
		}
		r.order = r.order[1:]
	}
	r.seq++
	r.order = append(r.order, roundPlace{k, r.seq})
	r.until[k] = roundEntry{now.Add(roundsTTL), r.seq}
}

// take reports whether k is a next round remembered and not expired, and
// forgets it, returning its entry for restore.
func (r *rounds) take(k roundKey, now time.Time) (roundEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.until[k]
	if ok {
		delete(r.until, k)
	}
	return e, ok && now.Before(e.until)
}

// restore remembers again a next round taken whose call was refused
// before it was sent (it is still to come), as it was: in its place,
// with its expiry. One whose place was given up meanwhile stays
// forgotten, as it would have been had it not been taken.
func (r *rounds) restore(k roundKey, e roundEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 || e.seq < r.order[0].seq {
		return
	}
	if _, ok := r.until[k]; !ok {
		r.until[k] = e
	}
}

// noteRound remembers the next round msg asks for, a JSON-RPC response to
// c's call: a result of resultType "input_required" with a requestState.
// When c is a next round charged nothing and msg refuses it as retryable
// (a guarded downstream's refusal that leaves the state usable: its nonce
// store, audit sink or own cap failing), the round is remembered again:
// the client may send it again, as the downstream says.
func (c *callState) noteRound(msg []byte) {
	if c == nil || !c.tap {
		return
	}
	if c.round != nil && bytes.Contains(msg, []byte(`"retryable"`)) && json.Valid(msg) && retryableRefusal(bytes.TrimSpace(msg)) {
		c.restoreRound()
		return
	}
	if !bytes.Contains(msg, []byte("input_required")) || !json.Valid(msg) {
		return
	}
	result, ok := memberOf(bytes.TrimSpace(msg), "result")
	if !ok || len(result) == 0 || result[0] != '{' {
		return
	}
	kind, ok := memberOf(result, "resultType")
	if !ok || string(kind) != `"input_required"` {
		return
	}
	raw, ok := memberOf(result, "requestState")
	if !ok || raw == nil {
		return
	}
	state, ok := jsonString(raw)
	if !ok || state == "" {
		return
	}
	c.g.rounds.remember(newRoundKey(c.pr.Subject, c.tool, c.args, state, c.class, c.price), c.g.now())
}

// retryableRefusal reports whether msg, a JSON-RPC response (valid JSON
// without white space around it), is a refusal in the library's error
// contract that says it is retryable: a JSON-RPC error whose data has
// "retryable": true (protocol-error mode), or a tool error (isError)
// whose structuredContent's "error" has it.
func retryableRefusal(msg []byte) bool {
	member := func(obj []byte, name string) []byte {
		if len(obj) == 0 || obj[0] != '{' {
			return nil
		}
		v, ok := memberOf(obj, name)
		if !ok {
			return nil
		}
		return v
	}
	if e := member(msg, "error"); e != nil {
		return string(member(member(e, "data"), "retryable")) == "true"
	}
	res := member(msg, "result")
	if string(member(res, "isError")) != "true" {
		return false
	}
	return string(member(member(member(res, "structuredContent"), "error"), "retryable")) == "true"
}

// noteRounds reads the answer an answerTap kept, JSON or an event stream,
// for the next round it asks for (see [callState.noteRound]).
func (c *callState) noteRounds(t *answerTap, sse bool) {
	if t == nil || t.over || len(t.buf) == 0 {
		return
	}
	if !sse {
		if msg := bytes.TrimSpace(t.buf); len(msg) > 0 && msg[0] == '{' {
			c.noteRound(msg)
		}
		return
	}
	readEvents(bytes.NewReader(t.buf), func(ev *event) {
		if !ev.ignored() && ev.hasData {
			if msg := bytes.TrimSpace(ev.data); len(msg) > 0 && msg[0] == '{' {
				c.noteRound(msg)
			}
		}
	})
}

// answerTap is a reader of a tools/call's answer that keeps a copy of
// what it reads, up to maxTapBytes (over then, and the copy dropped).
type answerTap struct {
	r    io.Reader
	buf  []byte
	over bool
}

func (t *answerTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 && !t.over {
		if len(t.buf)+n > maxTapBytes {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p[:n]...)
		}
	}
	return n, err
}

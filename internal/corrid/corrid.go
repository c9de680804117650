// Package corrid makes correlation ids: the time in milliseconds since
// 1970, 12 hex digits, '-', and a 48-bit counter put through a keyed
// permutation drawn once per source, 12 hex digits:
// "0193a1b2c3d4-5e6f708192a3".
//
// Ids of one source are unique until the counter wraps (2^48 ids: 89
// years at 100,000 a second), whatever the clock does: the permutation is
// one to one. They sort by the millisecond they were made in, so that an
// audit table's index on them grows at its end rather than at a random
// place per row. And they do not count: a caller who is given two ids
// cannot tell how many calls of others came between them, as it could
// with a plain counter. Two sources share an id only if they make it in
// the same millisecond and their permutations agree on it (about 1 in
// 2^48). The ids identify a call; they are not secrets.
package corrid

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// Source makes correlation ids. Its zero value is not ready: call Init
// once before Next. Next is safe for concurrent use.
type Source struct {
	keys [rounds]uint64
	seq  atomic.Uint64
}

const (
	rounds = 4
	half   = 24 // bits in each half of the permuted counter
	mask   = 1<<half - 1
)

// Init draws s's permutation.
func (s *Source) Init() {
	var r [8 * rounds]byte
	_, _ = rand.Read(r[:]) // never fails on the platforms Go supports
	for i := range s.keys {
		s.keys[i] = binary.LittleEndian.Uint64(r[8*i:])
	}
}

// Len is the length of an id.
const Len = 25

// Next returns a new id of s, made now.
func (s *Source) Next() string {
	var b [Len]byte
	s.PutAt(&b, time.Now())
	return string(b[:])
}

// PutAt writes to b a new id of s made at t, for a caller that keeps it
// in memory it has already allocated.
func (s *Source) PutAt(b *[Len]byte, t time.Time) {
	n := s.permute(s.seq.Add(1) & (1<<(2*half) - 1))
	putHex(b[:12], uint64(t.UnixMilli()))
	b[12] = '-'
	putHex(b[13:], n)
}

// permute is a four-round Feistel network on 48 bits whose round
// function mixes a half with the round's key: one to one, and without
// the keys the image of n+1 tells nothing of that of n.
func (s *Source) permute(n uint64) uint64 { return s.feistel(n, half) }

// feistel is permute on 2*h bits (a test checks narrow widths
// exhaustively): n's high half is l, its low half r.
func (s *Source) feistel(n uint64, h uint) uint64 {
	m := uint64(1)<<h - 1
	l, r := n>>h&m, n&m
	for _, k := range s.keys {
		l, r = r, l^(mix(r^k)&m)
	}
	return l<<h | r
}

// mix is SplitMix64's finalizer: every input bit affects every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// putHex writes the low 4*len(b) bits of v to b as lower-case hex digits.
func putHex(b []byte, v uint64) {
	const digits = "0123456789abcdef"
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
}

// Package corrid makes correlation ids: a random prefix of 48 bits drawn
// once per source and a 48-bit counter, "1a2b3c4d5e6f-00000000002a". Ids
// of one source are unique until the counter wraps (2^48 ids: 89 years at
// 100,000 a second) and increase as they are made, so that an audit
// table's index on them grows at its end rather than at a random place
// per row. The prefix tells sources apart: two of a thousand processes
// draw the same one with a probability of about 2 in a billion. The ids
// identify a call; they are not secrets.
package corrid

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
)

// Source makes correlation ids. Its zero value is not ready: call Init
// once before Next. Next is safe for concurrent use.
type Source struct {
	prefix [12]byte
	seq    atomic.Uint64
}

// Init draws s's random prefix.
func (s *Source) Init() {
	var r [6]byte
	_, _ = rand.Read(r[:]) // never fails on the platforms Go supports
	hex.Encode(s.prefix[:], r[:])
}

// Len is the length of an id.
const Len = 25

// Next returns the next id of s: its prefix, '-', and the counter's low 48
// bits as 12 lower-case hex digits.
func (s *Source) Next() string {
	var b [Len]byte
	s.Put(&b)
	return string(b[:])
}

// Put writes the next id of s to b, for a caller that keeps it in memory
// it has already allocated.
func (s *Source) Put(b *[Len]byte) {
	n := s.seq.Add(1)
	copy(b[:], s.prefix[:])
	b[len(s.prefix)] = '-'
	const digits = "0123456789abcdef"
	for i := Len - 1; i > len(s.prefix); i-- {
		b[i] = digits[n&0xf]
		n >>= 4
	}
}

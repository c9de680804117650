package fastschema

import (
	"math/bits"
	"regexp"
	"regexp/syntax"
	"unicode"
)

// A matcher tests a string against a JSON Schema pattern with the verdict
// of (*regexp.Regexp).Match, v6's default engine: unanchored, Go (RE2)
// syntax. Simple patterns, the usual `^CUST-[A-Z0-9]{5}$`, run on a small
// position automaton (see [compileGlushkov]); the rest on regexp.
//
// A matcher is safe for concurrent use.
type matcher struct {
	re *regexp.Regexp // nil when g is used
	g  glushkov
}

// compileMatcher compiles a pattern, failing exactly when regexp.Compile does.
func compileMatcher(src string) (*matcher, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	if g, ok := compileGlushkov(src); ok {
		return &matcher{g: g}, nil
	}
	return &matcher{re: re}, nil
}

// match reports whether b contains a match of the pattern.
func (m *matcher) match(b []byte) bool {
	if m.re != nil {
		return m.re.Match(b)
	}
	return m.g.match(b)
}

// maxPositions bounds the automaton's positions: one uint64 holds them
// and the end bit.
const maxPositions = 63

// A glushkov is the position automaton of a pattern that is a sequence of
// single ASCII characters and ASCII classes, each possibly repeated,
// optionally anchored with \A or ^ first and \z or $ last (with Go's
// default flags $ is end of text, not end of line).
//
// A state is the set of positions that may read the next byte, plus the
// end bit when the pattern may end here. Every rune Go's matcher sees in
// the input is either an ASCII byte, read here as the same character, or
// one or more bytes >= 0x80 (a valid multi-byte sequence, or an invalid
// byte read as U+FFFD), which match no ASCII position: here each such byte
// is one step that matches nothing, the same verdict, since a match can
// neither cross them nor start between them and read anything.
type glushkov struct {
	pos         []position
	first       uint64 // state before any byte
	end         uint64 // the end bit, 1 << len(pos)
	begin, stop bool   // anchored at the start, at the end
}

// A position is one character of the expanded pattern.
type position struct {
	class  [2]uint64 // ASCII bit set: c is in it when class[c>>6]>>(c&63)&1 == 1
	follow uint64    // state after reading a byte at this position
}

// An item is one character or class with its repeat counts (max -1: no bound).
type item struct {
	class    [2]uint64
	min, max int
}

// compileGlushkov builds the automaton for src, or reports false when src
// is outside the supported subset.
func compileGlushkov(src string) (glushkov, bool) {
	re, err := syntax.Parse(src, syntax.Perl) // the flags of regexp.Compile
	if err != nil {
		return glushkov{}, false
	}
	var flat []*syntax.Regexp
	flatten(re, &flat)
	var g glushkov
	if len(flat) > 0 && flat[0].Op == syntax.OpBeginText {
		g.begin, flat = true, flat[1:]
	}
	if len(flat) > 0 && flat[len(flat)-1].Op == syntax.OpEndText {
		g.stop, flat = true, flat[:len(flat)-1]
	}
	items := make([]item, 0, len(flat))
	n := 0
	for _, r := range flat {
		it, ok := toItem(r)
		if !ok {
			return glushkov{}, false
		}
		// a{n,} is n positions, the last looping (a* one looping position);
		// a{n,m} is m positions, m-n of them optional.
		switch {
		case it.max < 0:
			n += max(it.min, 1)
		default:
			n += it.max
		}
		if n > maxPositions {
			return glushkov{}, false
		}
		items = append(items, it)
	}

	// Expand the items into positions, noting which may be skipped
	// (nullable) and which loop to themselves.
	g.pos = make([]position, 0, n)
	var nullable, loop uint64
	for _, it := range items {
		count := it.max
		if it.max < 0 {
			count = max(it.min, 1)
		}
		for k := range count {
			i := len(g.pos)
			g.pos = append(g.pos, position{class: it.class})
			if k >= it.min {
				nullable |= 1 << i
			}
			if it.max < 0 && k == count-1 {
				loop |= 1 << i
			}
		}
	}
	g.end = 1 << len(g.pos)
	// reach(i): positions i, i+1, ... up to the first one that must be
	// read, or the end bit when all of them may be skipped.
	reach := func(i int) uint64 {
		var s uint64
		for ; i < len(g.pos); i++ {
			s |= 1 << i
			if nullable&(1<<i) == 0 {
				return s
			}
		}
		return s | g.end
	}
	g.first = reach(0)
	for i := range g.pos {
		g.pos[i].follow = reach(i+1) | loop&(1<<i)
	}
	return g, true
}

// flatten appends the concatenated pieces of re to flat, unwrapping
// captures and concatenations, dropping empty matches and cutting literals
// into one piece a character. Anything else (an alternation, a repeat, a
// class, an anchor) is appended whole, as one piece, for toItem to judge.
func flatten(re *syntax.Regexp, flat *[]*syntax.Regexp) {
	switch re.Op {
	case syntax.OpEmptyMatch:
	case syntax.OpCapture:
		flatten(re.Sub[0], flat)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			flatten(sub, flat)
		}
	case syntax.OpLiteral:
		// One piece per rune, so each is a single character.
		for i := range re.Rune {
			*flat = append(*flat, &syntax.Regexp{Op: syntax.OpLiteral, Flags: re.Flags, Rune: re.Rune[i : i+1]})
		}
	default:
		*flat = append(*flat, re)
	}
}

// toItem converts a single character, class or repeat of one of them,
// reporting false for anything else (anchors left in the middle included).
func toItem(re *syntax.Regexp) (item, bool) {
	it := item{min: 1, max: 1}
	switch re.Op {
	case syntax.OpStar:
		it.min, it.max = 0, -1
	case syntax.OpPlus:
		it.min, it.max = 1, -1
	case syntax.OpQuest:
		it.min, it.max = 0, 1
	case syntax.OpRepeat:
		it.min, it.max = re.Min, re.Max
	}
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		re = re.Sub[0] // greedy or not: the same verdict
	}
	var ok bool
	it.class, ok = asciiClass(re)
	return it, ok
}

// asciiClass returns the set of runes re matches when re is one character
// and every rune it matches is ASCII.
func asciiClass(re *syntax.Regexp) (class [2]uint64, ok bool) {
	add := func(lo, hi rune) bool {
		if lo < 0 || hi >= 0x80 || lo > hi {
			return false
		}
		for c := lo; c <= hi; c++ {
			class[c>>6] |= 1 << (c & 63)
		}
		return true
	}
	switch {
	case re.Op == syntax.OpLiteral && len(re.Rune) == 1:
		r := re.Rune[0]
		if !add(r, r) {
			return class, false
		}
		if re.Flags&syntax.FoldCase != 0 {
			// regexp matches the rune's whole simple-folding orbit: k also
			// matches U+212A (Kelvin sign), s U+017F (long s).
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if !add(f, f) {
					return class, false
				}
			}
		}
		return class, true
	case re.Op == syntax.OpCharClass && len(re.Rune) > 0:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if !add(re.Rune[i], re.Rune[i+1]) {
				return class, false
			}
		}
		return class, true
	}
	return class, false
}

// match reports whether b contains a match. It does not allocate.
func (g *glushkov) match(b []byte) bool {
	s := g.first
	for _, c := range b {
		if s&g.end != 0 && !g.stop {
			return true
		}
		var next uint64
		if c < 0x80 {
			word, bit := c>>6, uint64(1)<<(c&63)
			for r := s &^ g.end; r != 0; r &= r - 1 {
				p := &g.pos[bits.TrailingZeros64(r)]
				if p.class[word]&bit != 0 {
					next |= p.follow
				}
			}
		}
		if !g.begin {
			next |= g.first
		} else if next == 0 {
			return false
		}
		s = next
	}
	return s&g.end != 0
}

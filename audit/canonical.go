package audit

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// appendCanonical appends the canonical form of the JSON text raw to dst:
// object members sorted by (decoded) key, equal keys in their order (see
// compareCoarse and foldOrder for keys that differ but read alike), no
// insignificant whitespace, strings re-escaped by appendCanonString (those
// with an escaped lone UTF-16 surrogate by appendLoneString), numbers as
// given.
// It reports false when raw is not one valid JSON value.
//
// It works in two passes, each linear in the size of raw: scan validates
// raw and records each object's members, sorted, with where their values
// start; emit then writes every value once, the members of an object in
// their recorded order. (Sorting members by re-reading each value after
// validating it made every level of nesting double the work of the levels
// inside it; reordering encoded output at each level would make the work
// grow with depth times size.)
func appendCanonical(dst, raw []byte) ([]byte, bool) {
	c := canon{src: raw}
	if !c.scan(0) {
		return dst, false
	}
	c.space()
	if c.pos != len(c.src) {
		return dst, false
	}
	c.pos = 0
	c.space()
	return c.emit(dst), true
}

type canon struct {
	src []byte
	pos int
	// What scan records: the objects of src in the order they start, the
	// members of each, sorted, and the keys that had escapes, decoded. The
	// objects and members are in the arrays below until they outgrow them
	// (then all of them in objs or mems), so that a small document
	// allocates nothing.
	nobj, nmem int
	objs       []object
	mems       []member
	keys       []byte
	objArr     [8]object
	memArr     [16]member
	// lone is set by strSlow when it reads an escaped UTF-16 surrogate
	// that is not half of a pair (as U+FFFD). loneKeys holds, for each key
	// with one, in the order of their ks, the key's ks and where its
	// canonical text (appendLoneString) is in keys, after its decoded bytes.
	lone     bool
	loneKeys [][3]int
}

// object is an object of src: it starts at pos, ends before end, and its
// members are the recorded members first to first+n, sorted by key.
type object struct {
	pos, end, first, n int
}

// member is a member of an object: its decoded key is src[ks:ke], or
// canon.keys[ks:ke] when it had escapes; its raw value starts at val in
// src. (Four fields: a struct of more is not kept in registers, and the
// sort, which copies members, was up to a fifth slower with a fifth.)
type member struct {
	ks, ke, val int
	flags       keyFlags
}

// keyFlags say how a member's key is held and read.
type keyFlags uint8

const (
	escaped keyFlags = 1 << iota // the key had escapes: it is in canon.keys
	invalid                      // the key holds invalid UTF-8, each byte of which Go's decoder reads as U+FFFD
	lone                         // the key has an escaped lone surrogate: it is emitted from canon.loneKeys
)

// compareKeys orders the keys of a and b as decoded: by code point, each
// byte of invalid UTF-8 read as U+FFFD (for valid UTF-8 that is byte
// order). Keys that a decoder reads alike compare equal, so that the
// stable sort keeps them in their order in the document: the last one is
// the one a handler reads.
func compareKeys(a, b member, src, keys []byte) int {
	ka, kb := a.key(src, keys), b.key(src, keys)
	if (a.flags|b.flags)&invalid == 0 {
		return bytes.Compare(ka, kb)
	}
	for len(ka) > 0 && len(kb) > 0 {
		ra, na := utf8.DecodeRune(ka)
		rb, nb := utf8.DecodeRune(kb)
		if ra != rb {
			return int(ra) - int(rb)
		}
		ka, kb = ka[na:], kb[nb:]
	}
	return len(ka) - len(kb)
}

// key returns m's decoded key, in src or in keys (canon.keys).
func (m member) key(src, keys []byte) []byte {
	if m.flags&escaped != 0 {
		return keys[m.ks:m.ke]
	}
	return src[m.ks:m.ke]
}

// addObject records o and returns its index.
func (c *canon) addObject(o object) int {
	if c.objs == nil && c.nobj < len(c.objArr) {
		c.objArr[c.nobj] = o
	} else {
		if c.objs == nil {
			c.objs = append(make([]object, 0, 4*len(c.objArr)), c.objArr[:c.nobj]...)
		}
		c.objs = append(c.objs, o)
	}
	c.nobj++
	return c.nobj - 1
}

// objects returns the objects recorded.
func (c *canon) objects() []object {
	if c.objs != nil {
		return c.objs
	}
	return c.objArr[:c.nobj]
}

// addMembers records ms and returns the index of the first.
func (c *canon) addMembers(ms []member) int {
	first := c.nmem
	if c.mems == nil && c.nmem+len(ms) <= len(c.memArr) {
		copy(c.memArr[c.nmem:], ms)
	} else {
		if c.mems == nil {
			c.mems = append(make([]member, 0, max(4*len(c.memArr), 2*(c.nmem+len(ms)))), c.memArr[:c.nmem]...)
		}
		c.mems = append(c.mems, ms...)
	}
	c.nmem += len(ms)
	return first
}

// members returns n recorded members from the first.
func (c *canon) members(first, n int) []member {
	if c.mems != nil {
		return c.mems[first : first+n]
	}
	return c.memArr[first : first+n]
}

func (c *canon) space() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// scan validates the value at c.pos, records its objects and advances
// past it.
func (c *canon) scan(depth int) bool {
	if depth > maxDepth {
		return false
	}
	c.space()
	if c.pos >= len(c.src) {
		return false
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.scanObject(depth)
	case b == '[':
		c.pos++
		c.space()
		if c.pos < len(c.src) && c.src[c.pos] == ']' {
			c.pos++
			return true
		}
		for {
			if !c.scan(depth + 1) {
				return false
			}
			c.space()
			if c.pos >= len(c.src) {
				return false
			}
			switch c.src[c.pos] {
			case ',':
				c.pos++
			case ']':
				c.pos++
				return true
			default:
				return false
			}
		}
	case b == '"':
		return c.skipStr()
	case b == 't':
		return c.skipLiteral("true")
	case b == 'f':
		return c.skipLiteral("false")
	case b == 'n':
		return c.skipLiteral("null")
	default:
		return c.number()
	}
}

func (c *canon) scanObject(depth int) bool {
	oi := c.addObject(object{pos: c.pos})
	c.pos++ // '{'
	c.space()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		c.objects()[oi].end = c.pos
		return true
	}
	var arr [16]member
	ms := arr[:0]
	// Some key has an upper-case ASCII letter or a byte past ASCII (it may
	// fold alike with another key; see foldOrder), invalid UTF-8 (it may
	// decode alike with another key).
	var foldable, wideKeys, bad bool
	for {
		c.space()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return false
		}
		q := c.pos
		n := len(c.keys)
		c.lone = false
		key, ok := c.str(c.keys)
		if !ok {
			return false
		}
		m := member{ks: q + 1, ke: q + 1 + len(key)}
		if bytes.IndexByte(c.src[q:c.pos], '\\') >= 0 {
			// Decoded after the keys decoded before it.
			c.keys = key
			m.ks, m.ke, m.flags = n, len(key), escaped
			key = key[n:]
		}
		upper, wide := keyBytes(key)
		foldable = foldable || upper || wide
		wideKeys = wideKeys || wide
		if wide && !utf8.Valid(key) {
			m.flags, bad = m.flags|invalid, true
		}
		if c.lone {
			// Sorted as U+FFFD (as before), emitted with the
			// surrogate's escape.
			start := len(c.keys)
			c.keys = appendLoneString(c.keys, c.src[q:c.pos])
			c.loneKeys = append(c.loneKeys, [3]int{m.ks, start, len(c.keys)})
			m.flags |= lone
		}
		c.space()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return false
		}
		c.pos++
		c.space()
		m.val = c.pos
		if !c.scan(depth + 1) {
			return false
		}
		ms = append(ms, m)
		c.space()
		if c.pos >= len(c.src) {
			return false
		}
		if c.src[c.pos] == '}' {
			c.pos++
			break
		}
		if c.src[c.pos] != ',' {
			return false
		}
		c.pos++
	}
	src, keys := c.src, c.keys
	// Stable: members with equal keys keep their order.
	switch {
	case bad && len(ms) > 1 && coarseAlike(ms, src, keys):
		// Keys that some reader may read alike: see compareCoarse. No
		// fold order: keys that fold alike are alike here.
		slices.SortStableFunc(ms, func(a, b member) int { return compareCoarse(a.key(src, keys), b.key(src, keys)) })
	default:
		slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key(src, keys), b.key(src, keys)) })
		if foldable && !bad && len(ms) > 1 {
			foldOrder(ms, src, keys, !wideKeys)
		}
	}
	first := c.addMembers(ms)
	o := &c.objects()[oi]
	o.end, o.first, o.n = c.pos, first, len(ms)
	return true
}

// keyBytes reports whether key has an upper-case ASCII letter, and
// whether it has a byte past ASCII. A key of neither (lower-case ASCII
// letters, digits, punctuation) folds alike with another key only when
// the two are equal.
func keyBytes(key []byte) (upper, wide bool) {
	for _, b := range key {
		if b-'A' < 26 {
			upper = true
			break
		}
	}
	// Eight bytes at a time, as utf8.Valid looks for ASCII.
	p := key
	for len(p) >= 8 {
		if binary.LittleEndian.Uint64(p)&0x8080808080808080 != 0 {
			return upper, true
		}
		p = p[8:]
	}
	for _, b := range p {
		if b >= utf8.RuneSelf {
			return upper, true
		}
	}
	return upper, false
}

// coarseAlike reports whether two keys of ms, an object's members with a
// key of invalid UTF-8, differ but compare alike under compareCoarse.
func coarseAlike(ms []member, src, keys []byte) bool {
	if len(ms) <= 16 {
		for i := 1; i < len(ms); i++ {
			ka := ms[i].key(src, keys)
			for j := range i {
				if kb := ms[j].key(src, keys); compareCoarse(ka, kb) == 0 && !bytes.Equal(ka, kb) {
					return true
				}
			}
		}
		return false
	}
	sorted := slices.Clone(ms)
	slices.SortFunc(sorted, func(a, b member) int {
		if c := compareCoarse(a.key(src, keys), b.key(src, keys)); c != 0 {
			return c
		}
		return bytes.Compare(a.key(src, keys), b.key(src, keys))
	})
	for i := 1; i < len(sorted); i++ {
		ka, kb := sorted[i-1].key(src, keys), sorted[i].key(src, keys)
		if compareCoarse(ka, kb) == 0 && !bytes.Equal(ka, kb) {
			return true
		}
	}
	return false
}

// compareCoarse orders keys a and b, of an object with a key of invalid
// UTF-8, as decoded with each run of invalid UTF-8 and U+FFFD read as one
// U+FFFD and the rest case-folded (foldkey.Rune). Readers read invalid
// UTF-8 differently: Go's encoding/json each byte as U+FFFD ("\xe2\x82" is
// two), a WHATWG decoder (JavaScript's) each maximal invalid subpart
// ("\xe2\x82" is one, like "\ufffd"), others a run of them as one, or the
// bytes themselves; encoding/json matches keys to struct fields
// case-folded. Keys that any of them reads alike compare equal here, so
// that, sorted stably, they stay in their order in the document (the last
// is the one a reader takes): {"\xe2\x82":1,"\ufffd":2} and
// {"\ufffd":2,"\xe2\x82":1}, one object to Go but two to JavaScript, hash
// differently. (Keys that compare equal but that no reader reads alike
// keep their order too: the hash then tells apart documents that every
// reader reads alike, which is safe.)
func compareCoarse(a, b []byte) int {
	next := func(k []byte) (rune, []byte) {
		if len(k) == 0 {
			return -1, k
		}
		r, n := utf8.DecodeRune(k)
		if r != utf8.RuneError {
			return foldkey.Rune(r), k[n:]
		}
		for len(k) > 0 {
			if r, n = utf8.DecodeRune(k); r != utf8.RuneError {
				break
			}
			k = k[n:]
		}
		return utf8.RuneError, k
	}
	for {
		var ra, rb rune
		ra, a = next(a)
		rb, b = next(b)
		if ra != rb || ra < 0 {
			return int(ra) - int(rb)
		}
	}
}

// foldOrder orders ms, an object's members sorted by key, for readers that
// match keys under Unicode case folding (encoding/json, to struct fields:
// "amount", "Amount" and "AMOUNT" are one field, the last one in the
// document winning): when two of the keys fold alike but decode
// differently, the members are put in the order of their folded keys,
// those whose keys fold alike in their order in the document, so that
// {"a":1,"A":2} and {"A":2,"a":1}, read differently, differ. An object
// without such keys keeps its order, and its hash. ascii says all the keys
// are ASCII.
func foldOrder(ms []member, src, keys []byte, ascii bool) {
	if len(ms) <= 16 {
		// Few keys (a tool call's usual object): compare each pair
		// rather than sort a copy.
		if !foldAlike(ms, src, keys, ascii) {
			return
		}
	}
	var arr [16]member
	byFold := append(arr[:0], ms...)
	slices.SortFunc(byFold, func(a, b member) int {
		if c := compareFolded(a.key(src, keys), b.key(src, keys)); c != 0 {
			return c
		}
		return a.val - b.val // document order
	})
	if len(ms) > 16 {
		found := false
		for i := 1; i < len(byFold) && !found; i++ {
			a, b := byFold[i-1], byFold[i]
			found = compareFolded(a.key(src, keys), b.key(src, keys)) == 0 && compareKeys(a, b, src, keys) != 0
		}
		if !found {
			return
		}
	}
	copy(ms, byFold)
}

// foldAlike reports whether two keys of ms fold alike but decode
// differently. ascii says all the keys are ASCII: two such keys fold alike
// only when of one length.
func foldAlike(ms []member, src, keys []byte, ascii bool) bool {
	for i := 1; i < len(ms); i++ {
		ka := ms[i].key(src, keys)
		for j := range i {
			kb := ms[j].key(src, keys)
			if ascii && len(ka) != len(kb) {
				continue
			}
			if !bytes.Equal(ka, kb) && compareFolded(ka, kb) == 0 && compareKeys(ms[i], ms[j], src, keys) != 0 {
				return true
			}
		}
	}
	return false
}

// compareFolded orders keys a and b by their folded forms
// (foldkey.Append), without building them.
func compareFolded(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		if ca, cb := a[0], b[0]; ca|cb < utf8.RuneSelf {
			// Both ASCII: as foldkey.Rune folds them.
			if ca != cb {
				if ca-'a' < 26 {
					ca -= 'a' - 'A'
				}
				if cb-'a' < 26 {
					cb -= 'a' - 'A'
				}
				if ca != cb {
					return int(ca) - int(cb)
				}
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			if fa, fb := foldkey.Rune(ra), foldkey.Rune(rb); fa != fb {
				return int(fa) - int(fb)
			}
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// emit appends the canonical form of the value at c.pos, which scan
// validated and recorded, and advances past it.
func (c *canon) emit(dst []byte) []byte {
	switch b := c.src[c.pos]; {
	case b == '{':
		objs := c.objects()
		i, _ := slices.BinarySearchFunc(objs, c.pos, func(o object, pos int) int { return o.pos - pos })
		o := objs[i]
		dst = append(dst, '{')
		for j, m := range c.members(o.first, o.n) {
			if j > 0 {
				dst = append(dst, ',')
			}
			if m.flags&lone != 0 {
				i, _ := slices.BinarySearchFunc(c.loneKeys, m.ks, func(l [3]int, ks int) int { return l[0] - ks })
				dst = append(dst, c.keys[c.loneKeys[i][1]:c.loneKeys[i][2]]...)
			} else {
				dst = appendCanonString(dst, bytesString(m.key(c.src, c.keys)))
			}
			dst = append(dst, ':')
			c.pos = m.val
			dst = c.emit(dst)
		}
		c.pos = o.end
		return append(dst, '}')
	case b == '[':
		c.pos++
		dst = append(dst, '[')
		c.space()
		if c.src[c.pos] == ']' {
			c.pos++
			return append(dst, ']')
		}
		for {
			c.space()
			dst = c.emit(dst)
			c.space()
			if c.src[c.pos] == ']' {
				c.pos++
				return append(dst, ']')
			}
			c.pos++ // ','
			dst = append(dst, ',')
		}
	case b == '"':
		start := c.pos
		c.lone = false
		s, _ := c.str(nil)
		if c.lone {
			return appendLoneString(dst, c.src[start:c.pos])
		}
		return appendCanonString(dst, bytesString(s))
	case b == 't':
		c.pos += len("true")
		return append(dst, "true"...)
	case b == 'f':
		c.pos += len("false")
		return append(dst, "false"...)
	case b == 'n':
		c.pos += len("null")
		return append(dst, "null"...)
	default:
		start := c.pos
		c.number()
		return append(dst, c.src[start:c.pos]...)
	}
}

func (c *canon) skipLiteral(lit string) bool {
	if !bytes.HasPrefix(c.src[c.pos:], []byte(lit)) {
		return false
	}
	c.pos += len(lit)
	return true
}

// skipStr validates the JSON string at c.pos, as str does, without
// decoding it, and advances past it.
func (c *canon) skipStr() bool {
	c.pos++ // opening quote
	for c.pos < len(c.src) {
		switch b := c.src[c.pos]; {
		case b == '"':
			c.pos++
			return true
		case b < 0x20:
			return false
		case b != '\\':
			c.pos++
			continue
		}
		if c.pos+1 >= len(c.src) {
			return false
		}
		switch c.src[c.pos+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			c.pos += 2
		case 'u':
			c.pos += 2
			if _, ok := c.hex4(); !ok {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// str parses a JSON string at c.pos and returns its decoded bytes. When the
// string has no escapes the result aliases c.src.
func (c *canon) str(buf []byte) ([]byte, bool) {
	c.pos++ // opening quote
	start := c.pos
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		switch {
		case b == '"':
			s := c.src[start:c.pos]
			c.pos++
			return s, true
		case b == '\\':
			return c.strSlow(append(buf, c.src[start:c.pos]...))
		case b < 0x20:
			return nil, false
		default:
			c.pos++
		}
	}
	return nil, false
}

func (c *canon) strSlow(out []byte) ([]byte, bool) {
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		switch {
		case b == '"':
			c.pos++
			return out, true
		case b < 0x20:
			return nil, false
		case b != '\\':
			out = append(out, b)
			c.pos++
			continue
		}
		if c.pos+1 >= len(c.src) {
			return nil, false
		}
		esc := c.src[c.pos+1]
		c.pos += 2
		switch esc {
		case '"', '\\', '/':
			out = append(out, esc)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := c.hex4()
			if !ok {
				return nil, false
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(utf8.RuneError)
				if c.pos+1 < len(c.src) && c.src[c.pos] == '\\' && c.src[c.pos+1] == 'u' {
					save := c.pos
					c.pos += 2
					lo, ok := c.hex4()
					if ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							r2 = d
						} else {
							c.pos = save
						}
					} else {
						return nil, false
					}
				}
				c.lone = c.lone || r2 == utf8.RuneError
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

// appendLoneString appends the canonical form of raw, a JSON string
// (quotes included) that scan found valid and that has an escaped UTF-16
// surrogate that is not half of a pair ("\ud800", or "\udc00" first):
// what appendCanonString appends for its decoded text, except that each such
// surrogate is written as its escape, in lower case, not as U+FFFD. Go's
// encoding/json reads U+FFFD in its place, but JavaScript's JSON.parse
// and Python's json.loads keep it: {"a":"\ud800"} and {"a":"\ufffd"} are
// different arguments to a server written in either, and must not hash
// alike. (appendString never writes a surrogate's escape: nothing else
// has this canonical form.)
func appendLoneString(dst, raw []byte) []byte {
	var seg []byte // decoded text since the last lone surrogate
	text := func() {
		q := appendCanonString(nil, bytesString(seg))
		dst = append(dst, q[1:len(q)-1]...)
		seg = seg[:0]
	}
	dst = append(dst, '"')
	end := len(raw) - 1 // the closing quote
	for i := 1; i < end; {
		j := i + bytes.IndexByte(raw[i:end], '\\')
		if j < i {
			j = end
		}
		seg = append(seg, raw[i:j]...)
		if i = j; i == end {
			break
		}
		esc := raw[i+1]
		i += 2
		if esc != 'u' {
			seg = append(seg, unescaped(esc))
			continue
		}
		r := hexRune(raw[i : i+4])
		i += 4
		if !utf16.IsSurrogate(r) {
			seg = utf8.AppendRune(seg, r)
			continue
		}
		if i+6 <= end && raw[i] == '\\' && raw[i+1] == 'u' {
			if d := utf16.DecodeRune(r, hexRune(raw[i+2:i+6])); d != utf8.RuneError {
				seg = utf8.AppendRune(seg, d)
				i += 6
				continue
			}
		}
		text()
		dst = append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
	}
	text()
	return append(dst, '"')
}

// appendCanonString appends s as a JSON string, as appendString does,
// except that each byte of invalid UTF-8 is written as itself, not as
// \ufffd: "\xff\xfe" and "\xfe\xff", or "\xe2\x82" (one U+FFFD to a
// WHATWG decoder) and "\xff\xff" (two), are different arguments to a
// handler that keeps the raw bytes, or to some decoders, and must not
// hash alike. No valid text is written with such a byte, and such a byte
// never forms valid UTF-8 with the bytes written around it (what follows
// it starts a character, an escape or the closing quote), so the form
// stays unambiguous.
func appendCanonString(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendString(dst, s)
	}
	dst = append(dst, '"')
	for len(s) > 0 {
		i := 0
		for i < len(s) {
			if c, size := utf8.DecodeRuneInString(s[i:]); c != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			break
		}
		if i > 0 {
			// The valid text, escaped, without appendString's quotes.
			n := len(dst)
			dst = appendString(dst, s[:i])
			dst = append(dst[:n], dst[n+1:len(dst)-1]...)
		}
		if i < len(s) {
			dst = append(dst, s[i]) // a byte of invalid UTF-8
			i++
		}
		s = s[i:]
	}
	return append(dst, '"')
}

// unescaped returns the byte the JSON escape \esc (not \u) stands for.
func unescaped(esc byte) byte {
	switch esc {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return esc // '"', '\\', '/'
}

// hexRune returns the rune of h, four hex digits that scan checked.
func hexRune(h []byte) rune {
	v, _ := strconv.ParseUint(string(h), 16, 32)
	return rune(v)
}

func (c *canon) hex4() (rune, bool) {
	if c.pos+4 > len(c.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(c.src[c.pos:c.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	c.pos += 4
	return rune(v), true
}

// number validates a JSON number at c.pos and advances past it.
func (c *canon) number() bool {
	s, i := c.src, c.pos
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	c.pos = i
	return true
}

// bytesString views b as a string without copying; appendString does not
// keep its argument.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

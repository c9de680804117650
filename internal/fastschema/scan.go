package fastschema

import (
	"bytes"
	"hash/maphash"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds container nesting; deeper documents are refused.
const maxDepth = 64

// A seg is one step of the path to the value being checked.
type seg struct {
	key   []byte // raw key content (maybe escaped); nil for an array index
	plain bool   // key needs no unescaping
	index int
}

// A keyEnt is an object key kept for the duplicate check.
type keyEnt struct {
	hash  uint64
	key   []byte // raw content
	plain bool
}

// state is the per-call scratch space, pooled by the Schema.
type state struct {
	s     *Schema
	raw   []byte
	pos   int
	depth int
	path  [maxDepth]seg
	keys  []keyEnt
	buf   []byte // decoded string values
	kbuf  []byte // decoded keys
	kbuf2 []byte
}

type strInfo struct {
	start, end int // content, between the quotes
	dlen       int // decoded length in bytes
	runes      int // decoded length in code points
	plain      bool
	ctrl       bool
}

func (st *state) document(raw []byte) *Error {
	st.raw, st.pos, st.depth = raw, 0, 0
	st.skipWS()
	if st.pos >= len(raw) || raw[st.pos] != '{' {
		if e := st.whole(nil); e != nil {
			return e
		}
		return st.fail(errNotObject, 0, nil, false, nil, nil)
	}
	e := st.whole(st.s.root)
	if e == nil {
		return nil
	}
	if e.kind <= errLastSyntactic {
		return e
	}
	// A schema violation: report a syntax, duplicate, depth or string
	// problem instead when the document has one, as the reference
	// pipeline checks those first.
	st.raw, st.pos, st.depth, st.keys = raw, 0, 0, st.keys[:0]
	if e2 := st.whole(nil); e2 != nil {
		return e2
	}
	return e
}

// whole checks one value and that only white space follows it.
func (st *state) whole(n *node) *failure {
	if e := st.value(n); e != nil {
		return e
	}
	st.skipWS()
	if st.pos != len(st.raw) {
		return st.fail(errTrailing, 0, nil, false, nil, nil)
	}
	return nil
}

func (st *state) skipWS() {
	for st.pos < len(st.raw) {
		switch st.raw[st.pos] {
		case ' ', '\t', '\n', '\r':
			st.pos++
		default:
			return
		}
	}
}

func (st *state) syntax() *failure { return st.fail(errSyntax, 0, nil, false, nil, nil) }

// checkNode applies the false schema and the type keyword to a value of
// type t at path length plen.
func (st *state) checkNode(n *node, t uint8, plen int) *failure {
	if n.never {
		return st.fail(errNever, plen, nil, false, n, nil)
	}
	if n.types != 0 && n.types&t == 0 {
		return st.fail(errType, plen, nil, false, n, nil)
	}
	return nil
}

func (st *state) value(n *node) *failure {
	st.skipWS()
	if st.pos >= len(st.raw) {
		return st.syntax()
	}
	switch c := st.raw[st.pos]; {
	case c == '{':
		return st.object(n)
	case c == '[':
		return st.array(n)
	case c == '"':
		return st.str(n)
	case c == '-' || isDigit(c):
		return st.number(n)
	case c == 't':
		return st.literal("true", n, tBoolean, sBool, true)
	case c == 'f':
		return st.literal("false", n, tBoolean, sBool, false)
	case c == 'n':
		return st.literal("null", n, tNull, sNull, false)
	}
	return st.syntax()
}

func (st *state) literal(lit string, n *node, t uint8, k scalarKind, b bool) *failure {
	if !bytes.HasPrefix(st.raw[st.pos:], []byte(lit)) {
		return st.syntax()
	}
	st.pos += len(lit)
	if n == nil {
		return nil
	}
	if e := st.checkNode(n, t, st.depth); e != nil {
		return e
	}
	for _, list := range n.enums {
		ok := false
		for i := range list {
			if list[i].kind == k && (k == sNull || list[i].b == b) {
				ok = true
				break
			}
		}
		if !ok {
			return st.fail(errEnum, st.depth, nil, false, n, nil)
		}
	}
	return nil
}

func (st *state) number(n *node) *failure {
	raw, i := st.raw, st.pos
	start := i
	if raw[i] == '-' {
		i++
	}
	switch {
	case i < len(raw) && raw[i] == '0':
		i++
	case i < len(raw) && '1' <= raw[i] && raw[i] <= '9':
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
	default:
		return st.syntax()
	}
	if i < len(raw) && raw[i] == '.' {
		i++
		if i >= len(raw) || !isDigit(raw[i]) {
			return st.syntax()
		}
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		if i >= len(raw) || !isDigit(raw[i]) {
			return st.syntax()
		}
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
	}
	st.pos = i
	if n == nil {
		return nil
	}
	if n.never {
		return st.fail(errNever, st.depth, nil, false, n, nil)
	}
	intOnly := n.types != 0 && n.types&tNumber == 0
	if n.types != 0 && n.types&(tNumber|tInteger) == 0 {
		return st.fail(errType, st.depth, nil, false, n, nil)
	}
	if !intOnly && len(n.bounds) == 0 && len(n.enums) == 0 {
		return nil
	}
	d, _ := parseDecimal(raw[start:i])
	if intOnly && !d.isInt {
		return st.fail(errType, st.depth, nil, false, n, nil)
	}
	for _, list := range n.enums {
		ok := false
		for j := range list {
			if list[j].kind == sNumber && d.ratOK && list[j].num.ratOK && cmpDecimal(&d, &list[j].num) == 0 {
				ok = true
				break
			}
		}
		if !ok {
			return st.fail(errEnum, st.depth, nil, false, n, nil)
		}
	}
	for bi := range n.bounds {
		b := &n.bounds[bi]
		// v6 panics comparing a number big.Rat cannot parse: refuse it.
		if !d.ratOK {
			return st.fail(errBound, st.depth, nil, false, n, b)
		}
		c := cmpDecimal(&d, &b.d)
		var bad bool
		switch b.op {
		case opMin:
			bad = c < 0
		case opMax:
			bad = c > 0
		case opExMin:
			bad = c <= 0
		case opExMax:
			bad = c >= 0
		}
		if bad {
			return st.fail(errBound, st.depth, nil, false, n, b)
		}
	}
	return nil
}

// scanString reads the string at st.pos, checking it as encoding/json's
// scanner does and measuring it as encoding/json would decode it (invalid
// UTF-8 and lone surrogates become U+FFFD).
func (st *state) scanString() (strInfo, bool) {
	raw := st.raw
	info := strInfo{start: st.pos + 1, plain: true}
	i := info.start
	for {
		if i >= len(raw) {
			return info, false
		}
		c := raw[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			info.dlen++
			info.runes++
			i++
			continue
		}
		switch {
		case c == '"':
			info.end = i
			st.pos = i + 1
			return info, true
		case c == '\\':
			info.plain = false
			i++
			if i >= len(raw) {
				return info, false
			}
			var r rune
			switch raw[i] {
			case '"', '\\', '/':
				r = rune(raw[i])
				i++
			case 'b':
				r = '\b'
				i++
			case 'f':
				r = '\f'
				i++
			case 'n':
				r = '\n'
				i++
			case 'r':
				r = '\r'
				i++
			case 't':
				r = '\t'
				i++
			case 'u':
				r = getu4(raw[i-1:])
				if r < 0 {
					return info, false
				}
				i += 5
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(raw[i:])); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
			default:
				return info, false
			}
			info.dlen += utf8.RuneLen(r)
			info.runes++
			if isControl(r) {
				info.ctrl = true
			}
		case c < 0x20:
			return info, false
		case c == 0x7f:
			info.dlen++
			info.runes++
			info.ctrl = true
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				info.plain = false
				info.dlen += 3
			} else {
				info.dlen += size
				if r <= 0x9f {
					info.ctrl = true
				}
			}
			info.runes++
			i += size
		}
	}
}

// isControl reports the characters refused unless AllowControlChars.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r <= 0x9f)
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// decodeString appends the unescaped form of s, well-formed string content
// (checked by scanString), to dst, exactly as encoding/json unquotes it.
func decodeString(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch s[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(s[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(s[i:])); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // " \ /
				dst = append(dst, s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += size
		}
	}
	return dst
}

// checkStr applies MaxStringBytes and the control-character rule.
func (st *state) checkStr(info *strInfo, plen int, isKey bool) *failure {
	if info.dlen > st.s.opts.MaxStringBytes {
		if isKey {
			return st.fail(errKeyTooLong, plen, nil, false, nil, nil)
		}
		return st.fail(errTooLong, plen, nil, false, nil, nil)
	}
	if info.ctrl && !st.s.opts.AllowControlChars {
		if isKey {
			return st.fail(errKeyControl, plen, nil, false, nil, nil)
		}
		return st.fail(errControl, plen, nil, false, nil, nil)
	}
	return nil
}

func (st *state) str(n *node) *failure {
	info, ok := st.scanString()
	if !ok {
		return st.syntax()
	}
	if e := st.checkStr(&info, st.depth, false); e != nil {
		return e
	}
	if n == nil {
		return nil
	}
	if e := st.checkNode(n, tString, st.depth); e != nil {
		return e
	}
	if n.minLen >= 0 && info.runes < n.minLen {
		return st.fail(errMinLen, st.depth, nil, false, n, nil)
	}
	if n.maxLen >= 0 && info.runes > n.maxLen {
		return st.fail(errMaxLen, st.depth, nil, false, n, nil)
	}
	if n.pattern == nil && n.format == nil && len(n.enums) == 0 {
		return nil
	}
	b := st.raw[info.start:info.end]
	if !info.plain {
		st.buf = decodeString(st.buf[:0], b)
		b = st.buf
	}
	for _, list := range n.enums {
		ok := false
		for i := range list {
			if list[i].equalString(b) {
				ok = true
				break
			}
		}
		if !ok {
			return st.fail(errEnum, st.depth, nil, false, n, nil)
		}
	}
	if n.format != nil && !n.format(b) {
		return st.fail(errFormat, st.depth, nil, false, n, nil)
	}
	if n.pattern != nil && !n.pattern.Match(b) {
		return st.fail(errPattern, st.depth, nil, false, n, nil)
	}
	return nil
}

func (st *state) enter() *failure {
	st.pos++
	if st.depth >= maxDepth {
		return st.fail(errDepth, 0, nil, false, nil, nil)
	}
	st.depth++
	return nil
}

func (st *state) object(n *node) *failure {
	plen := st.depth
	if n != nil {
		if e := st.checkNode(n, tObject, plen); e != nil {
			return e
		}
		if len(n.enums) > 0 { // scalar values only: a container never matches
			return st.fail(errEnum, plen, nil, false, n, nil)
		}
	}
	if e := st.enter(); e != nil {
		return e
	}
	keysStart := len(st.keys)
	var seen uint64
	count := 0
	st.skipWS()
	if st.pos < len(st.raw) && st.raw[st.pos] == '}' {
		st.pos++
	} else {
		for {
			st.skipWS()
			if st.pos >= len(st.raw) || st.raw[st.pos] != '"' {
				return st.syntax()
			}
			info, ok := st.scanString()
			if !ok {
				return st.syntax()
			}
			if e := st.checkStr(&info, plen, true); e != nil {
				return e
			}
			rawKey := st.raw[info.start:info.end]
			key := rawKey
			if !info.plain {
				st.kbuf = decodeString(st.kbuf[:0], rawKey)
				key = st.kbuf
			}
			count++
			var sub *node
			known := -1
			if n != nil {
				known = n.lookup(key)
			}
			if known >= 0 {
				bit := uint64(1) << uint(known)
				if seen&bit != 0 {
					return st.fail(errDup, plen, rawKey, info.plain, n, nil)
				}
				seen |= bit
			} else {
				st.keys = append(st.keys, keyEnt{hash: maphash.Bytes(st.s.seed, key), key: rawKey, plain: info.plain})
			}
			switch {
			case known >= 0 && n.names[known].isProp:
				sub = n.names[known].sub
			case n != nil && !n.additional:
				return st.fail(errUnknown, plen, rawKey, info.plain, n, nil)
			}
			st.skipWS()
			if st.pos >= len(st.raw) || st.raw[st.pos] != ':' {
				return st.syntax()
			}
			st.pos++
			st.path[plen] = seg{key: rawKey, plain: info.plain}
			if e := st.value(sub); e != nil {
				return e
			}
			st.skipWS()
			if st.pos >= len(st.raw) {
				return st.syntax()
			}
			if c := st.raw[st.pos]; c == ',' {
				st.pos++
				continue
			} else if c == '}' {
				st.pos++
				break
			}
			return st.syntax()
		}
	}
	if e := st.dupCheck(keysStart, plen); e != nil {
		return e
	}
	st.keys = st.keys[:keysStart]
	st.depth--
	if n == nil {
		return nil
	}
	return st.objectEnd(n, seen, count, plen)
}

// objectEnd applies required, minProperties and maxProperties.
func (st *state) objectEnd(n *node, seen uint64, count, plen int) *failure {
	if missing := n.required &^ seen; missing != 0 {
		for _, i := range n.reqOrder {
			if missing&(1<<uint(i)) != 0 {
				return st.fail(errRequired, plen, []byte(n.names[i].name), true, n, nil)
			}
		}
	}
	if n.minProps >= 0 && count < n.minProps {
		return st.fail(errMinProps, plen, nil, false, n, nil)
	}
	if n.maxProps >= 0 && count > n.maxProps {
		return st.fail(errMaxProps, plen, nil, false, n, nil)
	}
	return nil
}

// dupCheck looks for two equal keys among st.keys[start:].
func (st *state) dupCheck(start, plen int) *failure {
	ks := st.keys[start:]
	if len(ks) < 2 {
		return nil
	}
	if len(ks) > 16 {
		slices.SortFunc(ks, func(a, b keyEnt) int {
			switch {
			case a.hash < b.hash:
				return -1
			case a.hash > b.hash:
				return 1
			}
			return 0
		})
		for i := 1; i < len(ks); i++ {
			if ks[i].hash == ks[i-1].hash && st.sameKey(&ks[i], &ks[i-1]) {
				return st.fail(errDup, plen, ks[i].key, ks[i].plain, nil, nil)
			}
		}
		return nil
	}
	for i := 1; i < len(ks); i++ {
		for j := 0; j < i; j++ {
			if ks[i].hash == ks[j].hash && st.sameKey(&ks[i], &ks[j]) {
				return st.fail(errDup, plen, ks[i].key, ks[i].plain, nil, nil)
			}
		}
	}
	return nil
}

func (st *state) sameKey(a, b *keyEnt) bool {
	ka, kb := a.key, b.key
	if !a.plain {
		st.kbuf = decodeString(st.kbuf[:0], ka)
		ka = st.kbuf
	}
	if !b.plain {
		st.kbuf2 = decodeString(st.kbuf2[:0], kb)
		kb = st.kbuf2
	}
	return bytes.Equal(ka, kb)
}

func (st *state) array(n *node) *failure {
	plen := st.depth
	var items *node
	if n != nil {
		if e := st.checkNode(n, tArray, plen); e != nil {
			return e
		}
		if len(n.enums) > 0 { // scalar values only: a container never matches
			return st.fail(errEnum, plen, nil, false, n, nil)
		}
		items = n.items
	}
	if e := st.enter(); e != nil {
		return e
	}
	count := 0
	st.skipWS()
	if st.pos < len(st.raw) && st.raw[st.pos] == ']' {
		st.pos++
	} else {
		for {
			st.path[plen] = seg{index: count}
			if e := st.value(items); e != nil {
				return e
			}
			count++
			st.skipWS()
			if st.pos >= len(st.raw) {
				return st.syntax()
			}
			if c := st.raw[st.pos]; c == ',' {
				st.pos++
				continue
			} else if c == ']' {
				st.pos++
				break
			}
			return st.syntax()
		}
	}
	st.depth--
	if n == nil {
		return nil
	}
	if n.minItems >= 0 && count < n.minItems {
		return st.fail(errMinItems, plen, nil, false, n, nil)
	}
	if n.maxItems >= 0 && count > n.maxItems {
		return st.fail(errMaxItems, plen, nil, false, n, nil)
	}
	return nil
}

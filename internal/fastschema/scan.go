package fastschema

import (
	"bytes"
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
	hash  uint64 // of the folded key (see foldkey.AppendName)
	key   []byte // raw content
	plain bool
	at    int // where key starts in the document
}

// state is the per-call scratch space, pooled by the Schema.
type state struct {
	s     *Schema
	raw   []byte
	pos   int
	depth int
	path  [maxDepth]seg
	high  int      // the deepest depth reached: path[:high] may point into raw
	keys  []keyEnt // every entry past len is zero (see dropKeys)
	buf   []byte   // decoded string values
	kbuf  []byte   // decoded keys
	kbuf2 []byte
	fbuf  []byte // a folded key
	lax   bool   // strings, keys and number literals are not bounded (see document)
	// badText: a string or key scanned holds invalid UTF-8 or an escaped
	// lone UTF-16 surrogate (see document).
	badText bool
}

func (st *state) document(raw []byte) *Error {
	st.raw, st.pos, st.depth, st.lax, st.badText = raw, 0, 0, false, false
	st.skipWS()
	object := st.pos < len(raw) && raw[st.pos] == '{'
	var e *failure
	if object {
		e = st.whole(st.s.root)
	} else {
		e = st.whole(nil)
	}
	if e == nil && object && !st.badText {
		return nil
	}
	if e != nil && e.kind < errText {
		return e // syntax, trailing data, depth or a duplicate: first
	}
	// Broken text (found anywhere), a string, key or number literal out
	// of bounds, or a schema violation (or no object): report them in the
	// order the reference pipeline checks them: a syntax, duplicate or
	// depth problem anywhere in the document, then broken text, then that
	// it is no object, then a string or number problem, then the schema.
	// The first pass stopped at e, so the rest of the document is scanned
	// again.
	if e != nil && e.kind > errLastSyntactic {
		// A schema violation: bounds first, if any is out.
		st.raw, st.pos, st.depth, st.badText = raw, 0, 0, false
		st.dropKeys(0)
		e2 := st.whole(nil)
		if e2 == nil {
			if st.badText {
				return st.fail(errText, 0, nil, false, nil, nil)
			}
			return e
		}
		if e2.kind < errText {
			return e2
		}
		e = e2 // a string or number out of bounds, unless worse comes
	}
	st.raw, st.pos, st.depth, st.lax, st.badText = raw, 0, 0, true, false
	st.dropKeys(0)
	e2 := st.whole(nil)
	st.lax = false
	switch {
	case e2 != nil:
		return e2
	case st.badText:
		return st.fail(errText, 0, nil, false, nil, nil)
	case !object:
		return st.fail(errNotObject, 0, nil, false, nil, nil)
	}
	return e
}

// dropKeys truncates st.keys to n entries, zeroing the rest, so that no
// slice of the arguments outlives the call in the pooled state.
func (st *state) dropKeys(n int) {
	clear(st.keys[n:])
	st.keys = st.keys[:n]
}

// release clears what points into the arguments (raw itself, the path
// and the names) before st goes back to the pool: a later call, with a
// shallower document or fewer names, would overwrite only part of it, and
// the pool would pin earlier arguments for as long as st is reused.
func (st *state) release() {
	st.raw = nil
	clear(st.path[:st.high])
	st.high = 0
	st.dropKeys(0)
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
	// The reference pipeline refuses an overlong literal before it
	// validates, wherever the literal is; this also keeps the exact
	// comparisons below to at most MaxNumberLen digits.
	if !st.lax && !numberInRange(raw[start:i]) {
		return st.fail(errNumber, st.depth, nil, false, nil, nil)
	}
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
		// v6 panics comparing a number big.Rat cannot parse: refuse it
		// (numberInRange already has: the literal is within ±MaxNumberExp).
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

package fastschema

import (
	"cmp"
	"github.com/mcpguard/mcpguard/internal/foldkey"
	"hash/maphash"
	"slices"
)

func (st *state) enter() *failure {
	st.pos++
	if st.depth >= maxDepth {
		return st.fail(errDepth, 0, nil, false, nil, nil)
	}
	st.depth++
	st.high = max(st.high, st.depth)
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
	// seen: the known names met; later: the known names that an unknown
	// key met folds like. A key that folds like a known one met before, or
	// a known key like an unknown one, is refused at once (see dupAt).
	var seen, later uint64
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
				if (seen|later)&(bit|n.twins[known]) != 0 {
					return st.dupAt(keysStart, plen, rawKey, info.plain)
				}
				seen |= bit
			} else {
				st.fbuf = foldkey.AppendName(st.fbuf[:0], key)
				if n != nil && n.folds != nil {
					twins := n.folds[string(st.fbuf)]
					if twins&seen != 0 {
						return st.dupAt(keysStart, plen, rawKey, info.plain)
					}
					later |= twins
				}
				st.keys = append(st.keys, keyEnt{hash: maphash.Bytes(st.s.seed, st.fbuf), key: rawKey, plain: info.plain, at: info.start})
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
	st.dropKeys(keysStart)
	st.depth--
	if n == nil {
		return nil
	}
	return st.objectEnd(n, seen, count, plen)
}

// objectEnd applies minProperties, maxProperties and required, in v6's
// order.
func (st *state) objectEnd(n *node, seen uint64, count, plen int) *failure {
	if n.minProps >= 0 && count < n.minProps {
		return st.fail(errMinProps, plen, nil, false, n, nil)
	}
	if n.maxProps >= 0 && count > n.maxProps {
		return st.fail(errMaxProps, plen, nil, false, n, nil)
	}
	if missing := n.required &^ seen; missing != 0 {
		for _, i := range n.reqOrder {
			if missing&(1<<uint(i)) != 0 {
				return st.fail(errRequired, plen, []byte(n.names[i].name), true, n, nil)
			}
		}
	}
	return nil
}

// dupCheck looks for two keys among st.keys[start:] (the object's unknown
// names, in the order met) that fold alike (foldkey.AppendName): two names
// that are one to encoding/json or to encoding/json/v2's case-insensitive
// matching. Of several, it names the first key that folds like one before
// it, as the reference does.
func (st *state) dupCheck(start, plen int) *failure {
	ks := st.keys[start:]
	if len(ks) < 2 {
		return nil
	}
	if len(ks) > 16 {
		// By hash, keys of one hash in the order met: the second of each
		// run of keys that fold alike is the first to repeat one.
		slices.SortFunc(ks, func(a, b keyEnt) int {
			if c := cmp.Compare(a.hash, b.hash); c != 0 {
				return c
			}
			return cmp.Compare(a.at, b.at)
		})
		var dup *keyEnt
		for i := 1; i < len(ks); i++ {
			if ks[i].hash != ks[i-1].hash || dup != nil && ks[i].at > dup.at {
				continue
			}
			for j := i - 1; j >= 0 && ks[j].hash == ks[i].hash; j-- {
				if st.sameKey(&ks[i], &ks[j]) {
					dup = &ks[i]
					break
				}
			}
		}
		if dup != nil {
			return st.fail(errDup, plen, dup.key, dup.plain, nil, nil)
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

// dupAt refuses the key met now (raw, of the object at plen), which folds
// like one met before, unless one of the unknown keys before it,
// st.keys[start:], already folds like another: the reference names the
// first key that repeats one.
func (st *state) dupAt(start, plen int, raw []byte, plain bool) *failure {
	if e := st.dupCheck(start, plen); e != nil {
		return e
	}
	return st.fail(errDup, plen, raw, plain, nil, nil)
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
	return foldkey.EqualName(ka, kb)
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

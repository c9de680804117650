package fastschema

import (
	"unicode/utf16"
	"unicode/utf8"
)

type strInfo struct {
	start, end int // content, between the quotes
	dlen       int // decoded length in bytes
	runes      int // decoded length in code points
	plain      bool
	ctrl       bool
}

// scanString reads the string at st.pos, checking it as encoding/json's
// scanner does and measuring it as encoding/json would decode it (invalid
// UTF-8 and lone surrogates become U+FFFD). It sets st.badText when the
// string holds either (see document): the check costs nothing on valid
// text, found on the paths that decode them.
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
						st.badText = true
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
				st.badText = true
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
	if st.lax {
		return nil
	}
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
	// The checks in v6's order: const and enum, format, then minLength,
	// maxLength and pattern.
	if n.pattern == nil && n.format == nil && len(n.enums) == 0 {
		return st.strLength(n, &info)
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
	if e := st.strLength(n, &info); e != nil {
		return e
	}
	if n.pattern != nil && !n.pattern.match(b) {
		return st.fail(errPattern, st.depth, nil, false, n, nil)
	}
	return nil
}

// strLength applies minLength and maxLength, counted in code points.
func (st *state) strLength(n *node, info *strInfo) *failure {
	if n.minLen >= 0 && info.runes < n.minLen {
		return st.fail(errMinLen, st.depth, nil, false, n, nil)
	}
	if n.maxLen >= 0 && info.runes > n.maxLen {
		return st.fail(errMaxLen, st.depth, nil, false, n, nil)
	}
	return nil
}

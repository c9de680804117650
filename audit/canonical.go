package audit

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// appendCanonical appends the canonical form of the JSON text raw to dst:
// object members sorted by (decoded) key, no insignificant whitespace,
// strings re-escaped by appendString, numbers as given. It reports false when
// raw is not one valid JSON value.
func appendCanonical(dst, raw []byte) ([]byte, bool) {
	c := canon{src: raw}
	dst, ok := c.value(dst, 0)
	if !ok {
		return dst, false
	}
	c.space()
	return dst, c.pos == len(c.src)
}

type canon struct {
	src []byte
	pos int
}

type member struct {
	key []byte // decoded
	val int    // offset of the raw value in src
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

func (c *canon) value(dst []byte, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return dst, false
	}
	c.space()
	if c.pos >= len(c.src) {
		return dst, false
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.object(dst, depth)
	case b == '[':
		c.pos++
		dst = append(dst, '[')
		c.space()
		if c.pos < len(c.src) && c.src[c.pos] == ']' {
			c.pos++
			return append(dst, ']'), true
		}
		for {
			var ok bool
			if dst, ok = c.value(dst, depth+1); !ok {
				return dst, false
			}
			c.space()
			if c.pos >= len(c.src) {
				return dst, false
			}
			switch c.src[c.pos] {
			case ',':
				c.pos++
				dst = append(dst, ',')
			case ']':
				c.pos++
				return append(dst, ']'), true
			default:
				return dst, false
			}
		}
	case b == '"':
		s, ok := c.str(nil)
		if !ok {
			return dst, false
		}
		return appendString(dst, bytesString(s)), true
	case b == 't':
		return c.literal(dst, "true")
	case b == 'f':
		return c.literal(dst, "false")
	case b == 'n':
		return c.literal(dst, "null")
	default:
		start := c.pos
		if !c.number() {
			return dst, false
		}
		return append(dst, c.src[start:c.pos]...), true
	}
}

func (c *canon) literal(dst []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(c.src[c.pos:], []byte(lit)) {
		return dst, false
	}
	c.pos += len(lit)
	return append(dst, lit...), true
}

func (c *canon) object(dst []byte, depth int) ([]byte, bool) {
	c.pos++ // '{'
	var arr [16]member
	ms := arr[:0]
	c.space()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		return append(dst, '{', '}'), true
	}
	for {
		c.space()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return dst, false
		}
		key, ok := c.str(nil)
		if !ok {
			return dst, false
		}
		c.space()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return dst, false
		}
		c.pos++
		c.space()
		start := c.pos
		// Validate and skip the value; it is re-encoded after sorting. What
		// the check writes lands past the end of dst, which is not part of
		// the output (nested objects do the same further on).
		if _, ok := c.value(dst[len(dst):], depth+1); !ok {
			return dst, false
		}
		ms = append(ms, member{key: key, val: start})
		c.space()
		if c.pos >= len(c.src) {
			return dst, false
		}
		if c.src[c.pos] == '}' {
			c.pos++
			break
		}
		if c.src[c.pos] != ',' {
			return dst, false
		}
		c.pos++
	}
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	end := c.pos
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, bytesString(m.key))
		dst = append(dst, ':')
		// Re-read the value, already validated, where it starts.
		c.pos = m.val
		var ok bool
		if dst, ok = c.value(dst, depth+1); !ok {
			return dst, false
		}
	}
	c.pos = end
	return append(dst, '}'), true
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
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
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

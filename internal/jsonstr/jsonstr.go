// Package jsonstr writes JSON strings byte for byte as encoding/json
// writes them, in place and without its buffers: the audit trail's records
// and the stdio guard's answers are built by hand, and a string in them
// may be as long as the input it came from.
package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// safe[html][c] reports whether the ASCII byte c is written as it is.
var safe = func() (t [2][utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[0][c] = c != '"' && c != '\\'
		t[1][c] = t[0][c] && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Append appends s to dst as a JSON string escaped exactly as
// encoding/json escapes it: '"' and '\\' with a backslash, the control
// characters \b, \f, \n, \r and \t by name and the others as \u00XX,
// U+2028 and U+2029 as \u2028 and \u2029, and each invalid UTF-8 byte as
// \ufffd; with html, '<', '>' and '&' too, as \u003c, \u003e and \u0026
// (json.Marshal's default; an encoder with SetEscapeHTML(false), as the
// go-sdk's, leaves them).
func Append(dst []byte, s string, html bool) []byte {
	ok := &safe[0]
	if html {
		ok = &safe[1]
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if ok[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Package foldkey compares JSON object keys as encoding/json matches them to
// struct fields: equal under Unicode simple case folding, so "seats",
// "SEATS" and "\u017feats" (with the long s) are one name. Two keys that
// fold alike in one object reach a Go handler as one field, the last one
// winning, while a validator that compares bytes sees two: a way to smuggle
// a value past validation. [AppendName] and [EqualName] compare argument
// names as encoding/json/v2's case-insensitive matching does, which also
// leaves out '_' and '-'.
package foldkey

import (
	"unicode"
	"unicode/utf8"
)

// Append appends to dst the folded form of key: every rune replaced by the
// smallest rune of its simple-folding orbit, and every byte of invalid UTF-8
// by U+FFFD (as encoding/json decodes it). Two keys fold alike
// (bytes.EqualFold) exactly when their folded forms are equal.
func Append(dst, key []byte) []byte {
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		dst = utf8.AppendRune(dst, Rune(r))
		i += n
	}
	return dst
}

// Rune returns the smallest rune of r's simple-folding orbit.
func Rune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// AppendName appends to dst the folded form of the argument name key as
// encoding/json/v2's case-insensitive matching (MatchCaseInsensitiveNames,
// a `case:ignore` tag) compares names (its foldName): [Append]'s, with
// every '_' and '-' left out, so that "amount", "A_MOUNT" and "-amount-"
// fold alike. Names that encoding/json (v1) matches fold alike too. Two
// names fold alike exactly when [EqualName] reports them equal.
func AppendName(dst, key []byte) []byte {
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			if c != '_' && c != '-' {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		dst = utf8.AppendRune(dst, Rune(r))
		i += n
	}
	return dst
}

// EqualName reports whether the argument names a and b fold alike under
// [AppendName], without building their folded forms.
func EqualName(a, b []byte) bool {
	for {
		a, b = trimDelimiters(a), trimDelimiters(b)
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		if ca, cb := a[0], b[0]; ca < utf8.RuneSelf && cb < utf8.RuneSelf {
			// Equal, or one letter in both cases.
			if l := ca | 0x20; ca != cb && (l != cb|0x20 || l < 'a' || l > 'z') {
				return false
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb && Rune(ra) != Rune(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
}

// trimDelimiters returns b without its leading '_' and '-'.
func trimDelimiters(b []byte) []byte {
	for len(b) > 0 && (b[0] == '_' || b[0] == '-') {
		b = b[1:]
	}
	return b
}

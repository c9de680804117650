package policy

import (
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// Names are matched by the rules under Unicode simple case folding as well
// as exactly (see [Policy.Resolve]): the MCP specification has tool names
// compared case-sensitively, but a downstream server that lower-cases or
// case-folds the names it is called with (a gateway cannot know) would
// otherwise run a protected tool under a spelling no rule names.

// appendFold appends the folded form of s to dst, as [foldkey.Append].
func appendFold(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		dst = utf8.AppendRune(dst, foldkey.Rune(r))
		i += n
	}
	return dst
}

// hasPrefixFold reports whether s begins with prefix under simple case
// folding.
func hasPrefixFold(s, prefix string) bool {
	for prefix != "" {
		if s == "" {
			return false
		}
		a, b := s[0], prefix[0]
		if a < utf8.RuneSelf && b < utf8.RuneSelf {
			if a != b && upper(a) != upper(b) {
				return false
			}
			s, prefix = s[1:], prefix[1:]
			continue
		}
		r1, n1 := utf8.DecodeRuneInString(s)
		r2, n2 := utf8.DecodeRuneInString(prefix)
		if r1 != r2 && foldkey.Rune(r1) != foldkey.Rune(r2) {
			return false
		}
		s, prefix = s[n1:], prefix[n2:]
	}
	return true
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

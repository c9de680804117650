package audit_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// TestReview21bKeyReadersProperty: over random objects whose keys mix raw
// invalid UTF-8, U+FFFD (raw and escaped), lone surrogates and letters of
// either case, one hash means one reading for every reader a downstream may
// be: Go's encoding/json (each bad byte U+FFFD), the same matching struct
// fields (case folded), a WHATWG decoder such as JavaScript's (a maximal
// invalid subpart is one U+FFFD, a lone surrogate kept), a decoder that
// writes a run of bad bytes as one U+FFFD (Go's strings.ToValidUTF8), and
// one that keeps the raw bytes. Each reads an object's keys its way, the
// last member of keys it reads alike winning.
func TestReview21bKeyReadersProperty(t *testing.T) {
	parts := []string{"a", "A", "\xe2", "\x82", "\xe2\x82", "\xff", "\xef\xbf\xbd", `\ufffd`, `\ud800`, "é", `\u00c9`}
	rng := rand.New(rand.NewPCG(21, 2))
	key := func() string {
		s := `"`
		for range 1 + rng.IntN(2) {
			s += parts[rng.IntN(len(parts))]
		}
		return s + `"`
	}
	seen := map[string]string{} // hash -> reading
	for range 60000 {
		n := 2 + rng.IntN(2)
		ms := make([]string, n)
		for i := range ms {
			ms[i] = key() + ":" + strconv.Itoa(rng.IntN(2))
		}
		doc := "{" + strings.Join(ms, ",") + "}"
		h := audit.ArgsSHA256(json.RawMessage(doc))
		r := readings(t, doc)
		if prev, ok := seen[h]; ok && prev != r {
			t.Fatalf("one hash for two readings of %q:\n%s\n%s", doc, prev, r)
		}
		seen[h] = r
	}
}

// readings returns what each reader reads of doc, an object of keys
// (strings) to digits.
func readings(t *testing.T, doc string) string {
	t.Helper()
	var keys []string
	var vals []byte
	for i := 1; i < len(doc); {
		j := i + 1
		for doc[j] != '"' {
			if doc[j] == '\\' {
				j++
			}
			j++
		}
		keys = append(keys, doc[i+1:j])
		vals = append(vals, doc[j+2])
		i = j + 4
	}
	var out []string
	for _, rd := range []struct {
		name string
		read func(string) string
	}{
		{"go", func(k string) string { return readKey(k, perByte) }},
		{"go-fold", func(k string) string {
			return string(foldkey.Append(nil, []byte(readKey(k, perByte))))
		}},
		{"whatwg", func(k string) string { return readKey(k, maximalSubpart) }},
		{"run", func(k string) string { return readKey(k, oneRun) }},
		{"raw", func(k string) string { return readKey(k, keepRaw) }},
	} {
		m := map[string]byte{}
		for i, k := range keys {
			m[rd.read(k)] = vals[i]
		}
		var kv []string
		for k, v := range m {
			kv = append(kv, strconv.Quote(k)+"="+string(v))
		}
		slices.Sort(kv)
		out = append(out, rd.name+":"+strings.Join(kv, ","))
	}
	return strings.Join(out, " ")
}

// The readers' ways of reading invalid UTF-8.
const (
	perByte        = iota // Go: each bad byte U+FFFD, a lone surrogate U+FFFD
	maximalSubpart        // WHATWG: each maximal invalid subpart U+FFFD
	oneRun                // a run of bad bytes one U+FFFD
	keepRaw               // the bytes kept
)

// readKey decodes the text of a JSON string as reader mode does: escapes
// decoded, a lone surrogate kept (as "S" and its hex) but by Go, which
// reads U+FFFD; raw invalid UTF-8 replaced, or kept as "B" and the byte.
func readKey(k string, mode int) string {
	var b strings.Builder
	for i := 0; i < len(k); {
		if k[i] == '\\' && k[i+1] == 'u' {
			r, _ := strconv.ParseUint(k[i+2:i+6], 16, 32)
			i += 6
			switch {
			case !utf16.IsSurrogate(rune(r)):
				b.WriteRune(rune(r))
			case mode == perByte:
				b.WriteRune(utf8.RuneError)
			default:
				b.WriteString("S" + strconv.FormatUint(r, 16))
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(k[i:])
		if r != utf8.RuneError || n != 1 {
			b.WriteRune(r)
			i += n
			continue
		}
		switch mode {
		case perByte:
			b.WriteRune(utf8.RuneError)
			i++
		case maximalSubpart:
			b.WriteRune(utf8.RuneError)
			i += subpart(k[i:])
		case oneRun:
			b.WriteRune(utf8.RuneError)
			for i < len(k) {
				if r, n := utf8.DecodeRuneInString(k[i:]); r != utf8.RuneError || n != 1 {
					break
				}
				i++
			}
		default:
			b.WriteString("B" + strconv.Itoa(int(k[i])))
			i++
		}
	}
	return b.String()
}

// subpart returns the length of the maximal subpart of an ill-formed
// sequence at the start of s (Unicode 15, section 3.9; the WHATWG
// decoder), which starts with a byte that begins no valid character.
func subpart(s string) int {
	c := s[0]
	lo, hi := byte(0x80), byte(0xbf)
	var want int
	switch {
	case c >= 0xc2 && c <= 0xdf:
		want = 2
	case c >= 0xe0 && c <= 0xef:
		want = 3
		if c == 0xe0 {
			lo = 0xa0
		} else if c == 0xed {
			hi = 0x9f
		}
	case c >= 0xf0 && c <= 0xf4:
		want = 4
		if c == 0xf0 {
			lo = 0x90
		} else if c == 0xf4 {
			hi = 0x8f
		}
	default:
		return 1
	}
	n := 1
	for n < want && n < len(s) && s[n] >= lo && s[n] <= hi {
		n++
		lo, hi = 0x80, 0xbf
	}
	return n
}

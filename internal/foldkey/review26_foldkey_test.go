package foldkey

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// v2Alike is encoding/json/v2's rule for two names its case-insensitive
// matching takes for one (foldName in Go 1.26's encoding/json/v2): equal
// under strings.EqualFold once every '_' and '-' is left out, an invalid
// UTF-8 byte reading as U+FFFD.
func v2Alike(a, b []byte) bool {
	drop := strings.NewReplacer("_", "", "-", "")
	// Each invalid byte reads as U+FFFD before the delimiters are left
	// out: "\xc3_\xa9" is not "é".
	fix := func(s []byte) string {
		var sb strings.Builder
		for len(s) > 0 {
			r, n := utf8.DecodeRune(s)
			sb.WriteRune(r)
			s = s[n:]
		}
		return drop.Replace(sb.String())
	}
	return strings.EqualFold(fix(a), fix(b))
}

// TestReview26Name: AppendName's folded forms are equal, and EqualName
// holds, exactly when encoding/json/v2 matches the names; names that
// encoding/json (v1) matches are alike too.
func TestReview26Name(t *testing.T) {
	names := []string{
		"", "_", "-", "__", "-_-", "amount", "AMOUNT", "a_mount", "-AMOUNT-", "amo-unt", "_a_m_o_u_n_t_",
		"amounts", "mount", "user_id", "userid", "USER-ID", "kind", "\u212aind", "k_ind", "\u212a-IND",
		"seats", "\u017feats", "s_e_a_t_s", "\u017f-EATS", "\xff", "\ufffd", "_\xff-", "\xfe", "\xff\xfe",
		"a\x00", "A\x00", "a_\x00", "ß", "ẞ", "ss", "Σ", "ς", "_σ", "@", "`", "[", "{", "\x7f", "^", "~",
		"a-", "a_", "A", "a", "0", "9_", "\xe2\x82", "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd",
		"\xc3_\xa9", "\xc3\xa9", "É", "\xc3-", "\xc3",
	}
	for _, a := range names {
		for _, b := range names {
			want := v2Alike([]byte(a), []byte(b))
			if strings.EqualFold(a, b) && !want {
				t.Fatalf("reference: v1 matches %q and %q, v2 not", a, b)
			}
			if got := EqualName([]byte(a), []byte(b)); got != want {
				t.Errorf("EqualName(%+q, %+q) = %v, want %v", a, b, got, want)
			}
			fa, fb := AppendName(nil, []byte(a)), AppendName(nil, []byte(b))
			if got := bytes.Equal(fa, fb); got != want {
				t.Errorf("AppendName: %+q and %+q folded alike = %v, want %v", a, b, got, want)
			}
		}
	}
}

// TestReview26NameASCII: every pair of ASCII bytes, alone and between
// letters, as encoding/json/v2 matches them.
func TestReview26NameASCII(t *testing.T) {
	for x := 0; x < utf8.RuneSelf; x++ {
		for y := 0; y < utf8.RuneSelf; y++ {
			for _, f := range []string{"%c", "a%cb"} {
				a := []byte(strings.Replace(f, "%c", string(rune(x)), 1))
				b := []byte(strings.Replace(f, "%c", string(rune(y)), 1))
				want := v2Alike(a, b)
				if got := EqualName(a, b); got != want {
					t.Errorf("EqualName(%q, %q) = %v, want %v", a, b, got, want)
				}
				if got := bytes.Equal(AppendName(nil, a), AppendName(nil, b)); got != want {
					t.Errorf("AppendName: %q and %q alike = %v, want %v", a, b, got, want)
				}
			}
		}
	}
}

// FuzzReview26Name: AppendName and EqualName agree with each other and
// with encoding/json/v2's rule.
func FuzzReview26Name(f *testing.F) {
	f.Add([]byte("amount"), []byte("A_MOUNT"))
	f.Add([]byte("\u212a-"), []byte("_k"))
	f.Add([]byte("\xff_"), []byte("\xc3"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := v2Alike(a, b)
		if got := EqualName(a, b); got != want {
			t.Fatalf("EqualName(%+q, %+q) = %v, want %v", a, b, got, want)
		}
		if got := bytes.Equal(AppendName(nil, a), AppendName(nil, b)); got != want {
			t.Fatalf("AppendName: %+q and %+q alike = %v, want %v", a, b, got, want)
		}
	})
}

package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// marshal is encoding/json's string encoding: json.Marshal with html,
// an Encoder with SetEscapeHTML(false) without.
func marshal(t *testing.T, s string, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatalf("encoding/json cannot encode %q: %v", s, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// review25Seeds are the strings whose escaping differs by a rule: every
// ASCII byte, the HTML three, U+2028 and U+2029 and their neighbours,
// invalid UTF-8 of every kind (truncated, overlong, surrogate halves,
// beyond U+10FFFF, stray continuation bytes), U+FFFD itself and DEL.
var review25Seeds = []string{
	"", "plain", "\"\\/", "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>",
	"\u2027\u2028\u2029\u202a", "\xe2\x80\xa8", "\xe2\x80", "\xe2\x80\xa8\xe2",
	"\xff", "\xfe\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf",
	"\xf4\x90\x80\x80", "\xf0\x9f\x98", "\x80\x80", "\ufffd", "😀", "a\x00b",
	"\xef\xbb\xbf{}", "\u00e9\u0301", strings.Repeat("\xff<", 3),
}

// TestReview25AppendIsEncodingJSONs: Append writes every byte as
// encoding/json does, with and without HTML escaping, after what dst
// already holds; and for every ASCII byte and every 2-byte string of bytes
// 0x7e..0xff (all invalid UTF-8 pairs and all 2-byte runes).
func TestReview25AppendIsEncodingJSONs(t *testing.T) {
	var in []string
	in = append(in, review25Seeds...)
	for c := range 0x80 {
		in = append(in, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	for a := 0x7e; a <= 0xff; a++ {
		for b := 0x7e; b <= 0xff; b++ {
			in = append(in, string([]byte{byte(a), byte(b)}))
		}
	}
	for _, s := range in {
		for _, html := range []bool{false, true} {
			got := Append([]byte("prefix"), s, html)
			want := append([]byte("prefix"), marshal(t, s, html)...)
			if !bytes.Equal(got, want) {
				t.Fatalf("Append(%q, html %v) = %s; encoding/json writes %s", s, html, got, want)
			}
		}
	}
}

// FuzzReview25Append compares Append with encoding/json on any string.
func FuzzReview25Append(f *testing.F) {
	for i, s := range review25Seeds {
		f.Add(s, i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		got := Append(nil, s, html)
		if want := marshal(t, s, html); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q, html %v) = %s; encoding/json writes %s", s, html, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("Append(%q) = %s, which encoding/json cannot read: %v", s, got, err)
		}
	})
}

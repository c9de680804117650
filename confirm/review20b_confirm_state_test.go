package confirm

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCheckRefusesOtherEncodings: the payload and the signature are read
// in the one alphabet Issue writes (unpadded base64url), each part on its
// own: padding on either part, a padded payload with its dot, the standard
// alphabet in either part, a second dot, percent-encoding, and the state
// with its letters' case swapped are all refused.
func TestCheckRefusesOtherEncodings(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	st := issue(t, s, t0, alice)
	p64, m64, _ := strings.Cut(st, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(p64)
	sig, _ := base64.RawURLEncoding.DecodeString(m64)
	swap := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case 'a' <= r && r <= 'z':
				return r - 32
			case 'A' <= r && r <= 'Z':
				return r + 32
			}
			return r
		}, s)
	}
	for name, v := range map[string]string{
		"padded_payload":   base64.URLEncoding.EncodeToString(raw) + "." + m64,
		"padded_both":      base64.URLEncoding.EncodeToString(raw) + "." + base64.URLEncoding.EncodeToString(sig),
		"std_payload":      base64.RawStdEncoding.EncodeToString(raw) + "." + m64,
		"std_signature":    p64 + "." + base64.StdEncoding.EncodeToString(sig),
		"two_dots":         p64 + ".." + m64,
		"trailing_dot":     st + ".",
		"leading_dot":      "." + st,
		"percent_dot":      p64 + "%2E" + m64,
		"swapped_case":     swap(st),
		"signature_only":   "." + m64,
		"payload_only":     p64 + ".",
		"sig_repeated":     p64 + "." + m64 + m64,
		"payload_repeated": p64 + p64 + "." + m64,
		"over_4KiB":        st + strings.Repeat("A", maxStateLen),
	} {
		t.Run(name, func(t *testing.T) {
			if v == st {
				t.Skip("no letter to change in this state")
			}
			if _, err := s.Check(t0, v, alice); err == nil {
				t.Errorf("Check(%.60q) verifies", v)
			}
		})
	}
}

// TestCheckRefusesSignedOddPayloads: a payload that carries a valid
// signature (a key holder's bug, or a future format) but deviates from the
// format in any field is malformed, never read past its end, never
// accepted.
func TestCheckRefusesSignedOddPayloads(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	build := func(ver byte, exp uint64, kid string, fields []string, tail []byte) string {
		p := []byte{ver}
		p = binary.BigEndian.AppendUint64(p, exp)
		p = append(p, make([]byte, nonceLen)...)
		p = append(p, byte(len(kid)))
		p = append(p, kid...)
		for _, f := range fields {
			p = binary.AppendUvarint(p, uint64(len(f)))
			p = append(p, f...)
		}
		p = append(p, tail...)
		enc := base64.RawURLEncoding
		return enc.EncodeToString(p) + "." + enc.EncodeToString(mac(secretA, p))
	}
	exp := uint64(t0.Add(time.Minute).Unix())
	ok := []string{alice.Subject, alice.Tool, alice.ArgsSHA256}
	if _, err := s.Check(t0, build(version, exp, "k1", ok, nil), alice); err != nil {
		t.Fatalf("the well-formed payload: %v", err)
	}
	hugeLen := binary.AppendUvarint(nil, 1<<63)
	for name, v := range map[string]string{
		"version_0":       build(0, exp, "k1", ok, nil),
		"version_2":       build(2, exp, "k1", ok, nil),
		"expiry_huge":     build(version, 1<<63, "k1", ok, nil),
		"trailing_byte":   build(version, exp, "k1", ok, []byte{0}),
		"fourth_field":    build(version, exp, "k1", append(ok[:3:3], "x"), nil),
		"two_fields":      build(version, exp, "k1", ok[:2], nil),
		"empty_subject":   build(version, exp, "k1", []string{"", alice.Tool, alice.ArgsSHA256}, nil),
		"kid_empty":       build(version, exp, "", ok, nil),
		"huge_length":     build(version, exp, "k1", ok[:2], hugeLen),
		"subject_shifted": build(version, exp, "k1", []string{alice.Subject + alice.Tool[:1], alice.Tool[1:], alice.ArgsSHA256}, nil),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Check(t0, v, alice)
			if err == nil {
				t.Fatalf("Check verifies")
			}
			if name != "subject_shifted" && !errors.Is(err, ErrMalformed) {
				t.Errorf("Check = %v, want ErrMalformed", err)
			}
		})
	}
}

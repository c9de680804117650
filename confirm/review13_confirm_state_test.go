package confirm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCheckRefusesEveryOtherSpelling: a state verifies only as Issue wrote
// it. Every other spelling is ErrMalformed ("not one this package issues"),
// including the ones a base64 decoder lets through: line breaks, which Go's
// decoders skip even in strict mode, so that one state had any number of
// spellings. And no single-byte change anywhere in a state verifies.
func TestCheckRefusesEveryOtherSpelling(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	// A state with a character of the URL alphabet to swap for the
	// standard one: about 1 in 100 states has none, so issue another.
	var st, std string
	for range 100 {
		st = issue(t, s, t0, alice)
		if std = strings.NewReplacer("-", "+", "_", "/").Replace(st); std != st {
			break
		}
	}
	if std == st {
		t.Fatalf("100 states without a URL-alphabet character, the last %q", st)
	}
	payload, sig, _ := strings.Cut(st, ".")
	for name, v := range map[string]string{
		"lf_inside":        payload[:7] + "\n" + payload[7:] + "." + sig,
		"cr_inside":        payload + "." + sig[:5] + "\r" + sig[5:],
		"crlf_trailing":    st + "\r\n",
		"lf_leading":       "\n" + st,
		"lf_around_dot":    payload + "\n.\n" + sig,
		"space_inside":     payload[:7] + " " + payload[7:] + "." + sig,
		"tab_trailing":     st + "\t",
		"standard_base64":  std,
		"padded_signature": st + "=",
		"nul_trailing":     st + "\x00",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Check(t0, v, alice); !errors.Is(err, ErrMalformed) {
				t.Errorf("Check(%q) = %v, want %v", v, err, ErrMalformed)
			}
		})
	}
	for i := range len(st) {
		for _, b := range []byte{st[i] ^ 1, st[i] ^ 0x20, 'A', '_'} {
			if b == st[i] {
				continue
			}
			v := st[:i] + string(b) + st[i+1:]
			if _, err := s.Check(t0, v, alice); err == nil {
				t.Errorf("state changed at byte %d (%q to %q) verifies", i, st[i], b)
			}
		}
	}
	// None of that used the state up.
	if err := s.Verify(context.Background(), t0, st, alice); err != nil {
		t.Fatalf("Verify of the state as issued = %v", err)
	}
}
